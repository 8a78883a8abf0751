//! gpusliced's inventory as the node's ResourceSlice pool, split at the
//! resource.k8s.io/v1 limits. Pure and exhaustively tested.
//!
//! Layout: the pool is named after the node; shared counter sets (used only
//! in partitionable-devices mode) go in slices of their own, at most
//! [`MAX_COUNTER_SETS_PER_SLICE`] each (1.35+ forbids mixing them with
//! devices); devices go in slices of at most [`MAX_DEVICES_PER_SLICE`], or
//! [`MAX_DEVICES_WITH_COUNTERS_OR_TAINTS`] when any device uses counters or
//! taints, in gpusliced's order, never splitting the devices of one MIG
//! profile across slices where they fit in one (`runs`). An empty inventory
//! still publishes one empty slice ("an empty pool" is not "no pool"). Every slice carries `nodeName`, the driver and
//! the pool with its generation and the total slice count. A whole GPU that
//! gpusliced manages in MIG mode is published only beside its slices'
//! counters (partitionable mode): see [`published`].

mod device;
pub mod quantity;
mod runs;

use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::api::resource::v1::{CounterSet, Device, ResourcePool, ResourceSliceSpec};

pub use device::{
    MAX_ATTRIBUTE_VALUE, MAX_ATTRIBUTES_AND_CAPACITIES, MAX_CONSUMES_COUNTERS, MAX_COUNTERS,
    MEMORY, MIG_MANAGED, UNHEALTHY_TAINT, published,
};

/// Most devices in one slice.
pub const MAX_DEVICES_PER_SLICE: usize = 128;
/// Most devices in one slice when any device uses counters or taints (1.35+).
pub const MAX_DEVICES_WITH_COUNTERS_OR_TAINTS: usize = 64;
/// Most shared counter sets in one slice (1.35+).
pub const MAX_COUNTER_SETS_PER_SLICE: usize = 8;

/// Whose pool this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolTarget<'a> {
    /// The DRA driver name.
    pub driver: &'a str,
    /// The Node's name, also the pool's name.
    pub node_name: &'a str,
    /// Whether unhealthy devices get a NoSchedule taint.
    pub taint_unhealthy: bool,
    /// Whether whole GPUs are shareable by memory (DRAConsumableCapacity).
    pub consumable_capacity: bool,
}

/// A device or counter set left out of the pool, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SliceError {
    /// Device names must be DNS labels.
    #[error(
        "device {device:?} left out: its name is not a DNS label (lowercase [a-z0-9-], at most 63)"
    )]
    DeviceName {
        /// The name.
        device: String,
    },
    /// Over the per-device limit.
    #[error(
        "device {device} left out: {count} attributes and capacities, the API allows {MAX_ATTRIBUTES_AND_CAPACITIES}"
    )]
    TooManyAttributes {
        /// The device.
        device: String,
        /// How many it has.
        count: usize,
    },
    /// Attribute and capacity keys must be qualified names.
    #[error(
        "device {device} left out: key {key:?} is not a qualified name (C identifier of at most 32, optional domain/ prefix)"
    )]
    AttributeKey {
        /// The device.
        device: String,
        /// The key.
        key: String,
    },
    /// A value the API refuses.
    #[error("device {device} left out: attribute {key} {problem}")]
    AttributeValue {
        /// The device.
        device: String,
        /// The key.
        key: String,
        /// What is wrong.
        problem: String,
    },
    /// Over the per-device consumption limit.
    #[error(
        "device {device} left out: it draws from {count} counter sets, the API allows {MAX_CONSUMES_COUNTERS}"
    )]
    TooManyConsumptions {
        /// The device.
        device: String,
        /// How many.
        count: usize,
    },
    /// Counter set names must be DNS labels.
    #[error("counter set {set:?} is not a DNS label")]
    CounterSetName {
        /// The name.
        set: String,
    },
    /// Counter names must be DNS labels.
    #[error("counter set {set}: counter {counter:?} is not a DNS label")]
    CounterName {
        /// The set.
        set: String,
        /// The counter.
        counter: String,
    },
    /// Over the per-set limit.
    #[error("counter set {set}: {count} counters, the API allows {MAX_COUNTERS}")]
    TooManyCounters {
        /// The set.
        set: String,
        /// How many.
        count: usize,
    },
}

/// The pool's slice specs, and what was left out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BuiltPool {
    /// One spec per slice: counter-set slices first, then device slices.
    pub slices: Vec<ResourceSliceSpec>,
    /// Devices and counter sets left out (log them; the rest is published).
    pub skipped: Vec<SliceError>,
}

/// Builds the pool for `inventory` at `generation`.
pub fn build_pool(
    inventory: &pb::GetInventoryResponse,
    target: &PoolTarget<'_>,
    generation: i64,
) -> BuiltPool {
    let mut skipped = Vec::new();
    let counter_sets: Vec<CounterSet> = inventory
        .counter_sets
        .iter()
        .filter_map(|set| match device::counters(&set.name, &set.counters) {
            Ok(counters) => Some(CounterSet {
                name: set.name.clone(),
                counters,
            }),
            Err(err) => {
                skipped.push(err);
                None
            }
        })
        .collect();
    let devices: Vec<Device> = inventory
        .devices
        .iter()
        .filter(|d| device::published(d))
        .filter_map(|d| {
            device::convert(d, target)
                .map_err(|err| skipped.push(err))
                .ok()
        })
        .collect();
    let per_slice = per_slice(&devices);
    let slices: Vec<ResourceSliceSpec> = counter_sets
        .chunks(MAX_COUNTER_SETS_PER_SLICE)
        .map(|sets| spec(target, None, Some(sets.to_vec())))
        .chain(
            runs::chunks_keeping_runs(devices, per_slice, profile)
                .into_iter()
                .map(|chunk| spec(target, Some(chunk), None)),
        )
        .collect();
    BuiltPool {
        slices: numbered(target, slices, generation),
        skipped,
    }
}

/// A pool of `devices` as they are (no counter sets), in their order, in
/// slices of at most [`MAX_DEVICES_PER_SLICE`] ([`MAX_DEVICES_WITH_COUNTERS_OR_TAINTS`]
/// when any device uses counters or taints), at `generation`: what a driver
/// with a fixed list of devices publishes (the IMEX channels of
/// `compute-domain.nvidia.com`). No devices: one empty slice.
pub fn device_pool(
    target: &PoolTarget<'_>,
    devices: Vec<Device>,
    generation: i64,
) -> Vec<ResourceSliceSpec> {
    let per_slice = per_slice(&devices);
    let mut devices = devices.into_iter().peekable();
    let mut slices = Vec::new();
    while devices.peek().is_some() {
        let chunk: Vec<Device> = devices.by_ref().take(per_slice).collect();
        slices.push(spec(target, Some(chunk), None));
    }
    numbered(target, slices, generation)
}

/// The most devices one slice of `devices` may hold.
fn per_slice(devices: &[Device]) -> usize {
    if devices
        .iter()
        .any(|d| d.consumes_counters.is_some() || d.taints.is_some())
    {
        MAX_DEVICES_WITH_COUNTERS_OR_TAINTS
    } else {
        MAX_DEVICES_PER_SLICE
    }
}

/// `slices` (one empty slice for none) with the pool's `generation` and
/// their count in each, as Kubernetes requires of every slice of a pool.
fn numbered(
    target: &PoolTarget<'_>,
    mut slices: Vec<ResourceSliceSpec>,
    generation: i64,
) -> Vec<ResourceSliceSpec> {
    if slices.is_empty() {
        slices.push(spec(target, Some(Vec::new()), None));
    }
    let count = i64::try_from(slices.len()).unwrap_or(i64::MAX);
    for slice in &mut slices {
        slice.pool.generation = generation;
        slice.pool.resource_slice_count = count;
    }
    slices
}

/// A device's MIG profile (`None` for a whole GPU): a run of one profile is
/// kept in one slice, so the order gpusliced publishes reaches the scheduler.
fn profile(device: &Device) -> Option<String> {
    device
        .attributes
        .as_ref()
        .and_then(|a| a.get("profile"))
        .and_then(|v| v.string.clone())
}

fn spec(
    target: &PoolTarget<'_>,
    devices: Option<Vec<Device>>,
    shared_counters: Option<Vec<CounterSet>>,
) -> ResourceSliceSpec {
    ResourceSliceSpec {
        driver: target.driver.to_owned(),
        node_name: Some(target.node_name.to_owned()),
        pool: ResourcePool {
            name: target.node_name.to_owned(),
            generation: 0,
            resource_slice_count: 0,
        },
        devices,
        shared_counters,
        ..ResourceSliceSpec::default()
    }
}

#[cfg(test)]
mod tests;
