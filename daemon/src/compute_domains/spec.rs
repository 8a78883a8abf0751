//! A channel claim's CDI spec on disk: written and removed through the
//! observed atomic writer (a crash point after each step:
//! `channel_spec.after_*`), so a crash leaves a whole spec or none, and the
//! crash-point test passes every step.

use std::path::Path;

use gpuslice_cdi::Spec;
use gpuslice_cdi::atomic::{AtomicStep, remove_durable_observed, write_atomic_observed};

use super::DomainError;
use super::cdi::spec_file_name;
use crate::crash::crash_point;

/// The mode of a spec: the container runtime's users read it.
const SPEC_MODE: u32 = 0o644;

/// The crash points of a spec's durable steps.
fn spec_steps(step: AtomicStep) {
    match step {
        AtomicStep::TempSynced => crash_point("channel_spec.after_temp_synced"),
        AtomicStep::Renamed => crash_point("channel_spec.after_rename"),
        AtomicStep::Unlinked => crash_point("channel_spec.after_unlink"),
    }
}

/// Writes claim `uid`'s `spec` to `cdi_dir`.
pub fn write(cdi_dir: &Path, uid: &str, spec: &Spec) -> Result<(), DomainError> {
    let name = spec_file_name(uid);
    let failed = |e: String| DomainError::Io {
        action: "write",
        path: cdi_dir.join(&name),
        error: std::io::Error::other(e),
    };
    let bytes = gpuslice_cdi::validate::to_json(spec).map_err(|e| failed(e.to_string()))?;
    write_atomic_observed(cdi_dir, &name, &bytes, SPEC_MODE, &spec_steps)
        .map_err(|e| failed(e.to_string()))
}

/// Removes claim `uid`'s spec from `cdi_dir`; a missing one is removed.
pub fn remove(cdi_dir: &Path, uid: &str) -> Result<(), DomainError> {
    let name = spec_file_name(uid);
    remove_durable_observed(cdi_dir, &name, &spec_steps)
        .map(|_| ())
        .map_err(|e| DomainError::Io {
            action: "remove",
            path: cdi_dir.join(&name),
            error: std::io::Error::other(e.to_string()),
        })
}
