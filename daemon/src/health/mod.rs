//! Device health: which GPUs and MIG slices are unhealthy, why and since when.
//!
//! * [`classify`] (pure): which events make a device unhealthy (critical XIDs
//!   not ignored, uncorrectable ECC errors, a lost GPU) and which recover it.
//! * `table` (pure): the faults in force, per GPU and per GPU instance, and
//!   which devices each covers.
//! * `store`: the faults on disk, kept across a daemon restart, not a reboot.
//! * [`watch`]: the loop that waits on the backend's [`crate::gpu::HealthWatch`]
//!   and feeds [`DeviceHealth`].
//!
//! [`DeviceHealth`] is the shared state the engine asks before a prepare and
//! the API reports from. A device becomes healthy again only when the backend
//! says so (a lost GPU answers NVML again; the simulator's `recovered`) or an
//! operator clears it (`gpuslicectl health clear DEVICE`): an XID is history,
//! not a condition anything can observe ending. Every change is persisted
//! before it is reported; a failed write is logged and reported as a problem,
//! and the change still holds in memory.

pub mod classify;
mod store;
mod table;
pub mod watch;

#[cfg(test)]
mod tests;

use std::sync::{Mutex, MutexGuard, PoisonError};

pub use classify::{Cause, Classifier, DEFAULT_IGNORED_XIDS, Scope, Verdict};
pub use store::{FILE_NAME, HealthStore, HealthStoreError};
pub use table::{Covering, Fault, GpuFaults, HealthTable, InstanceFault, Target};

use crate::gpu::{Placement, Unmonitored};

/// Whether the backend's events are being watched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Monitor {
    /// The watcher has not registered yet.
    #[default]
    NotStarted,
    /// Events are watched, except on these GPUs.
    Watching {
        /// GPUs whose events cannot be seen, and why.
        unmonitored: Vec<Unmonitored>,
    },
    /// The backend cannot watch events at all, or the watch broke.
    Failed {
        /// Why.
        reason: String,
    },
}

/// Why one device is unhealthy, ready to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFault {
    /// What happened, where, and since when.
    pub reason: String,
    /// The cause.
    pub cause: Cause,
    /// Unix seconds of the event.
    pub since: i64,
}

/// The node's device health, shared by the watcher, the engine and the API.
#[derive(Debug, Default)]
pub struct DeviceHealth {
    classifier: Mutex<Classifier>,
    table: Mutex<HealthTable>,
    store: Mutex<Option<HealthStore>>,
    store_problem: Mutex<Option<String>>,
    monitor: Mutex<Monitor>,
}

/// Every value behind these locks is replaced whole, so a poisoned lock still
/// holds a consistent value.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl DeviceHealth {
    /// Sets the classification rules (from `[health]`).
    pub fn set_classifier(&self, classifier: Classifier) {
        *lock(&self.classifier) = classifier;
    }

    /// The verdict on `event` under the rules in force.
    pub fn classify(&self, event: &crate::gpu::HealthEvent) -> Verdict {
        lock(&self.classifier).classify(event)
    }

    /// Every ignored XID, ascending.
    pub fn ignored_xids(&self) -> Vec<u64> {
        lock(&self.classifier).ignored_xids()
    }

    /// Keeps faults in `store` from now on, and takes back the ones it holds
    /// (see `store`); returns how many GPUs have faults. On a read error the
    /// store is still used for later writes, and no fault is taken back.
    pub fn restore(&self, store: HealthStore) -> Result<usize, HealthStoreError> {
        let loaded = store.load();
        *lock(&self.store) = Some(store);
        let table = loaded?;
        let gpus = table.gpus().count();
        *lock(&self.table) = table;
        Ok(gpus)
    }

    /// Records `fault` against `target`; true when the device set changed.
    pub fn record(&self, gpu_uuid: &str, gpu_index: u32, target: Target, fault: Fault) -> bool {
        self.change(|t| t.record(gpu_uuid, gpu_index, target, fault))
    }

    /// The backend says the GPU (`None`) or one instance is healthy again.
    pub fn recover(&self, gpu_uuid: &str, gpu_instance: Option<u32>) -> bool {
        self.change(|t| t.recover(gpu_uuid, gpu_instance))
    }

    /// An operator clears a GPU (`None`) or a slice; returns how many faults went.
    pub fn clear(&self, gpu_uuid: &str, slice: Option<Placement>) -> usize {
        let mut cleared = 0;
        self.change(|t| {
            cleared = t.clear(gpu_uuid, slice);
            cleared > 0
        });
        cleared
    }

    /// Runs `f` on the table; persists when it reports a change.
    fn change(&self, f: impl FnOnce(&mut HealthTable) -> bool) -> bool {
        let mut table = lock(&self.table);
        if !f(&mut table) {
            return false;
        }
        if let Some(store) = lock(&self.store).as_ref() {
            let problem = store.save(&table).err().map(|err| {
                tracing::error!(error = %err, "device health is not persisted; it is lost if gpusliced restarts");
                err.to_string()
            });
            *lock(&self.store_problem) = problem;
        }
        true
    }

    /// The fault that makes the GPU (`slice` `None`) or a slice of it
    /// unhealthy, if any.
    pub fn fault_of(&self, gpu_uuid: &str, slice: Option<Placement>) -> Option<DeviceFault> {
        let table = lock(&self.table);
        let covering = table.covering(gpu_uuid, slice)?;
        let fault = covering.fault();
        let at = since_text(fault.since);
        let reason = match (covering, slice) {
            (Covering::Gpu(_), None) => format!("{} since {at}", fault.cause),
            (Covering::Gpu(_), Some(_)) => format!("its GPU: {} since {at}", fault.cause),
            (Covering::Instance(i), Some(p)) if i.placement == p => {
                format!("{} since {at}", fault.cause)
            }
            (Covering::Instance(i), _) => format!(
                "GPU instance {} (memory slices {}): {} since {at}",
                i.gpu_instance,
                slices_text(i.placement),
                fault.cause
            ),
        };
        Some(DeviceFault {
            reason,
            cause: fault.cause,
            since: fault.since,
        })
    }

    /// A copy of every fault in force.
    pub fn table(&self) -> HealthTable {
        lock(&self.table).clone()
    }

    /// Sets whether events are watched.
    pub fn set_monitor(&self, monitor: Monitor) {
        *lock(&self.monitor) = monitor;
    }

    /// Whether events are watched.
    pub fn monitor(&self) -> Monitor {
        lock(&self.monitor).clone()
    }

    /// Problems an operator should act on that are not faults: GPUs not
    /// watched, a watch that failed, faults that could not be persisted.
    pub fn watch_problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = match self.monitor() {
            Monitor::NotStarted => Vec::new(),
            Monitor::Watching { unmonitored } => unmonitored
                .iter()
                .map(|u| {
                    format!(
                        "health events of GPU {} are not watched: {}; its XIDs go unnoticed",
                        u.gpu_index, u.reason
                    )
                })
                .collect(),
            Monitor::Failed { reason } => vec![format!(
                "GPU health events are not watched: {reason}; XIDs and lost GPUs go unnoticed"
            )],
        };
        problems.extend(lock(&self.store_problem).clone());
        problems
    }
}

/// RFC 3339 UTC time of unix seconds, e.g. "2025-06-01T12:00:00Z".
pub fn since_text(unix_seconds: i64) -> String {
    jiff::Timestamp::from_second(unix_seconds)
        .map_or_else(|_| format!("unix time {unix_seconds}"), |t| t.to_string())
}

/// "4-7": the memory slices of a placement.
fn slices_text(p: Placement) -> String {
    format!("{}-{}", p.start, (p.start + p.size).saturating_sub(1))
}
