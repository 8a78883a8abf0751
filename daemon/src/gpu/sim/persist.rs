//! The simulated node's hardware state on disk, so that it outlives a daemon
//! restart as real MIG instances do (`[backend.sim] hardware_state`).
//!
//! One JSON file naming the node it describes (seed and models) and the boot
//! it was written in (`/proc/sys/kernel/random/boot_id`), written whole and
//! atomically after every change. At open: no file is a fresh boot; a file for
//! another node (seed or models differ) is refused, because it would hand one
//! GPU's instances to another; a file from an earlier boot is taken through
//! the reboot rules ([`SimGpuState::after_reboot`]). The default path is under
//! the runtime dir (a tmpfs), so a real reboot also removes it; point it at a
//! persistent path to keep Ampere's MIG mode across reboots as the InfoROM does.
//!
//! Several processes may drive one node, as gpusliced and nvidia-smi drive
//! one GPU (the NVML of gpuslice-nvml-sim opens the same file in each): a
//! verb holds the lock file beside the state (`<file>.lock`, [`lock`]),
//! shared to read and exclusive to change, and reads the file again under
//! it ([`reread`]), so a change one process makes is what the next call of
//! another sees.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use serde::{Deserialize, Serialize};

use super::hardware::SimGpuState;
use super::models::SimModel;
use crate::gpu::GpuError;

/// Version of the file format.
pub const FORMAT_VERSION: u32 = 1;

/// Where Linux publishes the current boot's id.
pub const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

/// The file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareFile {
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// `[backend.sim] seed` of the node.
    pub seed: String,
    /// The models, in index order.
    pub gpus: Vec<SimModel>,
    /// The boot the state belongs to.
    pub boot_id: String,
    /// One state per GPU, in index order.
    pub state: Vec<SimGpuState>,
}

/// What [`load`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loaded {
    /// No file: the node boots fresh.
    Absent,
    /// A file from this boot: the state as it was.
    SameBoot(Vec<SimGpuState>),
    /// A file from an earlier boot: the state before the reboot.
    EarlierBoot(Vec<SimGpuState>),
}

/// The current boot id, or `None` where the kernel does not publish one.
pub fn current_boot_id() -> Option<String> {
    let text = std::fs::read_to_string(BOOT_ID_PATH).ok()?;
    Some(text.trim().to_owned()).filter(|id| !id.is_empty())
}

fn state_error(path: &Path, reason: impl Into<String>) -> GpuError {
    GpuError::SimState {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// Reads the file at `path` for the node (`seed`, `gpus`) in boot `boot_id`.
pub fn load(path: &Path, seed: &str, gpus: &[SimModel], boot_id: &str) -> Result<Loaded, GpuError> {
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(err)
            if matches!(
                err.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Loaded::Absent);
        }
        Err(err) => return Err(state_error(path, format!("cannot read: {err}"))),
    };
    let file: HardwareFile = serde_json::from_slice(&text).map_err(|err| {
        state_error(
            path,
            format!("not a simulated hardware state file ({err}); delete it to boot the simulated node fresh"),
        )
    })?;
    if file.version != FORMAT_VERSION {
        return Err(state_error(
            path,
            format!(
                "format version {} (this daemon reads {FORMAT_VERSION}); delete it to boot fresh",
                file.version
            ),
        ));
    }
    if file.seed != seed || file.gpus != gpus || file.state.len() != gpus.len() {
        return Err(state_error(
            path,
            format!(
                "describes another simulated node (seed {:?}, GPUs [{}]) than the config \
                 (seed {seed:?}, GPUs [{}]); delete it to boot this node fresh, or point \
                 backend.sim.hardware_state elsewhere",
                file.seed,
                names(&file.gpus),
                names(gpus)
            ),
        ));
    }
    Ok(if file.boot_id == boot_id {
        Loaded::SameBoot(file.state)
    } else {
        Loaded::EarlierBoot(file.state)
    })
}

fn names(gpus: &[SimModel]) -> String {
    gpus.iter()
        .map(SimModel::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The state as the file at `path` holds it now, for the node (`seed`,
/// `gpus`), whatever boot wrote it: `None` when there is no file to read
/// (removed, or its folder gone), so the caller keeps what it has.
pub fn reread(
    path: &Path,
    seed: &str,
    gpus: &[SimModel],
) -> Result<Option<Vec<SimGpuState>>, GpuError> {
    match load(path, seed, gpus, "") {
        Ok(Loaded::Absent) => Ok(None),
        Ok(Loaded::SameBoot(state) | Loaded::EarlierBoot(state)) => Ok(Some(state)),
        Err(err) => Err(err),
    }
}

/// Which write of the state file is on disk: every write replaces the
/// file (a new inode), so an unchanged version means unchanged contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileVersion {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
}

/// The version of the file at `path`; `None` where there is none.
pub fn version(path: &Path) -> Option<FileVersion> {
    let meta = std::fs::metadata(path).ok()?;
    Some(FileVersion {
        dev: meta.dev(),
        ino: meta.ino(),
        len: meta.len(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
    })
}

/// A lock on a node's state file against the other processes that drive it
/// (an advisory `flock` of `<file>.lock`); released when dropped.
#[derive(Debug)]
pub struct FileLock {
    _held: Flock<File>,
}

/// The lock file of the state file at `path`.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the lock of the state file at `path`, `exclusive` to change the
/// state, else shared; waits while another process holds it. `None` where
/// the lock file cannot be made (its folder is gone or read-only): the
/// caller goes on alone, as a node no other process drives.
pub fn lock(path: &Path, exclusive: bool) -> Option<FileLock> {
    let lock = lock_path(path);
    if let Some(dir) = lock.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).ok()?;
    }
    let file = (std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&lock))
    .map_err(|err| {
        tracing::debug!(lock = %lock.display(), %err, "simulated state not locked");
    })
    .ok()?;
    let how = if exclusive {
        FlockArg::LockExclusive
    } else {
        FlockArg::LockShared
    };
    match Flock::lock(file, how) {
        Ok(held) => Some(FileLock { _held: held }),
        Err((_, err)) => {
            tracing::debug!(lock = %lock.display(), %err, "simulated state not locked");
            None
        }
    }
}

/// Writes the whole node state to `path`, atomically (mode 0644).
pub fn save(path: &Path, file: &HardwareFile) -> Result<(), GpuError> {
    let (dir, name) = split(path)?;
    let mut json = serde_json::to_vec_pretty(file)
        .map_err(|err| state_error(path, format!("cannot encode: {err}")))?;
    json.push(b'\n');
    std::fs::create_dir_all(&dir)
        .map_err(|err| state_error(path, format!("cannot create its folder: {err}")))?;
    gpuslice_cdi::atomic::write_atomic(&dir, &name, &json, 0o644)
        .map_err(|err| state_error(path, format!("cannot write: {err}")))
}

/// The folder and file name of `path`.
fn split(path: &Path) -> Result<(PathBuf, String), GpuError> {
    let name = (path.file_name())
        .and_then(|n| n.to_str())
        .ok_or_else(|| state_error(path, "the path names no file"))?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    Ok((dir.unwrap_or(Path::new(".")).to_path_buf(), name.to_owned()))
}
