//! What an MPS claim uses, read from its record: the daemons (one per set of
//! devices and limits, [`MpsUse`]) in the terms the MPS manager takes, and
//! the whole GPUs it shares under MPS (the ones in the policy and the memory
//! books). Pure.

use std::collections::BTreeMap;

use crate::claims::mps_daemon::{MpsKey, MpsLimits};
use crate::state::{ClaimRecord, DeviceSharing, MpsSharing, RecordDevice};

/// One MPS daemon a claim uses, in the terms the manager takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::claims) struct MpsUse {
    /// The daemon's devices (GPU or MIG UUIDs).
    pub(in crate::claims) key: MpsKey,
    /// Its limits, by UUID.
    pub(in crate::claims) limits: MpsLimits,
    /// The claim's own memory share, by UUID.
    pub(in crate::claims) memory_share: BTreeMap<String, u64>,
    /// The claim's first device on the daemon (its CDI device carries the
    /// MPS edits, once per container).
    pub(in crate::claims) first_device: String,
    /// UUIDs of the whole GPUs in the key (their compute mode is switched).
    pub(in crate::claims) whole_gpus: Vec<String>,
}

/// The MPS daemons `record` uses, in device order. A MIG device whose slice
/// has no UUID yet is left out (its daemon starts once the slice exists).
pub(in crate::claims) fn mps_uses(record: &ClaimRecord) -> Vec<MpsUse> {
    let mut uses: Vec<MpsUse> = Vec::new();
    let mut seen: Vec<&Vec<String>> = Vec::new();
    for d in &record.devices {
        let Some(DeviceSharing::Mps(mps)) = &d.sharing else {
            continue;
        };
        if seen.contains(&&mps.devices) {
            continue;
        }
        seen.push(&mps.devices);
        if let Some(one) = mps_use(record, mps, &d.device) {
            uses.push(one);
        }
    }
    uses
}

fn mps_use(record: &ClaimRecord, mps: &MpsSharing, first: &str) -> Option<MpsUse> {
    let mut uuid_of = BTreeMap::new();
    let mut whole_gpus = Vec::new();
    let mut memory_share = BTreeMap::new();
    for name in &mps.devices {
        let d = record.devices.iter().find(|d| &d.device == name)?;
        let uuid = match &d.mig {
            Some(slice) => slice.mig_uuid.clone()?,
            None => {
                whole_gpus.push(d.uuid.clone());
                d.uuid.clone()
            }
        };
        if let Some(DeviceSharing::Mps(own)) = &d.sharing
            && let Some(bytes) = own.memory_share
        {
            memory_share.insert(uuid.clone(), bytes);
        }
        uuid_of.insert(name.as_str(), uuid);
    }
    let limits = MpsLimits {
        active_thread_percentage: mps.active_thread_percentage,
        pinned_memory_limits: mps
            .pinned_memory_limits
            .iter()
            .filter_map(|(name, bytes)| Some((uuid_of.get(name.as_str())?.clone(), *bytes)))
            .collect(),
    };
    Some(MpsUse {
        key: MpsKey::new(uuid_of.values().map(String::as_str)),
        limits,
        memory_share,
        first_device: first.to_owned(),
        whole_gpus,
    })
}

/// The whole GPUs of `record` shared by MPS (a MIG slice's MPS is not in
/// the policy or the memory books).
pub(super) fn mps_devices(record: &ClaimRecord) -> impl Iterator<Item = &RecordDevice> {
    (record.devices.iter())
        .filter(|d| d.mig.is_none() && matches!(d.sharing, Some(DeviceSharing::Mps(_))))
}
