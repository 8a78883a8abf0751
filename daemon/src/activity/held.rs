//! What each prepared claim holds, in the terms the attribution matches
//! processes on: the GPU index and, for a MIG slice, the GPU instance id;
//! how the device is shared and the claim's memory share of it.
//!
//! Pure: built from the engine's records and inventory. A device whose GPU
//! is not in the inventory (gone since the prepare) keeps no GPU index and
//! so matches no process.
//!
//! The share (over-share rule, shared devices only): the MPS memory share,
//! else the MPS daemon's pinned limit for the device, else the memory the
//! scheduler counted (`consumed_memory`), else the device's memory split
//! evenly between the claims holding it.

use std::collections::BTreeMap;

use crate::inventory::Inventory;
use crate::opaque::ClaimLimits;
use crate::state::AccessKind;
use crate::state::{ClaimRecord, DeviceSharing, RecordDevice};

/// One device of a prepared claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldDevice {
    /// The inventory name.
    pub device: String,
    /// The (parent) GPU's inventory name, or the record's device name when
    /// the GPU is gone.
    pub gpu: String,
    /// The (parent) GPU's NVML index; `None` when the GPU is gone.
    pub gpu_index: Option<u32>,
    /// The device's own UUID: the GPU's, or the slice's MIG UUID ("" while
    /// it has none).
    pub uuid: String,
    /// The slice's GPU instance id; `None` for a whole GPU.
    pub gpu_instance: Option<u32>,
    /// How the device is used.
    pub sharing: AccessKind,
    /// The claim's memory share, for a device it shares (MPS, time-slicing).
    pub memory_share: Option<u64>,
    /// Memory of the device (GPU or slice), in bytes; 0 when unknown.
    pub memory_total: u64,
    /// The pool it was allocated from.
    pub pool: String,
    /// The allocation's share id; "" when none.
    pub share_id: String,
}

/// One prepared claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldClaim {
    /// The claim uid.
    pub uid: String,
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// How it shares its devices.
    pub kind: AccessKind,
    /// Unix seconds of the prepare.
    pub prepared_at: i64,
    /// Its devices, in record order.
    pub devices: Vec<HeldDevice>,
    /// Its own over-share mode and grace (its record's `limits`), if any.
    pub limits: Option<ClaimLimits>,
}

/// The claims of `records` (sorted by uid) as [`HeldClaim`]s.
pub fn held_claims(records: &[ClaimRecord], inventory: &Inventory) -> Vec<HeldClaim> {
    let holders = holders(records);
    let mut claims: Vec<HeldClaim> = records
        .iter()
        .map(|r| HeldClaim {
            uid: r.uid.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            kind: AccessKind::of_claim(r),
            prepared_at: r.prepared_at,
            devices: r
                .devices
                .iter()
                .map(|d| held_device(d, inventory, &holders))
                .collect(),
            limits: r.limits,
        })
        .collect();
    claims.sort_by(|a, b| a.uid.cmp(&b.uid));
    claims
}

/// (GPU uuid, GPU instance) → how many claims hold it.
type Holders = BTreeMap<(String, Option<u32>), usize>;

fn holders(records: &[ClaimRecord]) -> Holders {
    let mut holders = Holders::new();
    for record in records {
        let mut keys: Vec<_> = record.devices.iter().map(device_key).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            *holders.entry(key).or_default() += 1;
        }
    }
    holders
}

fn device_key(device: &RecordDevice) -> (String, Option<u32>) {
    (
        device.uuid.clone(),
        device.mig.as_ref().and_then(|m| m.gpu_instance),
    )
}

fn held_device(device: &RecordDevice, inventory: &Inventory, holders: &Holders) -> HeldDevice {
    let gpu = inventory.gpu_by_uuid(&device.uuid);
    let slice = device.mig.as_ref();
    let memory_total = match slice {
        Some(m) => gpu
            .and_then(|g| g.mig.as_ref())
            .and_then(|mig| mig.profile_by_id(m.profile_id))
            .map_or(0, |p| p.memory_bytes),
        None => gpu.map_or(0, |g| g.info.memory_bytes),
    };
    let sharing = AccessKind::of_device(device);
    let memory_share = if sharing.shares_gpus() {
        let sharers = holders.get(&device_key(device)).copied().unwrap_or(1);
        share(device, memory_total, sharers)
    } else {
        None
    };
    HeldDevice {
        device: device.device.clone(),
        gpu: gpu.map_or_else(|| device.device.clone(), |g| g.name.clone()),
        gpu_index: gpu.map(|g| g.info.index),
        uuid: match slice {
            Some(m) => m.mig_uuid.clone().unwrap_or_default(),
            None => device.uuid.clone(),
        },
        gpu_instance: slice.and_then(|m| m.gpu_instance),
        sharing,
        memory_share,
        memory_total,
        pool: device.pool.clone(),
        share_id: device.share_id.clone(),
    }
}

/// The share rule (module doc); `None` only for a device of unknown memory
/// with nothing else to go by.
fn share(device: &RecordDevice, memory_total: u64, sharers: usize) -> Option<u64> {
    let mps = match &device.sharing {
        Some(DeviceSharing::Mps(mps)) => mps
            .memory_share
            .or_else(|| mps.pinned_memory_limits.get(&device.device).copied()),
        _ => None,
    };
    let even = || {
        let sharers = u64::try_from(sharers.max(1)).unwrap_or(u64::MAX);
        (memory_total > 0).then(|| memory_total / sharers)
    };
    mps.or(device.consumed_memory).or_else(even)
}

#[cfg(test)]
mod tests;
