//! MIG hardware of prepared claims at start-up, made to match their records
//! again before the socket opens (and on SIGHUP):
//!
//! * a slice that is gone (a reboot destroys every MIG instance; a crash in
//!   an unprepare may have destroyed it) is made again at the same
//!   placement;
//! * a slice whose GPU instance is there without its compute instance (a
//!   crash between the two creates, or between the two destroys) gets it;
//! * the record takes the slice's ids as they are now, and the spec is
//!   rewritten, so the MIG device the kubelet is handed exists;
//! * a GPU a whole-GPU claim took out of MIG mode is taken out again when it
//!   is back in MIG mode (a crash in the claim's unprepare, after MIG mode
//!   was restored and before the record was removed).

use super::{Mig, slice_placement};
use crate::claims::access::{Cx, Restored};
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::gpu::{MigMode, MigSupport};
use crate::inventory::GpuDevice;
use crate::state::{ClaimRecord, MigSlice};

impl Mig {
    /// Makes the slices of one prepared claim match its record; the record
    /// changed when their ids did (it must then be saved and its spec
    /// rewritten, which the caller does).
    pub(super) fn restore_slices(&self, cx: &Cx<'_>, record: &mut ClaimRecord) -> Restored {
        let inventory = cx.env.inventory();
        let mut restored = Restored::default();
        for d in &mut record.devices {
            let (Some(slice), Some(gpu)) = (d.mig.as_mut(), inventory.gpu_by_uuid(&d.uuid)) else {
                continue;
            };
            match self.restore_slice(cx, gpu, slice) {
                Ok(now) => restored.record_changed |= now,
                Err(err) => restored.problems.push(format!(
                    "claim {}: cannot restore MIG slice {} of {}: {err}",
                    record.uid, d.device, gpu.name
                )),
            }
        }
        restored
    }
    /// One slice; true when its ids changed (the record must be saved).
    fn restore_slice(
        &self,
        cx: &Cx<'_>,
        gpu: &GpuDevice,
        slice: &mut MigSlice,
    ) -> Result<bool, ClaimError> {
        let index = gpu.info.index;
        let placement = slice_placement(slice);
        let instances = cx.env.backend.gpu_instances(index)?;
        let Some(gi) = instances
            .iter()
            .find(|gi| gi.profile_id == slice.profile_id && gi.placement == placement)
        else {
            slice.gpu_instance = None;
            slice.compute_instance = None;
            slice.mig_uuid = None;
            slice.created = false;
            self.reserve_slice(cx, gpu, slice)?;
            self.create_slice(cx, gpu, slice)?;
            return Ok(true);
        };
        let ci = match gi.compute_instances.first() {
            Some(ci) => ci.clone(),
            None => {
                tracing::warn!(gpu = %gpu.name, gi = gi.id, "a claim's GPU instance has no compute instance (a crash cut a create or destroy short); making it");
                cx.env.backend.create_compute_instance(index, gi.id)?
            }
        };
        let now = (Some(gi.id), Some(ci.id), Some(ci.uuid));
        let recorded = (
            slice.gpu_instance,
            slice.compute_instance,
            slice.mig_uuid.clone(),
        );
        if recorded == now {
            return Ok(false);
        }
        (slice.gpu_instance, slice.compute_instance, slice.mig_uuid) = now;
        Ok(true)
    }

    /// GPUs whole-GPU claims took out of MIG mode, back in it: out again.
    pub(in crate::claims) fn restore_whole_gpus(&self, cx: &Cx<'_>) -> Vec<String> {
        let inventory = cx.env.inventory();
        let mut problems = Vec::new();
        let records = lock(cx.table).records();
        for record in records {
            for d in record.devices.iter().filter(|d| d.restore_mig_mode) {
                let Some(gpu) = inventory.gpu_by_uuid(&d.uuid) else {
                    continue;
                };
                let enabled = matches!(
                    cx.env.backend.device_info(gpu.info.index).map(|i| i.mig),
                    Ok(MigSupport::Supported {
                        current: MigMode::Enabled,
                        ..
                    })
                );
                if !enabled {
                    continue;
                }
                tracing::warn!(claim_uid = %record.uid, gpu = %gpu.name, "the GPU of a whole-GPU claim is in MIG mode again; switching it off");
                if let Err(err) = self.take_whole_gpu(cx, gpu) {
                    problems.push(format!(
                        "claim {}: {} must be out of MIG mode for the claim: {err}",
                        record.uid, gpu.name
                    ));
                }
            }
        }
        problems
    }
}
