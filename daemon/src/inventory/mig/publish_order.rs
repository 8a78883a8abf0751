//! The order partitionable mode publishes MIG slices in, which is the order
//! the scheduler tries them in: in that mode the scheduler, not gpusliced,
//! places a slice.
//!
//! The allocator (k8s.io/dynamic-resource-allocation/structured) gives each
//! request the first device whose selector matches and whose counters still
//! fit, trying the pool's ResourceSlices in the order its informer lists them
//! (a map's: no order holds between scheduling cycles) and each slice's
//! devices in published order. So the order is built to hold whatever the
//! slice order:
//! * profile after profile (by name: one name can be two profiles on a node
//!   of mixed models, 1g.10gb of an A100-40GB and of an H100, and a request
//!   selects by name), so that the shim can keep one profile's devices in
//!   one ResourceSlice (8 GPUs give at most 56 of a profile, the limit is
//!   64); when it does, a request meets the devices it can take in exactly
//!   this order, whatever the slice order;
//! * within a profile, GPU after GPU (by inventory position): first fit fills
//!   a GPU before it opens the next, which keeps whole GPUs free for 7g;
//! * within a GPU, higher starts first: small slices fill the top half
//!   downward and keep slices 0..4, the only home of a 4g and one of two of a
//!   3g, whole for longest (what `mig::choose_placement` picks on an empty
//!   GPU, too).
//!
//! `cargo bench -p gpuslice --bench mig` measures it against other orders,
//! the layout-mode planner and the offline optimum (bench/README.md).
//!
//! Pure and deterministic: the order depends on the devices offered only,
//! never on what is allocated (the scheduler allocates ahead of what the node
//! knows, so an order re-made from the node's state would lag behind it).

use std::cmp::Reverse;

use super::devices::MigDevice;

/// Sorts the slices offered in partitionable mode into publication order.
pub fn publication_order(slices: &mut [MigDevice]) {
    slices.sort_by(|a, b| key(a).cmp(&key(b)));
}

fn key(slice: &MigDevice) -> (&str, usize, Reverse<u32>) {
    (
        slice.profile.name.as_str(),
        slice.parent,
        Reverse(slice.placement.start),
    )
}

#[cfg(test)]
#[path = "publish_order_tests.rs"]
mod tests;
