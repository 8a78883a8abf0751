//! Sharing a GPU between claims in the claim engine: MPS and time-slicing.
//!
//! This module owns the runtime both modes share (this file), MPS ([`mps`]),
//! time-slicing ([`timeslice`]), the compute mode they set
//! ([`compute_mode`]), their start-up repair ([`restore`]) and what an
//! operator sees of them ([`view`]). How a request's configs become
//! per-device sharing is the request's (`claims/request/sharing.rs`). It must
//! not parse configs (that is [`crate::sharing`]), run MPS daemons (that is
//! [`crate::mps`]) or call nvidia-smi itself (that is [`crate::timeslice`]);
//! and it must not write records or CDI files, which stay with the engine's
//! prepare and unprepare.
//!
//! Both sharing modes ([`mps`], [`timeslice`]) have the same verbs as MIG:
//! reserve (check and book, no hardware), apply, release, and restore at
//! start-up.

//! State kept here, in one lock: the [`TimeSlicePolicy`] (per GPU: MPS or
//! time-slicing, which claims, which interval), the memory promised per GPU
//! through memory shares, what the last time-slice set did, and GPUs left
//! degraded by an undo that failed. A lock per GPU UUID serializes claims
//! that share one GPU from reserve to apply, so a second claim never runs
//! before the first one's time-slice or daemon is in place; claims on other
//! GPUs never wait.

mod compute_mode;
mod mps;
mod restore;
mod timeslice;
pub(super) mod view;

#[cfg(test)]
pub(super) mod node;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::error::ClaimError;
use super::keyed::{KeyGuard, KeyedLocks};
use super::{Engine, lock};
use crate::inventory::Inventory;
use crate::mps::{MpsKey, MpsLimits, MpsManager};
use crate::sharing::TimeSliceInterval;
use crate::state::{ClaimRecord, DeviceSharing, MpsSharing};
use crate::timeslice::{NvidiaSmi, TimeSlicePolicy};

/// The processes the engine drives to share GPUs.
#[derive(Debug, Clone)]
pub struct SharingTools {
    /// MPS control daemons.
    pub mps: Arc<MpsManager>,
    /// `nvidia-smi compute-policy`.
    pub nvidia_smi: NvidiaSmi,
}

/// What the last time-slice set on a GPU did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeSliceOutcome {
    /// The GPU runs at this interval.
    Applied(TimeSliceInterval),
    /// The GPU cannot be time-sliced; its policy is unchanged (a warning).
    NotSupported {
        /// The interval asked for.
        interval: TimeSliceInterval,
        /// nvidia-smi's words.
        message: String,
    },
}

/// The mutable part, behind one lock.
#[derive(Debug, Default)]
pub(super) struct SharingState {
    pub(super) policy: TimeSlicePolicy,
    /// GPU uuid → claim uid → bytes promised through a memory share.
    pub(super) promised: BTreeMap<String, BTreeMap<String, u64>>,
    /// GPU uuid → the last time-slice outcome.
    pub(super) timeslice: BTreeMap<String, TimeSliceOutcome>,
    /// GPU uuid → why it is degraded (an undo that failed).
    pub(super) degraded: BTreeMap<String, String>,
    /// Problems the start-up restore left.
    pub(super) problems: Vec<String>,
}

/// The runtime: tools (when configured), state and per-GPU locks.
#[derive(Debug, Default)]
pub(super) struct Sharing {
    pub(super) tools: Option<SharingTools>,
    pub(super) state: Mutex<SharingState>,
    pub(super) gpu_locks: KeyedLocks,
}

/// One MPS daemon a claim uses, in the terms the manager takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct MpsUse {
    /// The daemon's devices (GPU or MIG UUIDs).
    pub(super) key: MpsKey,
    /// Its limits, by UUID.
    pub(super) limits: MpsLimits,
    /// The claim's own memory share, by UUID.
    pub(super) memory_share: BTreeMap<String, u64>,
    /// The claim's first device on the daemon (its CDI device carries the
    /// MPS edits, once per container).
    pub(super) first_device: String,
    /// UUIDs of the whole GPUs in the key (their compute mode is switched).
    pub(super) whole_gpus: Vec<String>,
}

/// The MPS daemons `record` uses, in device order. A MIG device whose slice
/// has no UUID yet is left out (its daemon starts once the slice exists).
pub(super) fn mps_uses(record: &ClaimRecord) -> Vec<MpsUse> {
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

/// The whole GPUs `record` time-slices, with the interval.
pub(super) fn timeslices(record: &ClaimRecord) -> Vec<(String, TimeSliceInterval)> {
    record
        .devices
        .iter()
        .filter_map(|d| match (&d.sharing, &d.mig) {
            (Some(DeviceSharing::Timeslicing { interval }), None) => {
                Some((d.uuid.clone(), *interval))
            }
            _ => None,
        })
        .collect()
}

/// UUIDs of the whole GPUs `record` shares with other claims, sorted: the
/// GPU locks its prepare and unprepare take.
pub(super) fn shared_gpus(record: &ClaimRecord) -> Vec<String> {
    let mut gpus: Vec<String> = record
        .devices
        .iter()
        .filter(|d| d.sharing.is_some() && d.mig.is_none())
        .map(|d| d.uuid.clone())
        .collect();
    gpus.sort();
    gpus.dedup();
    gpus
}

/// Whether any device of `record` is shared.
pub(super) fn has_sharing(record: &ClaimRecord) -> bool {
    record.devices.iter().any(|d| d.sharing.is_some())
}

impl SharingState {
    /// Puts `record` in the policy and the memory books, or leaves the state
    /// as it was and says why not.
    pub(super) fn join(
        &mut self,
        record: &ClaimRecord,
        inventory: &Inventory,
    ) -> Result<(), ClaimError> {
        let result = self.try_join(record, inventory);
        if result.is_err() {
            self.forget(record);
        }
        result
    }

    fn try_join(&mut self, record: &ClaimRecord, inventory: &Inventory) -> Result<(), ClaimError> {
        for d in record.devices.iter().filter(|d| d.mig.is_none()) {
            match &d.sharing {
                None => {}
                Some(DeviceSharing::Timeslicing { interval }) => {
                    self.policy.join(&d.uuid, &record.uid, *interval)?;
                }
                Some(DeviceSharing::Mps(mps)) => {
                    self.policy.join_mps(&d.uuid, &record.uid)?;
                    if let Some(bytes) = mps.memory_share {
                        self.promise(&d.uuid, &record.uid, bytes, inventory)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn promise(
        &mut self,
        gpu: &str,
        uid: &str,
        bytes: u64,
        inventory: &Inventory,
    ) -> Result<(), ClaimError> {
        let total = inventory
            .gpu_by_uuid(gpu)
            .map_or(0, |g| g.info.memory_bytes);
        let book = self.promised.entry(gpu.to_owned()).or_default();
        let others: u64 = book
            .iter()
            .filter(|(claim, _)| *claim != uid)
            .map(|(_, b)| *b)
            .sum();
        let left = total.saturating_sub(others);
        if bytes > left {
            let holders: Vec<String> = book
                .iter()
                .filter(|(claim, _)| *claim != uid)
                .map(|(claim, b)| format!("{claim} ({})", super::error::bytes_text(b)))
                .collect();
            return Err(ClaimError::MemoryExhausted {
                gpu: inventory
                    .gpu_by_uuid(gpu)
                    .map_or_else(|| gpu.to_owned(), |g| g.name.clone()),
                uuid: gpu.to_owned(),
                asked: bytes,
                left,
                holders: holders.join(", "),
            });
        }
        book.insert(uid.to_owned(), bytes);
        Ok(())
    }

    /// Takes `record` out of the policy and the memory books, applying
    /// nothing (used where nothing was applied yet).
    pub(super) fn forget(&mut self, record: &ClaimRecord) {
        for d in record.devices.iter().filter(|d| d.mig.is_none()) {
            match &d.sharing {
                None => {}
                Some(DeviceSharing::Timeslicing { .. }) => {
                    self.policy.leave(&d.uuid, &record.uid);
                }
                Some(DeviceSharing::Mps(_)) => self.policy.leave_mps(&d.uuid, &record.uid),
            }
            self.unpromise(&d.uuid, &record.uid);
        }
    }

    pub(super) fn unpromise(&mut self, gpu: &str, uid: &str) {
        if let Some(book) = self.promised.get_mut(gpu) {
            book.remove(uid);
            if book.is_empty() {
                self.promised.remove(gpu);
            }
        }
    }

    /// Bytes of `gpu` promised through memory shares.
    pub(super) fn promised_on(&self, gpu: &str) -> u64 {
        self.promised.get(gpu).map_or(0, |b| b.values().sum())
    }
}

impl Engine {
    /// Sets the tools the engine shares GPUs with (call before `reconcile`).
    #[must_use]
    pub fn with_sharing(mut self, tools: SharingTools) -> Self {
        self.sharing.tools = Some(tools);
        self
    }

    /// The tools, or why sharing cannot be done.
    pub(super) fn sharing_tools(&self, uid: &str) -> Result<&SharingTools, ClaimError> {
        self.sharing
            .tools
            .as_ref()
            .ok_or_else(|| ClaimError::SharingNotConfigured {
                uid: uid.to_owned(),
            })
    }

    /// Reserve: checks `record`'s sharing against the other claims on its GPUs
    /// (interval, MPS beside time-slicing, memory left) and reserves it.
    /// Nothing touches the hardware. Call with the record's GPU locks held.
    pub(super) fn reserve_sharing(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        if !has_sharing(record) {
            return Ok(());
        }
        self.sharing_tools(&record.uid)?;
        let inventory = self.inventory();
        lock(&self.sharing.state).join(record, &inventory)
    }

    /// Undoes [`Engine::reserve_sharing`] when nothing was applied.
    pub(super) fn unreserve_sharing(&self, record: &ClaimRecord) {
        lock(&self.sharing.state).forget(record);
    }

    /// Records that an undo on `gpu` failed: the GPU is degraded until a
    /// later step on it succeeds.
    pub(super) fn mark_degraded(&self, gpu: &str, problem: String) {
        tracing::error!(gpu, %problem, "GPU left degraded");
        lock(&self.sharing.state)
            .degraded
            .insert(gpu.to_owned(), problem);
    }

    /// Clears a degraded mark after a step on `gpu` succeeded.
    pub(super) fn clear_degraded(&self, gpu: &str) {
        lock(&self.sharing.state).degraded.remove(gpu);
    }

    /// The locks of `record`'s shared GPUs, held until the guards go.
    pub(super) fn lock_gpus(&self, record: &ClaimRecord) -> Vec<KeyGuard<'_>> {
        self.sharing.gpu_locks.lock_all(&shared_gpus(record))
    }
}
