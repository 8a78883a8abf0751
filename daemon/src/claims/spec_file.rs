//! Writing, checking and removing a claim's CDI spec file.

use gpuslice_cdi::atomic::{
    AtomicStep, read_regular, remove_durable_observed, write_atomic_observed,
};

use super::error::ClaimError;
use super::mig::cdi as mig_cdi;
use super::sharing::mps_uses;
use super::{Engine, exclusive};
use crate::cdi_build::{ClaimDevice, claim_spec};
use crate::crash::crash_point;
use crate::state::ClaimRecord;

/// CDI specs are world-readable: runtimes read them, and they hold no secret.
const SPEC_MODE: u32 = 0o644;
/// The largest spec file read back to compare (a spec is ~10 KB); anything
/// larger is rewritten, never read whole.
const MAX_SPEC_BYTES: u64 = 4 << 20;

impl Engine {
    /// The spec file's bytes as they should be now.
    fn spec_bytes(&self, record: &ClaimRecord) -> Result<Vec<u8>, ClaimError> {
        let inventory = self.inventory();
        let driver = self.env.driver();
        let devices = record
            .devices
            .iter()
            .map(|d| {
                let gpu = inventory
                    .gpu_by_uuid(&d.uuid)
                    .ok_or_else(|| ClaimError::DeviceGone {
                        uid: record.uid.clone(),
                        device: d.device.clone(),
                        uuid: d.uuid.clone(),
                    })?;
                match &d.mig {
                    Some(slice) => mig_cdi::claim_device(
                        gpu,
                        slice,
                        &d.device,
                        &self.env.settings.dev_root,
                        &driver,
                    ),
                    None => exclusive::claim_device(gpu, &d.device, &self.env.settings.dev_root),
                }
            })
            .collect::<Result<Vec<ClaimDevice>, _>>()?;
        let mut devices = devices;
        self.add_mps_edits(record, &mut devices)?;
        let spec = claim_spec(
            &record.uid,
            &devices,
            &driver,
            self.env.settings.cdi_hook.as_deref(),
        );
        gpuslice_cdi::to_json(&spec).map_err(|error| ClaimError::InvalidSpec {
            uid: record.uid.clone(),
            error,
        })
    }

    /// Gives the first device of each MPS daemon the claim uses the
    /// daemon's client edits (pipe dir, shm, the claim's memory share), so a
    /// container that gets all the request's devices gets them once.
    fn add_mps_edits(
        &self,
        record: &ClaimRecord,
        devices: &mut [ClaimDevice],
    ) -> Result<(), ClaimError> {
        let uses = mps_uses(record);
        if uses.is_empty() {
            return Ok(());
        }
        let tools = self.sharing_tools(&record.uid)?;
        for one in uses {
            let edits = tools.mps.client_edits(&one.key, &one.memory_share);
            if let Some(device) = devices.iter_mut().find(|d| d.name == one.first_device) {
                device.edits.env.extend(edits.env);
                device.edits.mounts.extend(edits.mounts);
            }
        }
        Ok(())
    }

    /// Writes the claim's spec.
    pub(super) fn write_spec(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        let bytes = self.spec_bytes(record)?;
        write_atomic_observed(
            &self.env.settings.cdi_dir,
            &record.cdi_spec_file,
            &bytes,
            SPEC_MODE,
            &spec_steps,
        )
        .map_err(|error| ClaimError::CdiFile {
            uid: record.uid.clone(),
            error,
        })
    }

    /// Rewrites the claim's spec if it is missing or differs from what it
    /// should be; true when it wrote. Whatever sits at the spec's name that is
    /// not a regular file (a planted symlink, a FIFO) is replaced, never read.
    pub(super) fn ensure_spec(&self, record: &ClaimRecord) -> Result<bool, ClaimError> {
        let want = self.spec_bytes(record)?;
        match read_regular(
            &self.env.settings.cdi_dir,
            &record.cdi_spec_file,
            MAX_SPEC_BYTES,
        ) {
            Ok(Some(have)) if have == want => return Ok(false),
            Ok(_) => {}
            Err(err) => {
                tracing::warn!(claim_uid = %record.uid, problem = %err, "replacing what sits at the claim's CDI spec path");
            }
        }
        write_atomic_observed(
            &self.env.settings.cdi_dir,
            &record.cdi_spec_file,
            &want,
            SPEC_MODE,
            &spec_steps,
        )
        .map_err(|error| ClaimError::CdiFile {
            uid: record.uid.clone(),
            error,
        })?;
        Ok(true)
    }

    /// Removes the claim's spec; a missing spec is fine.
    pub(super) fn remove_spec(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        remove_durable_observed(&self.env.settings.cdi_dir, &record.cdi_spec_file, &spec_steps)
            .map(drop)
            .map_err(|error| ClaimError::CdiFile {
                uid: record.uid.clone(),
                error,
            })
    }
}

/// The crash points of a spec file's durable steps.
pub(super) fn spec_steps(step: AtomicStep) {
    match step {
        AtomicStep::TempSynced => crash_point("spec.after_temp_synced"),
        AtomicStep::Renamed => crash_point("spec.after_rename"),
        AtomicStep::Unlinked => crash_point("spec.after_unlink"),
    }
}
