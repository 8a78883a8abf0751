//! The MIG part of the inventory: the slices as devices with their
//! attributes, capacities and counters ([`devices`]), the layout planned on
//! each GPU in layout mode ([`offer`]), and the order partitionable mode
//! publishes them in, which is where the scheduler places a slice
//! ([`publish_order`]). Pure: the scan reads the backend and hands these
//! plain data.

pub mod devices;
pub mod offer;
pub mod publish_order;
