//! Compute mode of shared whole GPUs: EXCLUSIVE_PROCESS under MPS (only the
//! MPS server may hold a context), DEFAULT under time-slicing and after the
//! last shared claim leaves. Set through the backend (NVML), not persistent
//! across a reboot, which is why start-up sets it again.

use super::SharedGpus;
use crate::claims::access::Cx;
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

impl SharedGpus {
    /// Sets `mode` on the whole GPU `uuid` unless it has it already; returns
    /// the change made, if any.
    pub(in crate::claims) fn ensure_compute_mode(
        cx: &Cx<'_>,
        uuid: &str,
        mode: ComputeMode,
    ) -> Result<Option<ModeChange>, ClaimError> {
        let inventory = cx.env.inventory();
        let Some(gpu) = inventory.gpu_by_uuid(uuid) else {
            return Ok(None);
        };
        let index = gpu.info.index;
        let before = cx.env.backend.compute_mode(index)?;
        if before == mode {
            return Ok(None);
        }
        cx.env.backend.set_compute_mode(index, mode)?;
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
        cx: &Cx<'_>,
        uuids: &[String],
        mode: ComputeMode,
    ) -> Result<Vec<ModeChange>, ClaimError> {
        let mut changed = Vec::new();
        for uuid in uuids {
            match Self::ensure_compute_mode(cx, uuid, mode) {
                Ok(change) => changed.extend(change),
                Err(err) => {
                    self.undo_compute_modes(cx, &changed);
                    return Err(err);
                }
            }
        }
        Ok(changed)
    }

    /// Puts back modes changed by a prepare that failed; a failure here
    /// leaves the GPU degraded.
    pub(in crate::claims) fn undo_compute_modes(&self, cx: &Cx<'_>, changes: &[ModeChange]) {
        for change in changes {
            if let Err(err) = Self::ensure_compute_mode(cx, &change.uuid, change.before) {
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
    pub(in crate::claims) fn reset_compute_mode(&self, cx: &Cx<'_>, uuid: &str) {
        match Self::ensure_compute_mode(cx, uuid, ComputeMode::Default) {
            Ok(_) => self.clear_degraded(uuid),
            Err(err) => self.mark_degraded(
                uuid,
                format!("compute mode could not be reset to DEFAULT after its last MPS claim left: {err}"),
            ),
        }
    }
}
