//! The simulated node's process folder (`[backend.sim] processes`): one JSON
//! file per fake GPU process, `<pid>.json`, written by `gpuslicectl sim exec`
//! (or a test), read here on every process query.
//!
//! The format, its writer and remover and the `/proc` liveness check are
//! the crate gpuslice-sim-files' (so that gpuslicectl writes them without
//! linking the daemon), re-exported here where the simulator and its tests
//! use them. This module adds the reader the simulator calls: a folder it
//! cannot list is a [`GpuError::SimState`]; a file it cannot read or parse
//! is logged at debug level and skipped, never an error of the query.

use std::path::Path;

pub use gpuslice_sim_files::process_file::{
    SimFileError, SimProcessFile, proc_start_time, process_file_path, remove_process_file,
    write_process_file,
};
use gpuslice_sim_files::process_file::{Skipped, read_folder};

use crate::gpu::GpuError;

/// Every file in `dir` (`*.json`, not hidden) whose process lives, in name
/// order. A missing folder holds none; a folder that cannot be listed is an
/// error naming it; a file that cannot be read or parsed is skipped.
pub fn read_live(dir: &Path) -> Result<Vec<SimProcessFile>, GpuError> {
    let folder = read_folder(dir).map_err(|err| GpuError::SimState {
        path: err.path,
        reason: err.reason,
    })?;
    for skipped in &folder.skipped {
        match skipped {
            Skipped::Unreadable { file, error } => {
                tracing::debug!(folder = %dir.display(), file, err = %error, "simulated process file skipped");
            }
            Skipped::NotAProcess { file, error } => {
                tracing::debug!(folder = %dir.display(), file, err = %error, "simulated process file skipped: not a process");
            }
        }
    }
    Ok(folder.live)
}
