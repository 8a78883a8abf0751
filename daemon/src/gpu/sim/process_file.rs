//! The simulated node's process folder (`[backend.sim] processes`): one JSON
//! file per fake GPU process, `<pid>.json`, written by `gpuslicectl sim exec`
//! (or a test) for a real process it started, and read by the simulator on
//! every process query. A file counts only while its process lives: `/proc/<pid>`
//! exists, the process is not a zombie and, when the file names one, its start
//! time (field 22 of `/proc/<pid>/stat`, clock ticks since boot) matches, so a
//! reused pid is not mistaken for the fake GPU process.
//!
//! Owns the file format, its writer ([`write_process_file`], atomic: temp file
//! and rename, so a reader never sees half a file), its remover, the reader of
//! the whole folder ([`read_live`]) and the `/proc` liveness check
//! ([`proc_start_time`]). It does not decide where a process runs: the
//! simulator places what it reads (see `processes`). Files it cannot read are
//! logged at debug level and skipped, never an error of the query.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::gpu::GpuError;

/// The largest process file read; anything bigger is not one of ours.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// One fake GPU process, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimProcessFile {
    /// The real process standing for the GPU process.
    pub pid: u32,
    /// Its start time (`/proc/<pid>/stat` field 22), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<u64>,
    /// The device it runs on: a GPU UUID ("GPU-…") or a MIG device UUID ("MIG-…").
    pub device: String,
    /// Framebuffer memory it uses, bytes.
    pub memory_bytes: u64,
    /// SM utilization it shows, percent (0..=100).
    pub sm_percent: u32,
    /// A client of an MPS server (listed by the MPS call, not the compute one).
    #[serde(default)]
    pub mps_client: bool,
}

/// The file of `pid` in `dir`.
pub fn process_file_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("{pid}.json"))
}

fn file_name(pid: u32) -> String {
    format!("{pid}.json")
}

fn folder_error(dir: &Path, reason: String) -> GpuError {
    GpuError::SimState {
        path: dir.display().to_string(),
        reason,
    }
}

/// Writes `process` as `<dir>/<pid>.json`, atomically (temp file, rename),
/// creating `dir` if needed. Replaces an earlier file of the same pid.
pub fn write_process_file(dir: &Path, process: &SimProcessFile) -> Result<(), GpuError> {
    let mut json = serde_json::to_vec_pretty(process).map_err(|err| {
        folder_error(dir, format!("cannot encode process {}: {err}", process.pid))
    })?;
    json.push(b'\n');
    std::fs::create_dir_all(dir)
        .map_err(|err| folder_error(dir, format!("cannot create the folder: {err}")))?;
    gpuslice_cdi::atomic::write_atomic(dir, &file_name(process.pid), &json, 0o644)
        .map_err(|err| folder_error(dir, format!("cannot write: {err}")))
}

/// Removes the file of `pid` from `dir`. `Ok(false)` when there was none.
pub fn remove_process_file(dir: &Path, pid: u32) -> Result<bool, GpuError> {
    let path = process_file_path(dir, pid);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(false),
        Err(err) => Err(folder_error(
            dir,
            format!("cannot remove {}: {err}", path.display()),
        )),
    }
}

/// The start time of process `pid` (field 22 of `/proc/<pid>/stat`, clock
/// ticks since boot); `None` when no such process lives (or it is a zombie).
pub fn proc_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (state, start) = parse_stat(&stat)?;
    (state != 'Z' && state != 'X').then_some(start)
}

/// The state (field 3) and start time (field 22) of a `/proc/<pid>/stat`
/// line. The command (field 2) may hold spaces and parentheses, so the
/// fields are counted after its last ')'.
pub(super) fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Fields 4..=21 lie between the state and the start time.
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// Whether the process a file stands for lives now.
fn is_live(file: &SimProcessFile) -> bool {
    match (proc_start_time(file.pid), file.start_time) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(now), Some(recorded)) => now == recorded,
    }
}

/// Every file in `dir` (`*.json`, not hidden) whose process lives, in name
/// order. A missing folder holds none; a folder that cannot be listed is an
/// error naming it; a file that cannot be read or parsed is skipped.
pub fn read_live(dir: &Path) -> Result<Vec<SimProcessFile>, GpuError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(folder_error(dir, format!("cannot list: {err}"))),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
        .collect();
    names.sort();
    Ok(names
        .iter()
        .filter_map(|name| read_one(dir, name))
        .filter(is_live)
        .collect())
}

fn read_one(dir: &Path, name: &str) -> Option<SimProcessFile> {
    let bytes = match gpuslice_cdi::atomic::read_regular(dir, name, MAX_FILE_BYTES) {
        Ok(Some(bytes)) => bytes,
        // Removed since the folder was listed: its process ended.
        Ok(None) => return None,
        Err(err) => {
            tracing::debug!(folder = %dir.display(), file = name, %err, "simulated process file skipped");
            return None;
        }
    };
    match serde_json::from_slice(&bytes) {
        Ok(file) => Some(file),
        Err(err) => {
            tracing::debug!(folder = %dir.display(), file = name, %err, "simulated process file skipped: not a process");
            None
        }
    }
}
