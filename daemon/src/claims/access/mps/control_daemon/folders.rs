//! Where one control daemon's files live, `<run_dir>/mps/<key hash>/` with
//! `pipe/`, `log/` and `shm/`, and the CDI edits that give a claim's
//! containers the same pipe dir and shm. Paths and edits are pure; `create`,
//! `remove` and the reads of the key file and the log are the only I/O.
//!
//! NVIDIA's control daemon (550.163.01) leaves `control`, `control_lock`
//! and `control_privileged` in its pipe dir when it quits (and a `log` FIFO
//! and its pid file when it is killed); only removing the folder leaves
//! nothing. Its pipe dir may be at most [`MAX_PIPE_DIR`] bytes long.

use std::io;
use std::path::{Path, PathBuf};

use gpuslice_cdi::{ContainerEdits, Mount};

use super::key::MpsKey;

/// Name of the file holding the daemon's key.
const KEY_FILE: &str = "key";
/// Bound on the key file read back at start-up (a few dozen UUIDs).
const MAX_KEY_BYTES: u64 = 64 * 1024;
/// The daemon's log in its log dir: NVIDIA's daemon writes it itself only
/// with `-d`; in the foreground (`-f`, as gpusliced runs it) it prints its
/// log lines on stdout, which the child supervisor appends here (systemd
/// sends them to the unit's journal).
pub const LOG_FILE: &str = "control.log";
/// The longest pipe dir NVIDIA's control daemon runs with: its socket
/// `<pipe>/control_privileged` must be at most 106 bytes (measured on
/// 550.163.01: 107 and longer exit 1 without a word), so with the
/// 16-character hash `<run_dir>/mps/<hash>/pipe` leaves `run_dir` 61.
pub const MAX_PIPE_DIR: usize = 106 - "/control_privileged".len();
/// Bytes of a daemon's log quoted in an error about its start.
const LOG_TAIL_BYTES: usize = 300;
/// Mount options of the bind mounts handed to containers.
const BIND_OPTIONS: [&str; 4] = ["rw", "nosuid", "nodev", "bind"];

/// The folders of one control daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonFolders {
    root: PathBuf,
}

impl DaemonFolders {
    /// The folders of `key`'s daemon under `mps_dir` (`<run_dir>/mps`).
    pub fn new(mps_dir: &Path, key: &MpsKey) -> Self {
        Self::at(mps_dir.join(key.hash()))
    }

    /// The folders rooted at `root` (a folder found at start-up).
    pub fn at(root: PathBuf) -> Self {
        Self { root }
    }

    /// `<run_dir>/mps/<hash>`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `CUDA_MPS_PIPE_DIRECTORY`: the control socket and pid file.
    pub fn pipe_dir(&self) -> PathBuf {
        self.root.join("pipe")
    }

    /// `CUDA_MPS_LOG_DIRECTORY`: control.log and server.log.
    pub fn log_dir(&self) -> PathBuf {
        self.root.join("log")
    }

    /// The daemon's output, when the child supervisor runs it.
    pub fn log_file(&self) -> PathBuf {
        self.log_dir().join(LOG_FILE)
    }

    /// Refuses a pipe dir the control daemon cannot bind its sockets in.
    pub fn check_pipe_dir(&self) -> Result<(), super::MpsError> {
        let pipe_dir = self.pipe_dir();
        let length = pipe_dir.as_os_str().len();
        if length > MAX_PIPE_DIR {
            return Err(super::MpsError::PipeDirTooLong {
                pipe_dir,
                length,
                max: MAX_PIPE_DIR,
            });
        }
        Ok(())
    }

    /// Where the daemon's output is, for an error about its start (the
    /// folder of a failed start is removed, so the log's last lines are
    /// quoted): `journalctl -u <unit>` under systemd, else the log file
    /// and how it ended.
    pub fn log_note(&self, unit: Option<&str>) -> String {
        if let Some(unit) = unit {
            return format!("journalctl -u {unit}");
        }
        let path = self.log_file();
        match log_tail(&path) {
            Some(tail) => format!("{}, which ended: {tail}", path.display()),
            None => format!("{} (empty)", path.display()),
        }
    }

    /// The tmpfs bound at /dev/shm in the daemon and in every client.
    pub fn shm_dir(&self) -> PathBuf {
        self.root.join("shm")
    }

    /// The file holding the daemon's key, so start-up can tell what a folder was for.
    pub fn key_file(&self) -> PathBuf {
        self.root.join(KEY_FILE)
    }

    /// Creates the folders (mode 0755 from the umask; the pipe dir must be
    /// reachable by the claim's clients).
    pub fn create(&self, key: &MpsKey) -> io::Result<()> {
        for dir in [self.pipe_dir(), self.log_dir(), self.shm_dir()] {
            std::fs::create_dir_all(dir)?;
        }
        gpuslice_cdi::write_atomic(
            &self.root,
            KEY_FILE,
            key.visible_devices().as_bytes(),
            0o644,
        )
        .map_err(io::Error::other)
    }

    /// The UUIDs in the key file; none when it is missing, unreadable or
    /// not a small regular file.
    pub fn read_key(&self) -> Vec<String> {
        let path = self.key_file();
        let small_file = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.file_type().is_file() && m.len() <= MAX_KEY_BYTES);
        if !small_file {
            return Vec::new();
        }
        std::fs::read_to_string(&path)
            .map(|text| {
                text.trim()
                    .split(',')
                    .filter(|u| !u.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Removes the whole folder (with what the daemon left in it); a
    /// missing one is fine.
    pub fn remove(&self) -> io::Result<()> {
        match std::fs::remove_dir_all(&self.root) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// Edits for every container of a claim on this daemon: the pipe dir at
    /// the same path as on the host (both NVIDIA projects keep them equal),
    /// `CUDA_MPS_PIPE_DIRECTORY`, the claim's own memory limit when it has
    /// one, and the daemon's shm at /dev/shm when `with_shm` (the daemon sees
    /// the same folder there; otherwise daemon and clients both keep the
    /// host's /dev/shm, which is also one shared filesystem).
    pub fn cdi_edits(&self, client_memory_env: Option<String>, with_shm: bool) -> ContainerEdits {
        let pipe = self.pipe_dir().display().to_string();
        let bind = |host: String, container: String| Mount {
            host_path: host,
            container_path: container,
            options: BIND_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
            mount_type: None,
        };
        let mut env = vec![format!("CUDA_MPS_PIPE_DIRECTORY={pipe}")];
        env.extend(client_memory_env);
        let mut mounts = vec![bind(pipe.clone(), pipe)];
        if with_shm {
            mounts.push(bind(
                self.shm_dir().display().to_string(),
                "/dev/shm".to_owned(),
            ));
        }
        ContainerEdits {
            env,
            mounts,
            ..ContainerEdits::default()
        }
    }
}

/// The last lines of `path` (timestamps and pids dropped), at most
/// [`LOG_TAIL_BYTES`]; none when it is missing or empty.
fn log_tail(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let lines: Vec<&str> = text
        .lines()
        .map(|line| strip_log_prefix(line).trim())
        .filter(|line| !line.is_empty())
        .collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    let skip = tail.chars().count().saturating_sub(LOG_TAIL_BYTES);
    let tail: String = tail.chars().skip(skip).collect();
    (!tail.is_empty()).then_some(tail)
}

/// A log line without the daemon's `[2026-12-05 14:00:41.534 Control 12773] `
/// (`Control`, or `Server`, or `Other` for a process that wrote into its log
/// FIFO).
pub fn strip_log_prefix(line: &str) -> &str {
    line.strip_prefix('[')
        .and_then(|rest| rest.split_once("] "))
        .filter(|(prefix, _)| {
            // The pid is padded to five places: "Control  2732".
            let parts: Vec<&str> = prefix.split_whitespace().collect();
            parts.len() == 4 && parts[0].len() == 10 && parts[3].chars().all(|c| c.is_ascii_digit())
        })
        .map_or(line, |(_, text)| text)
}
