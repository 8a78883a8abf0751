//! Partitionable publication as the scheduler reads it: the device list a
//! node publishes, split into ResourceSlices, and the upstream allocator's
//! choice for one request (the first device, slice after slice, whose
//! selector matches and whose counters still fit).
//!
//! Upstream facts modelled (k8s.io/dynamic-resource-allocation/structured,
//! incubating allocator and pools): devices are tried pool by pool, slice by
//! slice, device by device in the order of `Spec.Devices`; the slices of a
//! pool come in the order the informer's store lists them, a Go map
//! iteration, so no order across slices holds from one scheduling cycle to
//! the next. Here every request sees the slices in a fresh seeded random
//! order. A device fits when its counters fit what the claims allocated so
//! far left of its GPU's counter set.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::ops::Range;

use gpuslice::gpu::Placement;
use gpuslice::inventory::{Inventory, gpu_counters, slice_consumption};
use gpuslice::mig::{MigGeometry, Occupancy, Score, scored_candidates};

use super::Rng;

/// Most devices in one slice when devices consume counters (the shim's
/// `MAX_DEVICES_WITH_COUNTERS_OR_TAINTS`, the resource.k8s.io/v1 limit).
pub(super) const DEVICES_PER_SLICE: usize = 64;

/// One published device.
#[derive(Debug, Clone)]
pub(super) struct Device {
    pub(super) gpu: usize,
    /// Profile position in the geometry; `None` for a whole GPU.
    pub(super) profile: Option<usize>,
    pub(super) placement: Placement,
    /// (counter index, amount) drawn from its GPU's set.
    uses: Vec<(usize, i64)>,
}

/// How the shim cuts the device list into ResourceSlices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Packing {
    /// Consecutive runs of 64 (what `build_pool` does today).
    Chunks,
    /// Consecutive runs of 64, never splitting the devices of one profile
    /// (whole GPUs count as one profile) when they fit in one slice.
    ByProfile,
}

/// The device list and its slices.
#[derive(Debug, Clone)]
pub(super) struct Publication {
    pub(super) devices: Vec<Device>,
    pub(super) slices: Vec<Range<usize>>,
}

impl Publication {
    pub(super) fn new(devices: Vec<Device>, packing: Packing) -> Self {
        let slices = cut(&devices, packing);
        Self { devices, slices }
    }
}

fn cut(devices: &[Device], packing: Packing) -> Vec<Range<usize>> {
    let mut slices: Vec<Range<usize>> = Vec::new();
    let mut start = 0;
    while start < devices.len() {
        let mut end = (start + DEVICES_PER_SLICE).min(devices.len());
        if packing == Packing::ByProfile && end < devices.len() {
            // Back off to the start of the run the cut would split, unless
            // that run began this slice (it is longer than a slice).
            let split = devices[end].profile;
            let mut back = end;
            while back > start && devices[back - 1].profile == split {
                back -= 1;
            }
            if back > start {
                end = back;
            }
        }
        slices.push(start..end);
        start = end;
    }
    slices
}

/// The counters of one GPU, by index, and the index of each name.
pub(super) struct CounterNames(BTreeMap<String, usize>);

impl CounterNames {
    fn of(counters: &BTreeMap<String, i64>) -> Self {
        Self(counters.keys().cloned().zip(0..).collect())
    }

    fn uses(&self, drawn: &BTreeMap<String, i64>) -> Vec<(usize, i64)> {
        drawn
            .iter()
            .filter_map(|(name, amount)| self.0.get(name).map(|&i| (i, *amount)))
            .collect()
    }
}

/// The devices of `inventory` in the order gpusliced publishes them (whole
/// GPUs, then the MIG slices in inventory order), and each GPU's counter set.
pub(super) fn from_inventory(
    inventory: &Inventory,
    g: &MigGeometry,
) -> (Vec<Device>, Vec<Vec<i64>>) {
    let mut devices = Vec::new();
    let mut capacity = Vec::new();
    let mut names = Vec::new();
    for (gpu, device) in inventory.gpus.iter().enumerate() {
        let Some(mig) = &device.mig else {
            panic!("{}: not in MIG mode", device.name)
        };
        let counters = gpu_counters(mig);
        let index = CounterNames::of(&counters);
        devices.push(Device {
            gpu,
            profile: None,
            placement: Placement { start: 0, size: 0 },
            uses: index.uses(&counters),
        });
        capacity.push(counters.values().copied().collect());
        names.push(index);
    }
    for slice in &inventory.mig {
        let position = g.position_of(&slice.profile.name);
        let Some(mig) = &inventory.gpus[slice.parent].mig else {
            panic!("{}: a slice of a GPU not in MIG mode", slice.name)
        };
        devices.push(Device {
            gpu: slice.parent,
            profile: Some(position),
            placement: slice.placement,
            uses: names[slice.parent].uses(&slice_consumption(
                mig,
                &slice.profile,
                slice.placement,
            )),
        });
    }
    (devices, capacity)
}

/// Position of a profile in the geometry (panics on a name the model lacks:
/// the bench's own tables are wrong then).
pub(super) trait PositionOf {
    fn position_of(&self, name: &str) -> usize;
}

impl PositionOf for MigGeometry {
    fn position_of(&self, name: &str) -> usize {
        self.profiles()
            .iter()
            .position(|p| p.name == name)
            .unwrap_or_else(|| panic!("no profile {name}"))
    }
}

/// Whether `device` fits what is left of its GPU's counters.
pub(super) fn fits(device: &Device, left: &[Vec<i64>]) -> bool {
    device
        .uses
        .iter()
        .all(|&(i, amount)| left[device.gpu][i] >= amount)
}

pub(super) fn draw(device: &Device, left: &mut [Vec<i64>], sign: i64) {
    for &(i, amount) in &device.uses {
        left[device.gpu][i] -= sign * amount;
    }
}

/// The allocator's pick for one request of profile `position`: slices in a
/// random order, devices in published order, the first that fits.
pub(super) fn pick(
    publication: &Publication,
    left: &[Vec<i64>],
    position: usize,
    rng: &mut Rng,
) -> Option<usize> {
    let mut order: Vec<usize> = (0..publication.slices.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.index(i + 1));
    }
    order.into_iter().find_map(|s| {
        publication.slices[s].clone().find(|&d| {
            let device = &publication.devices[d];
            device.profile == Some(position) && fits(device, left)
        })
    })
}

/// Today's order, re-scored on the GPUs as they are now (as if republished
/// after every change): whole GPUs, then GPU after GPU and profile after
/// profile, each profile's legal placements by the planner's score (best
/// first, ties to the higher start), the taken ones after, ascending.
pub(super) fn rescored(base: &[Device], layouts: &[Occupancy<'_>], g: &MigGeometry) -> Vec<Device> {
    type Key = (bool, usize, usize, bool, Reverse<Option<(Score, u32)>>, u32);
    let key = |d: &Device| -> Key {
        let Some(position) = d.profile else {
            return (false, d.gpu, 0, false, Reverse(None), 0);
        };
        let name = &g.profiles()[position].name;
        let scored = scored_candidates(&layouts[d.gpu], name).unwrap_or_default();
        let start = d.placement.start;
        match scored.into_iter().find(|(p, _)| *p == d.placement) {
            Some((_, score)) => (
                true,
                d.gpu,
                position,
                false,
                Reverse(Some((score, start))),
                0,
            ),
            None => (true, d.gpu, position, true, Reverse(None), start),
        }
    };
    let mut devices = base.to_vec();
    devices.sort_by_cached_key(key);
    devices
}
