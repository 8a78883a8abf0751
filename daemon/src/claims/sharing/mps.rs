//! MPS, with the same verbs as MIG (reserve is [`Engine::reserve_sharing`]):
//! apply (compute mode EXCLUSIVE_PROCESS on the key's whole GPUs, then the
//! daemon, which [`crate::mps::MpsManager::acquire`] returns only once it
//! answers with its limits read back), release (take the claim off the
//! daemon; after the last claim the daemon quits and the GPUs return to
//! DEFAULT) and restore at start-up (the same daemons, by key hash: a live
//! one is adopted, a missing one started again).
//!
//! A MIG slice's daemon is keyed by the slice's UUID, known only once the
//! slice is made: apply runs after the MIG steps, and MIG devices keep
//! their compute mode.

use super::compute_mode::ModeChange;
use super::{MpsUse, mps_uses};
use crate::claims::Engine;
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::gpu::ComputeMode;
use crate::mps::Released;
use crate::state::{ClaimRecord, DeviceSharing};

impl Engine {
    /// Starts or joins every daemon `record` uses. On failure, what was done
    /// is undone (daemons released, compute modes put back) before the error
    /// is returned.
    pub(in crate::claims) fn apply_mps(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        let uses = mps_uses(record);
        if uses.is_empty() {
            return Ok(());
        }
        let tools = self.sharing_tools(&record.uid)?;
        let mut done: Vec<(MpsUse, Vec<ModeChange>)> = Vec::new();
        for one in uses {
            let step = self
                .ensure_compute_modes(&one.whole_gpus, ComputeMode::ExclusiveProcess)
                .and_then(|changed| {
                    match tools.mps.acquire(&record.uid, &one.key, &one.limits) {
                        Ok(daemon) => {
                            tracing::info!(claim_uid = %record.uid, daemon = %one.key, pid = ?daemon.status.pid, claims = daemon.claims.len(), "on MPS control daemon");
                            Ok(changed)
                        }
                        Err(err) => {
                            self.undo_compute_modes(&changed);
                            Err(err.into())
                        }
                    }
                });
            match step {
                Ok(changed) => done.push((one, changed)),
                Err(err) => {
                    for (one, changed) in done.iter().rev() {
                        if let Ok(Released::Stopped) = tools.mps.release(&record.uid, &one.key) {
                            self.undo_compute_modes(changed);
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
    pub(in crate::claims) fn release_mps(&self, record: &ClaimRecord) {
        if let Some(tools) = &self.sharing.tools {
            for one in mps_uses(record) {
                match tools.mps.release(&record.uid, &one.key) {
                    Ok(Released::Stopped) => {
                        tracing::info!(claim_uid = %record.uid, daemon = %one.key, "last claim left; MPS control daemon stopped");
                        for gpu in &one.whole_gpus {
                            self.reset_compute_mode(gpu);
                        }
                    }
                    Ok(Released::StillUsed(_) | Released::NotHeld) => {}
                    Err(err) => {
                        for uuid in one.key.uuids() {
                            self.mark_degraded(
                                uuid,
                                format!("the MPS control daemon of {} could not be stopped cleanly: {err}", one.key),
                            );
                        }
                    }
                }
            }
        }
        let mut state = lock(&self.sharing.state);
        for d in record.devices.iter().filter(|d| d.mig.is_none()) {
            if let Some(DeviceSharing::Mps(_)) = d.sharing {
                state.policy.leave_mps(&d.uuid, &record.uid);
                state.unpromise(&d.uuid, &record.uid);
            }
        }
    }

    /// A prepare of a claim prepared already: its daemons must run, so the
    /// kubelet's retry repairs one that start-up could not bring back.
    pub(in crate::claims) fn ensure_mps(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        let uses = mps_uses(record);
        if uses.is_empty() {
            return Ok(());
        }
        let tools = self.sharing_tools(&record.uid)?;
        let running = tools.mps.daemons();
        for one in uses {
            if running.iter().any(|d| d.key == one.key) {
                continue;
            }
            self.ensure_compute_modes(&one.whole_gpus, ComputeMode::ExclusiveProcess)?;
            tools.mps.acquire(&record.uid, &one.key, &one.limits)?;
            tracing::warn!(claim_uid = %record.uid, daemon = %one.key, "MPS control daemon of a prepared claim was not running; started it");
        }
        Ok(())
    }

    /// Start-up: brings every daemon of a prepared claim back (adopting the
    /// one still running, starting it again after a reboot), with its GPUs
    /// in EXCLUSIVE_PROCESS. Returns problems instead of failing: the other
    /// claims still come back.
    pub(in crate::claims) fn restore_mps(&self, record: &ClaimRecord) -> Vec<String> {
        let Some(tools) = &self.sharing.tools else {
            return vec![format!(
                "claim {} uses MPS, but this gpusliced runs without MPS support",
                record.uid
            )];
        };
        let mut problems = Vec::new();
        for one in mps_uses(record) {
            let done = self
                .ensure_compute_modes(&one.whole_gpus, ComputeMode::ExclusiveProcess)
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
        problems
    }
}
