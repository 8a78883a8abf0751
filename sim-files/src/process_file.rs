//! The simulated node's process folder (`[backend.sim] processes`): one JSON
//! file per fake GPU process, `<pid>.json`, written by `gpuslicectl sim exec`
//! (or a test) for a real process it started, and read by gpusliced's
//! simulator on every process query. A file counts only while its process
//! lives: `/proc/<pid>` exists, the process is not a zombie and, when the
//! file names one, its start time (field 22 of `/proc/<pid>/stat`, clock
//! ticks since boot) matches, so a reused pid is not mistaken for the fake
//! GPU process.
//!
//! Owns the file format, its writer ([`write_process_file`], atomic: temp
//! file and rename, so a reader never sees half a file), its remover, the
//! reader of the whole folder ([`read_folder`], [`read_live`]) and the
//! `/proc` liveness check ([`proc_start_time`]). It does not decide where a
//! process runs: the simulator places what it reads. A file that cannot be
//! read or parsed is skipped, never an error of the read: [`read_folder`]
//! hands it back as [`Skipped`] for the caller to log (gpusliced logs it at
//! debug level).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

/// The folder could not be created, listed or written. Its words are the
/// daemon's `GpuError::SimState`, which it becomes there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("simulated GPU state {path}: {reason}")]
pub struct SimFileError {
    /// The folder.
    pub path: String,
    /// What went wrong.
    pub reason: String,
}

/// A file of the folder that is not a process file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Skipped {
    /// It could not be read (too large, not a regular file, an I/O error).
    Unreadable {
        /// Its name in the folder.
        file: String,
        /// Why.
        error: String,
    },
    /// It is not the JSON of a [`SimProcessFile`].
    NotAProcess {
        /// Its name in the folder.
        file: String,
        /// Why.
        error: String,
    },
}

/// What [`read_folder`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folder {
    /// The files whose process lives, in name order.
    pub live: Vec<SimProcessFile>,
    /// The files skipped, in name order.
    pub skipped: Vec<Skipped>,
}

/// The file of `pid` in `dir`.
pub fn process_file_path(dir: &Path, pid: u32) -> PathBuf {
    dir.join(file_name(pid))
}

fn file_name(pid: u32) -> String {
    format!("{pid}.json")
}

fn folder_error(dir: &Path, reason: String) -> SimFileError {
    SimFileError {
        path: dir.display().to_string(),
        reason,
    }
}

/// Writes `process` as `<dir>/<pid>.json`, atomically (temp file, rename),
/// creating `dir` if needed. Replaces an earlier file of the same pid.
pub fn write_process_file(dir: &Path, process: &SimProcessFile) -> Result<(), SimFileError> {
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
pub fn remove_process_file(dir: &Path, pid: u32) -> Result<bool, SimFileError> {
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
fn parse_stat(stat: &str) -> Option<(char, u64)> {
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

/// Every file in `dir` (`*.json`, not hidden): those whose process lives,
/// and those that are not process files. A missing folder holds none; a
/// folder that cannot be listed is an error naming it.
pub fn read_folder(dir: &Path) -> Result<Folder, SimFileError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(Folder::default()),
        Err(err) => return Err(folder_error(dir, format!("cannot list: {err}"))),
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| name.ends_with(".json") && !name.starts_with('.'))
        .collect();
    names.sort();
    let mut folder = Folder::default();
    for name in names {
        match read_one(dir, &name) {
            Ok(Some(file)) if is_live(&file) => folder.live.push(file),
            Ok(_) => {}
            Err(skipped) => folder.skipped.push(skipped),
        }
    }
    Ok(folder)
}

/// The files in `dir` whose process lives, in name order ([`read_folder`]
/// without what it skipped).
pub fn read_live(dir: &Path) -> Result<Vec<SimProcessFile>, SimFileError> {
    read_folder(dir).map(|folder| folder.live)
}

/// The file `name`; `Ok(None)` when it went since the folder was listed
/// (its process ended).
fn read_one(dir: &Path, name: &str) -> Result<Option<SimProcessFile>, Skipped> {
    let bytes = match gpuslice_cdi::atomic::read_regular(dir, name, MAX_FILE_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Ok(None),
        Err(err) => {
            return Err(Skipped::Unreadable {
                file: name.to_owned(),
                error: err.to_string(),
            });
        }
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|err| Skipped::NotAProcess {
            file: name.to_owned(),
            error: err.to_string(),
        })
}

#[cfg(test)]
#[path = "process_file_tests.rs"]
mod tests;
