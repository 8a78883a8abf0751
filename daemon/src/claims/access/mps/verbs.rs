//! MPS's verbs: prepare's reserve and apply, their undo, unprepare's
//! release and the start-up roll back of a prepare cut short; the rest of
//! the [`Access`] calls on into [`super::restore`], [`super::cdi`] and
//! [`super::view`].

use super::held::{MpsUse, mps_devices, mps_uses};
use super::{Mps, cdi, restore, view};
use crate::cdi_build::ClaimDevice;
use crate::claims::access::shared_gpu::{SharedGpus, compute_mode::ModeChange, roll_back_problem};
use crate::claims::access::{Access, Cx, Restored, Swept};
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::claims::mps_daemon::Released;
use crate::gpu::ComputeMode;
use crate::inventory::DeviceRef;
use crate::state::{AccessKind, ClaimRecord, DeviceSharing};

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
        restore::adopt(cx, record)
    }

    fn unreserve(&self, cx: &Cx<'_>, record: &ClaimRecord) {
        unreserve(cx, record);
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
                problems.push(roll_back_problem(record, d, &err));
            }
        }
        Ok(problems)
    }

    fn adopt(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
        restore::adopt(cx, record)
    }

    fn restore(&self, cx: &Cx<'_>, record: &mut ClaimRecord) -> Restored {
        restore::restore(cx, record)
    }

    fn ensure(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
        restore::ensure(cx, record)
    }

    fn sweep(&self, cx: &Cx<'_>) -> Swept {
        restore::sweep(cx)
    }

    fn cdi_edits(
        &self,
        cx: &Cx<'_>,
        record: &ClaimRecord,
        devices: &mut [ClaimDevice],
    ) -> Result<(), ClaimError> {
        cdi::cdi_edits(cx, record, devices)
    }

    fn claim_problems(&self, cx: &Cx<'_>, records: &[ClaimRecord]) -> Vec<Vec<String>> {
        view::claim_problems(cx, records)
    }

    fn node_problems(&self, cx: &Cx<'_>) -> Vec<String> {
        view::node_problems(cx)
    }
}

/// Takes `record` out of the MPS books: the policy and the memory promised.
pub(super) fn unreserve(cx: &Cx<'_>, record: &ClaimRecord) {
    let mut books = lock(&cx.shared.books);
    for d in mps_devices(record) {
        books.policy.leave_mps(&d.uuid, &record.uid);
        books.unpromise(&d.uuid, &record.uid);
    }
}
