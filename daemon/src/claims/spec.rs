//! Writing, checking and removing a claim's CDI spec file. The spec is
//! built from each kind's piece: the device nodes of each device from the
//! kind that owns it, which the record's device says (a slice: MIG; any
//! other device, a whole GPU shared or not: exclusive), then the edits a
//! kind adds (MPS: the daemon's pipe dir, shm and memory share).

use gpuslice_cdi::atomic::{
    AtomicStep, read_regular, remove_durable_observed, write_atomic_observed,
};

use super::access::{Cx, Kinds};
use super::env::Env;
use super::error::ClaimError;
use crate::cdi_build::{ClaimDevice, claim_spec};
use crate::crash::crash_point;
use crate::state::ClaimRecord;

/// CDI specs are world-readable: runtimes read them, and they hold no secret.
const SPEC_MODE: u32 = 0o644;
/// The largest spec file read back to compare (a spec is ~10 KB); anything
/// larger is rewritten, never read whole.
const MAX_SPEC_BYTES: u64 = 4 << 20;

/// The spec file's bytes as they should be now.
fn spec_bytes(cx: &Cx<'_>, kinds: &Kinds, record: &ClaimRecord) -> Result<Vec<u8>, ClaimError> {
    let inventory = cx.env.inventory();
    let driver = cx.env.driver();
    let mut devices = record
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
                None => kinds.exclusive.cdi_device(cx, d, gpu),
                Some(slice) => kinds.mig.cdi_device(cx, d, slice, gpu, &driver),
            }
        })
        .collect::<Result<Vec<ClaimDevice>, _>>()?;
    for kind in kinds.in_order() {
        kind.cdi_edits(cx, record, &mut devices)?;
    }
    let spec = claim_spec(
        &record.uid,
        &devices,
        &driver,
        cx.env.settings.cdi_hook.as_deref(),
    );
    gpuslice_cdi::to_json(&spec).map_err(|error| ClaimError::InvalidSpec {
        uid: record.uid.clone(),
        error,
    })
}

/// Writes the claim's spec.
pub(super) fn write(cx: &Cx<'_>, kinds: &Kinds, record: &ClaimRecord) -> Result<(), ClaimError> {
    let bytes = spec_bytes(cx, kinds, record)?;
    write_atomic_observed(
        &cx.env.settings.cdi_dir,
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
pub(super) fn ensure(cx: &Cx<'_>, kinds: &Kinds, record: &ClaimRecord) -> Result<bool, ClaimError> {
    let want = spec_bytes(cx, kinds, record)?;
    let dir = &cx.env.settings.cdi_dir;
    match read_regular(dir, &record.cdi_spec_file, MAX_SPEC_BYTES) {
        Ok(Some(have)) if have == want => return Ok(false),
        Ok(_) => {}
        Err(err) => {
            tracing::warn!(claim_uid = %record.uid, problem = %err, "replacing what sits at the claim's CDI spec path");
        }
    }
    write_atomic_observed(dir, &record.cdi_spec_file, &want, SPEC_MODE, &spec_steps).map_err(
        |error| ClaimError::CdiFile {
            uid: record.uid.clone(),
            error,
        },
    )?;
    Ok(true)
}

/// Removes the claim's spec; a missing spec is fine.
pub(super) fn remove(env: &Env, record: &ClaimRecord) -> Result<(), ClaimError> {
    remove_durable_observed(&env.settings.cdi_dir, &record.cdi_spec_file, &spec_steps)
        .map(drop)
        .map_err(|error| ClaimError::CdiFile {
            uid: record.uid.clone(),
            error,
        })
}

/// The crash points of a spec file's durable steps.
pub(super) fn spec_steps(step: AtomicStep) {
    match step {
        AtomicStep::TempSynced => crash_point("spec.after_temp_synced"),
        AtomicStep::Renamed => crash_point("spec.after_rename"),
        AtomicStep::Unlinked => crash_point("spec.after_unlink"),
    }
}
