//! MPS as a kind of access: reserve (the claim joins the GPU's policy as MPS,
//! never beside time-slicing, and its memory share is promised), apply (compute mode EXCLUSIVE_PROCESS on the key's whole GPUs, then the
//! daemon, which [`crate::mps::MpsManager::acquire`] returns only once it
//! answers with its limits read back), release (take the claim off the
//! daemon; after the last claim the daemon quits and the GPUs return to
//! DEFAULT) and restore at start-up (the same daemons, by key hash: a live
//! one is adopted, a missing one started again).
//!
//! A MIG slice's daemon is keyed by the slice's UUID, known only once the
//! slice is made: apply runs after the MIG steps, and MIG devices keep
//! their compute mode.

use std::collections::BTreeMap;

use super::shared_gpu::{SharedGpus, compute_mode::ModeChange};
use super::{Access, Cx, Restored};
use crate::cdi_build::ClaimDevice;
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::gpu::ComputeMode;
use crate::inventory::DeviceRef;
use crate::mps::{DaemonState, MpsDaemon, MpsKey, MpsLimits, Released};
use crate::state::AccessKind;
use crate::state::{ClaimRecord, DeviceSharing, MpsSharing};

/// MPS: the [`Access`] of a claim on devices shared through an MPS control
/// daemon (whole GPUs or MIG slices).
#[derive(Debug, Default)]
pub(in crate::claims) struct Mps;

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

impl Access for Mps {
    fn kind(&self) -> AccessKind {
        AccessKind::Mps
    }

    fn takes_part(&self, record: &ClaimRecord, _devices: &[DeviceRef<'_>]) -> bool {
        (record.devices.iter()).any(|d| matches!(d.sharing, Some(DeviceSharing::Mps(_))))
    }

    /// Checks the claim against the other claims on its GPUs (no
    /// time-slicing, memory left for its share) and books it. Nothing
    /// touches the hardware. Call with the record's GPU locks held.
    fn reserve(
        &self,
        cx: &Cx<'_>,
        record: &mut ClaimRecord,
        _devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        cx.shared.tools(&record.uid)?;
        self.adopt(cx, record)
    }

    fn unreserve(&self, cx: &Cx<'_>, record: &ClaimRecord) {
        let mut books = lock(&cx.shared.books);
        for d in mps_devices(record) {
            books.policy.leave_mps(&d.uuid, &record.uid);
            books.unpromise(&d.uuid, &record.uid);
        }
    }

    /// Starts or joins every daemon `record` uses. On failure, what was done
    /// is undone (daemons released, compute modes put back) before the error
    /// is returned.
    fn apply(
        &self,
        cx: &Cx<'_>,
        record: &mut ClaimRecord,
        _devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        let uses = mps_uses(record);
        if uses.is_empty() {
            return Ok(());
        }
        let tools = cx.shared.tools(&record.uid)?;
        let mut done: Vec<(MpsUse, Vec<ModeChange>)> = Vec::new();
        for one in uses {
            let step = cx
                .shared
                .ensure_compute_modes(cx, &one.whole_gpus, ComputeMode::ExclusiveProcess)
                .and_then(|changed| {
                    match tools.mps.acquire(&record.uid, &one.key, &one.limits) {
                        Ok(daemon) => {
                            tracing::info!(claim_uid = %record.uid, daemon = %one.key, pid = ?daemon.status.pid, claims = daemon.claims.len(), "on MPS control daemon");
                            Ok(changed)
                        }
                        Err(err) => {
                            cx.shared.undo_compute_modes(cx, &changed);
                            Err(err.into())
                        }
                    }
                });
            match step {
                Ok(changed) => done.push((one, changed)),
                Err(err) => {
                    for (one, changed) in done.iter().rev() {
                        if let Ok(Released::Stopped) = tools.mps.release(&record.uid, &one.key) {
                            cx.shared.undo_compute_modes(cx, changed);
                        }
                    }
                    return Err(err);
                }
            }
        }
        Ok(())
    }

    /// Takes `record` off its daemons and out of the MPS books. Never fails:
    /// a daemon that cannot be stopped, or a compute mode that cannot be
    /// reset, leaves its GPU degraded (shown in status), since retrying the
    /// unprepare could not redo the step.
    fn release(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
        if let Some(tools) = &cx.shared.tools {
            for one in mps_uses(record) {
                match tools.mps.release(&record.uid, &one.key) {
                    Ok(Released::Stopped) => {
                        tracing::info!(claim_uid = %record.uid, daemon = %one.key, "last claim left; MPS control daemon stopped");
                        for gpu in &one.whole_gpus {
                            cx.shared.reset_compute_mode(cx, gpu);
                        }
                    }
                    Ok(Released::StillUsed(_) | Released::NotHeld) => {}
                    Err(err) => {
                        for uuid in one.key.uuids() {
                            cx.shared.mark_degraded(
                                uuid,
                                format!("the MPS control daemon of {} could not be stopped cleanly: {err}", one.key),
                            );
                        }
                    }
                }
            }
        }
        self.unreserve(cx, record);
        Ok(())
    }

    /// Puts the compute mode a prepare cut short may have set back to
    /// DEFAULT, on GPUs no live claim shares (its daemon, if it got one, was
    /// stopped with the stale ones).
    fn roll_back(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<Vec<String>, ClaimError> {
        let mut problems = Vec::new();
        for d in mps_devices(record) {
            if !cx.shared.unused(&d.uuid) {
                continue;
            }
            let reset = SharedGpus::ensure_compute_mode(cx, &d.uuid, ComputeMode::Default);
            if let Err(err) = reset {
                problems.push(super::timeslice::roll_back_problem(record, d, &err));
            }
        }
        Ok(problems)
    }

    /// Back into the policy and the memory books: every MPS whole GPU of
    /// `record`, or none (the books stay as they were).
    fn adopt(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
        let inventory = cx.env.inventory();
        let joined = {
            let mut books = lock(&cx.shared.books);
            mps_devices(record).try_for_each(|d| {
                books.policy.join_mps(&d.uuid, &record.uid)?;
                match &d.sharing {
                    Some(DeviceSharing::Mps(mps)) => match mps.memory_share {
                        Some(bytes) => books.promise(&d.uuid, &record.uid, bytes, &inventory),
                        None => Ok(()),
                    },
                    _ => Ok(()),
                }
            })
        };
        if joined.is_err() {
            self.unreserve(cx, record);
        }
        joined
    }

    /// Brings every daemon of a prepared claim back (adopting the one still
    /// running, starting it again after a reboot), with its GPUs in
    /// EXCLUSIVE_PROCESS. Returns problems instead of failing: the other
    /// claims still come back.
    fn restore(&self, cx: &Cx<'_>, record: &mut ClaimRecord) -> Restored {
        let Some(tools) = &cx.shared.tools else {
            return Restored {
                problems: vec![format!(
                    "claim {} uses MPS, but this gpusliced runs without MPS support",
                    record.uid
                )],
                record_changed: false,
            };
        };
        let mut problems = Vec::new();
        for one in mps_uses(record) {
            let done = cx
                .shared
                .ensure_compute_modes(cx, &one.whole_gpus, ComputeMode::ExclusiveProcess)
                .and_then(|_| {
                    tools
                        .mps
                        .acquire(&record.uid, &one.key, &one.limits)
                        .map_err(ClaimError::from)
                });
            match done {
                Ok(daemon) => {
                    tracing::info!(claim_uid = %record.uid, daemon = %one.key, pid = ?daemon.status.pid, "MPS control daemon of a prepared claim is running");
                }
                Err(err) => problems.push(format!(
                    "claim {}: the MPS control daemon of {} could not be brought back: {err}",
                    record.uid, one.key
                )),
            }
        }
        Restored {
            problems,
            record_changed: false,
        }
    }

    /// A prepare of a claim prepared already: its daemons must run, so the
    /// kubelet's retry repairs one that start-up could not bring back.
    fn ensure(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
        let uses = mps_uses(record);
        if uses.is_empty() {
            return Ok(());
        }
        let tools = cx.shared.tools(&record.uid)?;
        let running = tools.mps.daemons();
        for one in uses {
            if running.iter().any(|d| d.key == one.key) {
                continue;
            }
            cx.shared
                .ensure_compute_modes(cx, &one.whole_gpus, ComputeMode::ExclusiveProcess)?;
            tools.mps.acquire(&record.uid, &one.key, &one.limits)?;
            tracing::warn!(claim_uid = %record.uid, daemon = %one.key, "MPS control daemon of a prepared claim was not running; started it");
        }
        Ok(())
    }

    /// Gives the first device of each MPS daemon the claim uses the
    /// daemon's client edits (pipe dir, shm, the claim's memory share), so a
    /// container that gets all the request's devices gets them once.
    fn cdi_edits(
        &self,
        cx: &Cx<'_>,
        record: &ClaimRecord,
        devices: &mut [ClaimDevice],
    ) -> Result<(), ClaimError> {
        let uses = mps_uses(record);
        if uses.is_empty() {
            return Ok(());
        }
        let tools = cx.shared.tools(&record.uid)?;
        for one in uses {
            let edits = tools.mps.client_edits(&one.key, &one.memory_share);
            if let Some(device) = devices.iter_mut().find(|d| d.name == one.first_device) {
                device.edits.env.extend(edits.env);
                device.edits.mounts.extend(edits.mounts);
            }
        }
        Ok(())
    }

    /// Each MPS daemon of the claim that is not running as it should.
    fn claim_problems(&self, cx: &Cx<'_>, records: &[ClaimRecord]) -> Vec<Vec<String>> {
        let daemons = cx.shared.daemons();
        let problem = |one: MpsUse| {
            let daemon = daemons.iter().find(|d| d.key == one.key);
            daemon_problem(&one.key.to_string(), daemon)
        };
        (records.iter())
            .map(|record| mps_uses(record).into_iter().filter_map(problem).collect())
            .collect()
    }

    /// The daemons that failed, restarted or stopped.
    fn node_problems(&self, cx: &Cx<'_>) -> Vec<String> {
        (cx.shared.daemons().iter())
            .filter(|d| d.status.state != DaemonState::Running)
            .filter_map(|d| daemon_problem(&d.key.to_string(), Some(d)))
            .collect()
    }
}

impl Mps {
    /// Start-up, before any acquire: stops the daemons no prepared claim
    /// uses (with their units, mounts and folders), and puts their whole
    /// GPUs that no live claim shares back to compute mode DEFAULT. Returns
    /// how many stopped, or the problem.
    pub(in crate::claims) fn stop_stale(&self, cx: &Cx<'_>) -> Result<usize, String> {
        let Some(tools) = &cx.shared.tools else {
            return Ok(0);
        };
        let live: Vec<_> = lock(cx.table)
            .records()
            .iter()
            .flat_map(mps_uses)
            .map(|one| one.key)
            .collect();
        match tools.mps.cleanup_stale(&live) {
            Ok(stopped) => {
                for daemon in &stopped {
                    tracing::info!(daemon = %daemon.hash, devices = ?daemon.devices, "stopped an MPS control daemon whose claims are gone");
                    for uuid in &daemon.devices {
                        if cx.shared.unused(uuid) {
                            // A MIG UUID is no whole GPU: nothing to reset.
                            cx.shared.reset_compute_mode(cx, uuid);
                        }
                    }
                }
                Ok(stopped.len())
            }
            Err(err) => Err(format!(
                "MPS control daemons left from claims that are gone could not all be stopped: {err}"
            )),
        }
    }
}

/// The whole GPUs of `record` shared by MPS (a MIG slice's MPS is not in
/// the policy or the memory books).
fn mps_devices(record: &ClaimRecord) -> impl Iterator<Item = &crate::state::RecordDevice> {
    (record.devices.iter())
        .filter(|d| d.mig.is_none() && matches!(d.sharing, Some(DeviceSharing::Mps(_))))
}

/// What is wrong with the daemon of `key`, if anything.
fn daemon_problem(key: &str, daemon: Option<&MpsDaemon>) -> Option<String> {
    let Some(daemon) = daemon else {
        return Some(format!("the MPS control daemon of {key} is not running"));
    };
    let s = &daemon.status;
    let pid = s.pid.map_or_else(|| "?".to_owned(), |p| p.to_string());
    match s.state {
        DaemonState::Running if s.restarts == 0 => None,
        DaemonState::Running => Some(format!(
            "the MPS control daemon of {key} died and was restarted {} time(s); it runs again \
             (pid {pid}), its clients had to reconnect",
            s.restarts
        )),
        DaemonState::Restarting => Some(format!(
            "the MPS control daemon of {key} died and is being restarted ({} restart(s) so far)",
            s.restarts
        )),
        DaemonState::Failed => Some(format!(
            "the MPS control daemon of {key} died and could not be brought back (pid {pid}, {} \
             restart(s)); its clients run without MPS: unprepare and prepare the claims again, \
             or restart gpusliced",
            s.restarts
        )),
        DaemonState::Stopped => Some(format!("the MPS control daemon of {key} has stopped")),
    }
}
