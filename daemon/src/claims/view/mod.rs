//! One consistent view of the node for the read answers (GetInventory,
//! GetHealth, GetMigLayout): every device of one inventory, each with its
//! own holders, availability, memory left and fault, and the generation it
//! is at least as new as. `api/` only maps it to proto.
//!
//! The generation is read first, then the inventory (one `Arc`), then the
//! faults, the memory promised and the claim table, one lock at a time and
//! never nested. Every change bumps the generation after it is made, so a
//! change that lands while the view is read is either in it or bumps the
//! generation past the one the view carries: a WatchInventory reader then
//! asks again. Holdings are matched to devices by GPU UUID and placement,
//! never by position in another read of the inventory.
//!
//! The engine's other reads sit beside it, one file for what each reads:
//! `generation` (the inventory and its generation), `table` (the claims),
//! `status` (the problems, uptime and settings), `hardware` (the MIG
//! instances of every GPU for GetMigLayout, and the narrow reads of the
//! sampler and the health watcher), `sharing` what an operator sees of MPS
//! and time-slicing, `usage` what the metrics count, `claim_health` what is
//! reported of device health.

pub(super) mod claim_health;
mod generation;
mod hardware;
pub(super) mod reads;
pub(super) mod sharing;
mod status;
mod table;
pub(super) mod usage;

use std::sync::Arc;

use super::table::{ClaimTable, Share};
use super::{Engine, lock};
use crate::features::TimeSliceSettings;
use crate::health::DeviceFault;
use crate::inventory::{DeviceRef, GpuDevice, Inventory, MigDevice};

pub use crate::claims::access::mig::{GpuMigView, MigHolder, MigInstanceView};
use claim_health::unreadable_gpu_of;

/// The node at one moment.
#[derive(Debug, Clone)]
pub struct NodeView {
    /// The inventory generation read before anything else: the view is at
    /// least as new as it.
    pub generation: u64,
    /// The inventory every device below is in.
    pub inventory: Arc<Inventory>,
    /// Whole GPUs in inventory order, then slices.
    pub devices: Vec<DeviceState>,
    /// The GPUs the scan could not read, as in `inventory.unreadable`.
    pub unreadable: Vec<UnreadableState>,
}

/// Where a device is in the view's inventory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceAt {
    /// `inventory.gpus[i]`.
    Gpu(usize),
    /// `inventory.mig[i]` (its parent is in `inventory.gpus`).
    Slice(usize),
}

/// One device of the view, with who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceState {
    /// Inventory name.
    pub name: String,
    /// Where it is in the inventory.
    pub at: DeviceAt,
    /// Claims holding it (for a whole GPU: every claim holding any part).
    pub holders: Vec<String>,
    /// Whether a new claim could take it now: offered, healthy, and free
    /// (a shared GPU can take another claim that shares it the same way).
    pub available: bool,
    /// Memory not yet promised: a whole GPU's memory less the memory shares
    /// of the claims sharing it, none when held whole or sliced; a slice's
    /// memory while free.
    pub memory_available: u64,
    /// Why it is unhealthy, if it is.
    pub fault: Option<DeviceFault>,
    /// What nvidia-smi showed of a whole GPU's time-slice settings
    /// (untried for a slice).
    pub timeslice_settings: TimeSliceSettings,
}

/// A GPU the scan could not read, with the claims recorded on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableState {
    /// `inventory.unreadable[i]`.
    pub at: usize,
    /// Claims whose records name a device on it.
    pub holders: Vec<String>,
}

impl NodeView {
    /// Each device with its place in the inventory.
    pub fn each_device(&self) -> impl Iterator<Item = (DeviceRef<'_>, &DeviceState)> {
        self.devices
            .iter()
            .filter_map(|state| Some((device_at(&self.inventory, state.at)?, state)))
    }
}

fn device_at(inventory: &Inventory, at: DeviceAt) -> Option<DeviceRef<'_>> {
    match at {
        DeviceAt::Gpu(i) => inventory.gpus.get(i).map(DeviceRef::Gpu),
        DeviceAt::Slice(i) => {
            let slice = inventory.mig.get(i)?;
            Some(DeviceRef::Mig(slice, inventory.gpus.get(slice.parent)?))
        }
    }
}

/// What the claim table says of one device.
struct Use {
    holders: Vec<String>,
    free: bool,
    memory_available: u64,
}

/// A whole GPU: held by every claim holding any part of it; free while only
/// shared (and offered whole); its memory less what is promised while shared.
fn whole_use(table: &ClaimTable, gpu: &GpuDevice, promised: u64, offered: bool) -> Use {
    let holdings = table.holdings(&gpu.info.uuid);
    let mut holders: Vec<String> = holdings.iter().map(|h| h.uid.clone()).collect();
    holders.dedup();
    let shareable = (holdings.iter()).all(|h| matches!(h.share, Share::Shared(_)));
    Use {
        holders,
        free: shareable && offered,
        memory_available: if shareable {
            gpu.info.memory_bytes.saturating_sub(promised)
        } else {
            0
        },
    }
}

/// A slice: held by the claims holding exactly it; free while nothing
/// overlapping it is held.
fn slice_use(table: &ClaimTable, slice: &MigDevice, gpu: &GpuDevice) -> Use {
    let share = Share::Slice(slice.placement);
    let blockers = table.blockers(&gpu.info.uuid, share);
    let free = blockers.is_empty();
    Use {
        holders: (blockers.iter())
            .filter(|h| h.share == share)
            .map(|h| h.uid.clone())
            .collect(),
        free,
        memory_available: if free { slice.profile.memory_bytes } else { 0 },
    }
}

/// The claims recorded on each GPU the scan could not read.
fn unreadable_holders(table: &ClaimTable, inventory: &Inventory) -> Vec<UnreadableState> {
    (inventory.unreadable.iter().enumerate())
        .map(|(at, gpu)| UnreadableState {
            at,
            holders: (table.iter())
                .filter(|r| {
                    (r.devices.iter()).any(|d| {
                        unreadable_gpu_of(inventory, d).is_some_and(|u| u.index == gpu.index)
                    })
                })
                .map(|r| r.uid.clone())
                .collect(),
        })
        .collect()
}

impl Engine {
    /// The node now, for the read answers (see the module doc).
    pub fn view(&self) -> NodeView {
        let generation = self.generation();
        let inventory = self.inventory();
        crate::crash::hook("view.between_reads");
        let places: Vec<(DeviceAt, DeviceRef<'_>)> = (0..inventory.gpus.len())
            .map(DeviceAt::Gpu)
            .chain((0..inventory.mig.len()).map(DeviceAt::Slice))
            .filter_map(|at| Some((at, device_at(&inventory, at)?)))
            .collect();
        let faults: Vec<Option<DeviceFault>> = (places.iter())
            .map(|(_, device)| self.device_fault(device))
            .collect();
        let promised: Vec<(u64, TimeSliceSettings)> = {
            let books = lock(&self.kinds.shared.books);
            (places.iter())
                .map(|(_, device)| match device {
                    DeviceRef::Gpu(gpu) => (
                        books.promised_on(&gpu.info.uuid),
                        (books.timeslice_settings.get(&gpu.info.uuid))
                            .cloned()
                            .unwrap_or_default(),
                    ),
                    DeviceRef::Mig(..) => (0, TimeSliceSettings::Untried),
                })
                .collect()
        };
        let table = lock(&self.table);
        let devices = (places.iter().zip(faults).zip(promised))
            .map(|(((at, device), fault), (promised, timeslice_settings))| {
                let (name, used) = match device {
                    DeviceRef::Gpu(gpu) => {
                        let offered = inventory.offers_whole(gpu);
                        (&gpu.name, whole_use(&table, gpu, promised, offered))
                    }
                    DeviceRef::Mig(slice, gpu) => (&slice.name, slice_use(&table, slice, gpu)),
                };
                DeviceState {
                    name: name.clone(),
                    at: *at,
                    holders: used.holders,
                    available: used.free && fault.is_none(),
                    memory_available: used.memory_available,
                    fault,
                    timeslice_settings,
                }
            })
            .collect();
        let unreadable = unreadable_holders(&table, &inventory);
        drop(table);
        NodeView {
            generation,
            inventory,
            devices,
            unreadable,
        }
    }
}

#[cfg(test)]
mod tests;
