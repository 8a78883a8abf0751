//! [`MpsManager`]: one control daemon per [`MpsKey`], shared by the claims
//! that ask for the same devices and limits, reference counted by claim uid.
//! Blocking: the engine calls it from blocking threads. A slot per key, so
//! starting one daemon never waits for another.
//!
//! A slot's lock is held only to read or change its state, never across a
//! start or a stop (which run the control program and can take up to the
//! ready bound): the slot is marked busy instead, and whoever needs that key
//! waits on its condition variable. So [`MpsManager::daemons`] (ListClaims,
//! GetSharing, metrics, a re-prepare on another GPU) never waits for a
//! daemon to come up or go away.
//!
//! Compute mode is the engine's job, not this module's: it must set the
//! key's whole GPUs to EXCLUSIVE_PROCESS before the first `acquire` of a key,
//! and back to DEFAULT after the `release` that returns
//! [`Released::Stopped`]. MIG devices keep their compute mode.
//!
//! This file holds the bookkeeping (slots, reference counts, views);
//! [`lifecycle`] starts, adopts and stops one daemon; [`cleanup`] stops the
//! daemons of claims that are gone at start-up.

mod cleanup;
mod lifecycle;

pub use cleanup::StaleDaemon;
pub use lifecycle::{bring_up, daemon_path};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use gpuslice_cdi::ContainerEdits;

use super::MpsError;
use super::control::Control;
use super::folders::DaemonFolders;
use super::key::MpsKey;
use super::limits::{MpsLimits, client_memory_env};
use super::mount::ShmMounter;
use super::supervisor::{DaemonStatus, Supervised, Supervisor};

/// What the manager needs from the config.
#[derive(Debug, Clone)]
pub struct MpsSettings {
    /// `nvidia-cuda-mps-control`, a host path (driver root applied).
    pub control_program: PathBuf,
    /// `<run_dir>/mps`: one folder per daemon.
    pub mps_dir: PathBuf,
    /// Upper bound for a daemon to answer after start.
    pub ready_bound: Duration,
    /// Whether each daemon sees its shm folder at /dev/shm (a systemd
    /// `BindPaths=`, or a private mount namespace for a child, which needs
    /// root). When false, daemon and clients keep the host's /dev/shm.
    pub bind_shm: bool,
}

/// A running daemon, as a claim sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpsDaemon {
    /// The devices it covers.
    pub key: MpsKey,
    /// Its folders.
    pub folders: DaemonFolders,
    /// Its state now.
    pub status: DaemonStatus,
    /// The claims on it.
    pub claims: Vec<String>,
    /// The limits it runs with.
    pub limits: MpsLimits,
    /// Whether clients get its shm folder at /dev/shm.
    pub shm_shared: bool,
}

impl MpsDaemon {
    /// `CUDA_MPS_PIPE_DIRECTORY`.
    pub fn pipe_dir(&self) -> PathBuf {
        self.folders.pipe_dir()
    }

    /// `CUDA_MPS_LOG_DIRECTORY` of the daemon (not given to clients).
    pub fn log_dir(&self) -> PathBuf {
        self.folders.log_dir()
    }

    /// The shm tmpfs, bound at /dev/shm in clients.
    pub fn shm_dir(&self) -> PathBuf {
        self.folders.shm_dir()
    }

    /// CDI edits for a claim's containers; `memory_share` (device UUID →
    /// bytes) is the claim's own pinned memory limit, when it asked for one.
    pub fn cdi_edits(&self, memory_share: &BTreeMap<String, u64>) -> ContainerEdits {
        self.folders
            .cdi_edits(client_memory_env(memory_share), self.shm_shared)
    }
}

/// What a release did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Released {
    /// The claim was not on this daemon (already released): nothing done.
    NotHeld,
    /// Other claims still use the daemon; it keeps running.
    StillUsed(usize),
    /// The last claim left: the daemon was stopped and its folder removed.
    /// The engine now resets the compute mode of the key's whole GPUs.
    Stopped,
}

#[derive(Debug)]
struct Running {
    limits: MpsLimits,
    claims: BTreeSet<String>,
    folders: DaemonFolders,
    daemon: Arc<dyn Supervised>,
}

/// Where one key's daemon stands.
#[derive(Debug)]
enum SlotState {
    /// No daemon (a start failed, or a stop could not finish cleanly).
    Idle,
    /// A start or stop is under way, outside the lock.
    Busy,
    /// Ready, with its claims.
    Running(Running),
}

#[derive(Debug)]
struct SlotCell {
    state: Mutex<SlotState>,
    /// Signalled when the state leaves `Busy`.
    settled: Condvar,
}

impl Default for SlotCell {
    fn default() -> Self {
        Self {
            state: Mutex::new(SlotState::Idle),
            settled: Condvar::new(),
        }
    }
}

impl SlotCell {
    /// The state, once no start or stop is under way.
    fn settled(&self) -> MutexGuard<'_, SlotState> {
        let mut state = lock(&self.state);
        while matches!(*state, SlotState::Busy) {
            state = self
                .settled
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state
    }

    /// Leaves `Busy` for `next` and wakes the waiters.
    fn settle(&self, next: SlotState) {
        *lock(&self.state) = next;
        self.settled.notify_all();
    }
}

type Slot = Arc<SlotCell>;

/// All control daemons of the node.
#[derive(Debug)]
pub struct MpsManager {
    settings: MpsSettings,
    supervisor: Arc<dyn Supervisor>,
    control: Arc<dyn Control>,
    mounter: Arc<dyn ShmMounter>,
    slots: Mutex<HashMap<MpsKey, Slot>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MpsManager {
    /// A manager with no daemons yet (call [`Self::cleanup_stale`] next):
    /// `supervisor` keeps the daemons' processes running, `control` talks to
    /// them (normally [`super::control::ControlProgram`] on
    /// `settings.control_program`), `mounter` gives each its shm.
    pub fn new(
        settings: MpsSettings,
        supervisor: Arc<dyn Supervisor>,
        control: Arc<dyn Control>,
        mounter: Arc<dyn ShmMounter>,
    ) -> Self {
        Self {
            settings,
            supervisor,
            control,
            mounter,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The supervisor's name ("child" or "systemd").
    pub fn supervisor_name(&self) -> &'static str {
        self.supervisor.name()
    }

    /// The folders `key`'s daemon has (or would have): a pure function of
    /// the key, so specs can be rebuilt without the daemon.
    pub fn folders(&self, key: &MpsKey) -> DaemonFolders {
        DaemonFolders::new(&self.settings.mps_dir, key)
    }

    /// CDI edits for a claim's containers on `key`'s daemon, with the claim's
    /// own memory share (device UUID → bytes).
    pub fn client_edits(
        &self,
        key: &MpsKey,
        memory_share: &BTreeMap<String, u64>,
    ) -> ContainerEdits {
        self.folders(key)
            .cdi_edits(client_memory_env(memory_share), self.settings.bind_shm)
    }

    /// Puts `claim_uid` on the daemon of `key`, starting it (or taking over
    /// one a previous gpusliced left) with `limits` when none runs. Returns
    /// only once the daemon answers with its limits applied. Idempotent for
    /// a claim already on it. Refused: other limits than the running
    /// daemon's, or a key that shares devices with another daemon's.
    pub fn acquire(
        &self,
        claim_uid: &str,
        key: &MpsKey,
        limits: &MpsLimits,
    ) -> Result<MpsDaemon, MpsError> {
        loop {
            let slot = self.slot(key)?;
            let mut state = slot.settled();
            // A release or a failed start may have dropped the slot while we
            // waited for it: start over with the one in the map.
            if !self.is_current(key, &slot) {
                continue;
            }
            if let SlotState::Running(running) = &mut *state {
                if running.limits != *limits {
                    return Err(MpsError::LimitsConflict {
                        key: key.clone(),
                        asked: limits.clone(),
                        running: running.limits.clone(),
                        claims: running.claims.iter().cloned().collect(),
                    });
                }
                running.claims.insert(claim_uid.to_owned());
                return Ok(self.view(key, running));
            }
            *state = SlotState::Busy;
            drop(state);
            return match self.start(key, limits) {
                Ok(mut running) => {
                    running.claims.insert(claim_uid.to_owned());
                    let out = self.view(key, &running);
                    slot.settle(SlotState::Running(running));
                    Ok(out)
                }
                Err(err) => {
                    self.forget_empty(key, &slot);
                    slot.settle(SlotState::Idle);
                    Err(err)
                }
            };
        }
    }

    /// Whether `slot` is still the map's slot of `key`. Called with the
    /// slot's state locked: the map lock is taken after a state lock only
    /// here, never the other way round except through `try_lock`.
    fn is_current(&self, key: &MpsKey, slot: &Slot) -> bool {
        lock(&self.slots)
            .get(key)
            .is_some_and(|s| Arc::ptr_eq(s, slot))
    }

    /// Takes `claim_uid` off the daemon of `key`; stops it after the last.
    pub fn release(&self, claim_uid: &str, key: &MpsKey) -> Result<Released, MpsError> {
        let Some(slot) = lock(&self.slots).get(key).cloned() else {
            return Ok(Released::NotHeld);
        };
        let mut state = slot.settled();
        let SlotState::Running(running) = &mut *state else {
            return Ok(Released::NotHeld);
        };
        if !running.claims.remove(claim_uid) {
            return Ok(Released::NotHeld);
        }
        if !running.claims.is_empty() {
            return Ok(Released::StillUsed(running.claims.len()));
        }
        let SlotState::Running(running) = std::mem::replace(&mut *state, SlotState::Busy) else {
            return Ok(Released::NotHeld);
        };
        drop(state);
        if let Err(err) = self.stop(key, &running.folders, running.daemon.as_ref()) {
            // Kept in the map (idle): a daemon that may still run blocks
            // the keys that overlap it until it is started or stopped again.
            slot.settle(SlotState::Idle);
            return Err(err);
        }
        self.forget_empty(key, &slot);
        slot.settle(SlotState::Idle);
        Ok(Released::Stopped)
    }

    /// Every daemon with its claims and state, by key. Never waits for a
    /// start or a stop: a daemon coming up is listed once it is ready.
    pub fn daemons(&self) -> Vec<MpsDaemon> {
        let slots: Vec<(MpsKey, Slot)> = lock(&self.slots)
            .iter()
            .map(|(k, s)| (k.clone(), Arc::clone(s)))
            .collect();
        let mut out: Vec<MpsDaemon> = slots
            .iter()
            .filter_map(|(key, slot)| match &*lock(&slot.state) {
                SlotState::Running(r) => Some(self.view(key, r)),
                SlotState::Idle | SlotState::Busy => None,
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }

    /// Waits until the daemon of `key` has been restarted `count` times and
    /// is back (or failed), at most `bound`. `None`: no such daemon.
    pub fn wait_for_restarts(
        &self,
        key: &MpsKey,
        count: u32,
        bound: Duration,
    ) -> Option<DaemonStatus> {
        let slot = lock(&self.slots).get(key).cloned()?;
        let daemon = match &*lock(&slot.state) {
            SlotState::Running(r) => Arc::clone(&r.daemon),
            SlotState::Idle | SlotState::Busy => return None,
        };
        Some(daemon.wait_for_restarts(count, bound))
    }

    fn view(&self, key: &MpsKey, running: &Running) -> MpsDaemon {
        MpsDaemon {
            key: key.clone(),
            folders: running.folders.clone(),
            status: running.daemon.status(),
            claims: running.claims.iter().cloned().collect(),
            limits: running.limits.clone(),
            shm_shared: self.settings.bind_shm,
        }
    }

    /// Drops the slot of `key` from the map after a start that failed or a
    /// stop (called while the slot is busy), so it blocks no overlapping
    /// key. Whoever waits for the slot sees it is no longer current and
    /// starts over.
    fn forget_empty(&self, key: &MpsKey, slot: &Slot) {
        let mut slots = lock(&self.slots);
        if slots.get(key).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(key);
        }
    }

    fn slot(&self, key: &MpsKey) -> Result<Slot, MpsError> {
        let mut slots = lock(&self.slots);
        if let Some(other) = slots.keys().find(|k| k.overlaps(key)) {
            // try_lock: the map lock never waits for a state lock (the
            // reverse order is taken in `is_current`).
            let claims = slots
                .get(other)
                .and_then(|s| {
                    s.state.try_lock().ok().and_then(|state| match &*state {
                        SlotState::Running(r) => Some(r.claims.iter().cloned().collect()),
                        SlotState::Idle | SlotState::Busy => None,
                    })
                })
                .unwrap_or_default();
            return Err(MpsError::Overlap {
                key: key.clone(),
                other: other.clone(),
                claims,
            });
        }
        Ok(Arc::clone(slots.entry(key.clone()).or_default()))
    }
}
