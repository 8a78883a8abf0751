//! Compute mode of shared whole GPUs: EXCLUSIVE_PROCESS under MPS (only the
//! MPS server may hold a context), DEFAULT under time-slicing and after the
//! last shared claim leaves. Set through the backend (NVML), not persistent
//! across a reboot, which is why start-up sets it again.

use crate::claims::Engine;
use crate::claims::error::ClaimError;
use crate::gpu::ComputeMode;

/// A compute mode this engine changed, so a failed prepare can put it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::claims) struct ModeChange {
    /// The GPU's UUID.
    pub(in crate::claims) uuid: String,
    /// Its mode before the change.
    pub(in crate::claims) before: ComputeMode,
}

impl Engine {
    /// Sets `mode` on the whole GPU `uuid` unless it has it already; returns
    /// the change made, if any.
    pub(in crate::claims) fn ensure_compute_mode(
        &self,
        uuid: &str,
        mode: ComputeMode,
    ) -> Result<Option<ModeChange>, ClaimError> {
        let inventory = self.inventory();
        let Some(gpu) = inventory.gpu_by_uuid(uuid) else {
            return Ok(None);
        };
        let index = gpu.info.index;
        let before = self.env.backend.compute_mode(index)?;
        if before == mode {
            return Ok(None);
        }
        self.env.backend.set_compute_mode(index, mode)?;
        tracing::info!(gpu = %gpu.name, ?before, now = ?mode, "compute mode set");
        Ok(Some(ModeChange {
            uuid: uuid.to_owned(),
            before,
        }))
    }

    /// Sets `mode` on every GPU of `uuids`, or on none: a failure puts back
    /// what was changed before it.
    pub(in crate::claims) fn ensure_compute_modes(
        &self,
        uuids: &[String],
        mode: ComputeMode,
    ) -> Result<Vec<ModeChange>, ClaimError> {
        let mut changed = Vec::new();
        for uuid in uuids {
            match self.ensure_compute_mode(uuid, mode) {
                Ok(change) => changed.extend(change),
                Err(err) => {
                    self.undo_compute_modes(&changed);
                    return Err(err);
                }
            }
        }
        Ok(changed)
    }

    /// Puts back modes changed by a prepare that failed; a failure here
    /// leaves the GPU degraded.
    pub(in crate::claims) fn undo_compute_modes(&self, changes: &[ModeChange]) {
        for change in changes {
            if let Err(err) = self.ensure_compute_mode(&change.uuid, change.before) {
                self.mark_degraded(
                    &change.uuid,
                    format!(
                        "compute mode could not be put back to {:?} after a failed prepare: {err}",
                        change.before
                    ),
                );
            }
        }
    }

    /// Returns the GPU to DEFAULT after its last shared claim left; a failure
    /// leaves it degraded (a later claim on it sets the mode it needs).
    pub(in crate::claims) fn reset_compute_mode(&self, uuid: &str) {
        match self.ensure_compute_mode(uuid, ComputeMode::Default) {
            Ok(_) => self.clear_degraded(uuid),
            Err(err) => self.mark_degraded(
                uuid,
                format!("compute mode could not be reset to DEFAULT after its last MPS claim left: {err}"),
            ),
        }
    }
}
