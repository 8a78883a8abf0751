//! Where one control daemon's files live, `<run_dir>/mps/<key hash>/` with
//! `pipe/`, `log/` and `shm/`, and the CDI edits that give a claim's
//! containers the same pipe dir and shm. Paths and edits are pure; `create`
//! and `remove` are the only I/O.

use std::io;
use std::path::{Path, PathBuf};

use gpuslice_cdi::{ContainerEdits, Mount};

use super::key::MpsKey;

/// Name of the file holding the daemon's key.
const KEY_FILE: &str = "key";
/// Bound on the key file read back at start-up (a few dozen UUIDs).
const MAX_KEY_BYTES: u64 = 64 * 1024;
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

    /// Removes the whole folder; a missing one is fine.
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
