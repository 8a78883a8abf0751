//! What time-slicing and MPS share: the tools they drive, their books and
//! a lock per shared GPU. The two kinds themselves are `access::timeslicing`
//! and `access::mps`; the compute mode both set is [`compute_mode`]. How a
//! request's configs become per-device sharing is the request's
//! (`claims/request/configs.rs`). It must not parse configs (that is
//! [`crate::opaque`]), run MPS daemons (that is [`crate::claims::mps_daemon`]) or call
//! nvidia-smi itself (that is [`crate::claims::compute_policy`]).
//!
//! The books, in one lock ([`SharedBooks`]): the [`TimeSlicePolicy`] (per
//! GPU: MPS or time-slicing, which claims, which interval; one policy for
//! both, on purpose, so it refuses MPS beside time-slicing), the memory
//! promised per GPU through memory shares, what the last time-slice set did,
//! GPUs left degraded by an undo that failed, and the problems the start-up
//! restore left. A lock per GPU UUID serializes claims that share one GPU
//! from reserve to apply, so a second claim never runs before the first
//! one's time-slice or daemon is in place; claims on other GPUs never wait.

pub(in crate::claims) mod compute_mode;

#[cfg(test)]
pub(in crate::claims) mod node;
#[cfg(test)]
pub(crate) mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::claims::compute_policy::{TimeSlicePolicy, TimeSliceSetter};
use crate::claims::error::ClaimError;
use crate::claims::keyed::{KeyGuard, KeyedLocks, lock};
use crate::claims::mps_daemon::{MpsDaemon, MpsManager};
use crate::features::TimeSliceSettings;
use crate::inventory::Inventory;
use crate::opaque::TimeSliceInterval;
use crate::state::ClaimRecord;

/// The processes the engine drives to share GPUs.
#[derive(Debug, Clone)]
pub struct SharingTools {
    /// MPS control daemons.
    pub mps: Arc<MpsManager>,
    /// Sets a GPU's time-slice (`nvidia-smi compute-policy`, or a fake).
    pub timeslice: Arc<dyn TimeSliceSetter>,
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

/// The books of the sharing kinds, behind one lock.
#[derive(Debug, Default)]
pub(in crate::claims) struct SharedBooks {
    pub(in crate::claims) policy: TimeSlicePolicy,
    /// GPU uuid → claim uid → bytes promised through a memory share.
    pub(in crate::claims) promised: BTreeMap<String, BTreeMap<String, u64>>,
    /// GPU uuid → the last time-slice outcome.
    pub(in crate::claims) timeslice: BTreeMap<String, TimeSliceOutcome>,
    /// GPU uuid → whether nvidia-smi set an interval on it: learned at the
    /// first set, kept while gpusliced runs (a fact of the hardware).
    pub(in crate::claims) timeslice_settings: BTreeMap<String, TimeSliceSettings>,
    /// GPU uuid → why it is degraded (an undo that failed).
    pub(in crate::claims) degraded: BTreeMap<String, String>,
    /// Problems the start-up restore left.
    pub(in crate::claims) problems: Vec<String>,
}

/// The tools (when configured), the books and the per-GPU locks of the
/// sharing kinds.
#[derive(Debug, Default)]
pub(in crate::claims) struct SharedGpus {
    pub(in crate::claims) tools: Option<SharingTools>,
    pub(in crate::claims) books: Mutex<SharedBooks>,
    gpu_locks: KeyedLocks,
}

/// UUIDs of the whole GPUs `record` shares with other claims, sorted: the
/// GPU locks its prepare and unprepare take.
fn shared_gpus(record: &ClaimRecord) -> Vec<String> {
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
pub(in crate::claims) fn has_sharing(record: &ClaimRecord) -> bool {
    record.devices.iter().any(|d| d.sharing.is_some())
}

impl SharedBooks {
    /// Promises `bytes` of `gpu` to the claim `uid`, or says how much is left.
    pub(in crate::claims) fn promise(
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
                .map(|(claim, b)| format!("{claim} ({})", crate::claims::error::bytes_text(b)))
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

    /// Takes back what `uid` was promised on `gpu`.
    pub(in crate::claims) fn unpromise(&mut self, gpu: &str, uid: &str) {
        if let Some(book) = self.promised.get_mut(gpu) {
            book.remove(uid);
            if book.is_empty() {
                self.promised.remove(gpu);
            }
        }
    }

    /// Bytes of `gpu` promised through memory shares.
    pub(in crate::claims) fn promised_on(&self, gpu: &str) -> u64 {
        self.promised.get(gpu).map_or(0, |b| b.values().sum())
    }
}

impl SharedGpus {
    /// The tools, or why sharing cannot be done.
    pub(in crate::claims) fn tools(&self, uid: &str) -> Result<&SharingTools, ClaimError> {
        self.tools
            .as_ref()
            .ok_or_else(|| ClaimError::SharingNotConfigured {
                uid: uid.to_owned(),
            })
    }

    /// Records that an undo on `gpu` failed: the GPU is degraded until a
    /// later step on it succeeds.
    pub(in crate::claims) fn mark_degraded(&self, gpu: &str, problem: String) {
        tracing::error!(gpu, %problem, "GPU left degraded");
        lock(&self.books).degraded.insert(gpu.to_owned(), problem);
    }

    /// Clears a degraded mark after a step on `gpu` succeeded.
    pub(in crate::claims) fn clear_degraded(&self, gpu: &str) {
        lock(&self.books).degraded.remove(gpu);
    }

    /// Whether no live claim shares `gpu`.
    pub(in crate::claims) fn unused(&self, gpu: &str) -> bool {
        lock(&self.books).policy.claims(gpu).is_empty()
    }

    /// The locks of `record`'s shared GPUs, held until the guards go.
    pub(in crate::claims) fn lock_gpus(&self, record: &ClaimRecord) -> Vec<KeyGuard<'_>> {
        self.gpu_locks.lock_all(&shared_gpus(record))
    }

    /// Every MPS control daemon, with its state and claims (none without
    /// the tools).
    pub(in crate::claims) fn daemons(&self) -> Vec<MpsDaemon> {
        self.tools
            .as_ref()
            .map(|t| t.mps.daemons())
            .unwrap_or_default()
    }

    /// View: each device of `record` on a degraded GPU.
    pub(in crate::claims) fn claim_problems(&self, record: &ClaimRecord) -> Vec<String> {
        let books = lock(&self.books);
        (record.devices.iter())
            .filter_map(|d| {
                let why = books.degraded.get(&d.uuid)?;
                Some(format!("{} ({}) is degraded: {why}", d.device, d.uuid))
            })
            .collect()
    }

    /// View: the degraded GPUs and what the start-up restore could not
    /// bring back, for GetStatus.
    pub(in crate::claims) fn node_problems(&self) -> Vec<String> {
        let books = lock(&self.books);
        let degraded =
            (books.degraded.iter()).map(|(gpu, why)| format!("GPU {gpu} is degraded: {why}"));
        degraded.chain(books.problems.iter().cloned()).collect()
    }
}

/// A sharing device of a prepare cut short that could not be reset.
pub(in crate::claims) fn roll_back_problem(
    record: &ClaimRecord,
    d: &crate::state::RecordDevice,
    err: &ClaimError,
) -> String {
    format!(
        "claim {}: {} ({}) could not be reset after a prepare cut short: {err}",
        record.uid, d.device, d.uuid
    )
}
