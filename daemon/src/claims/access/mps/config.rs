//! `[mps]`: where the MPS control program is, where its daemons' folders
//! go, how they are supervised and how long one gets to start. Parsed,
//! defaulted and checked here, beside the kind that uses it, as `[mig]` is;
//! the whole file's parse is `config`'s (this file stands on its floor).

use std::path::PathBuf;

use serde::Deserialize;

use crate::config::{ConfigError, invalid};

/// Longest `[mps] run_dir`: NVIDIA's control daemon (550.163.01) exits
/// without a word when its socket `<run_dir>/mps/<16 hex>/pipe/control_privileged`
/// is longer than 106 bytes (`crate::claims::mps_daemon::folders::MAX_PIPE_DIR`, which a
/// test of the mps module holds to this).
pub const MAX_MPS_RUN_DIR: usize = 61;

/// `[mps]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MpsConfig {
    /// Host path of nvidia-cuda-mps-control. Default:
    /// `<driver_root>/usr/bin/nvidia-cuda-mps-control`.
    pub control_program: Option<PathBuf>,
    /// Where daemons' folders go (`<run_dir>/mps/<hash>/`). Default /run/gpuslice.
    pub run_dir: PathBuf,
    /// "auto" (systemd units when gpusliced runs under systemd with a
    /// reachable system bus, child processes otherwise), "systemd" or "child".
    pub supervisor: SupervisorKind,
    /// What each daemon's shm folder is: "tmpfs" (a tmpfs of `shm_size`
    /// mounted by gpusliced; needs root and the host's mount namespace),
    /// "folder" (a plain folder on the run dir's filesystem, /run being a
    /// tmpfs already), or "auto" (the default: "folder" under systemd, whose
    /// sandbox forbids mounts, "tmpfs" for root otherwise, "folder" without
    /// root).
    pub shm: ShmKind,
    /// The tmpfs `size=` of each daemon's /dev/shm. Default "50%" (of RAM,
    /// as NVIDIA's drivers do).
    pub shm_size: String,
    /// Seconds a starting daemon gets to answer. Default 30.
    pub ready_timeout_s: u64,
}

/// `[mps] supervisor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SupervisorKind {
    /// systemd when available, else child.
    #[default]
    Auto,
    /// Transient systemd units over D-Bus.
    Systemd,
    /// Child processes of gpusliced.
    Child,
}

/// `[mps] shm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShmKind {
    /// "folder" under systemd or without root, "tmpfs" otherwise.
    #[default]
    Auto,
    /// A tmpfs mounted by gpusliced.
    Tmpfs,
    /// A plain folder.
    Folder,
}

impl Default for MpsConfig {
    fn default() -> Self {
        Self {
            control_program: None,
            run_dir: PathBuf::from("/run/gpuslice"),
            supervisor: SupervisorKind::Auto,
            shm: ShmKind::Auto,
            shm_size: "50%".to_owned(),
            ready_timeout_s: 30,
        }
    }
}

impl MpsConfig {
    /// Checks serde cannot express: a usable shm size, a start timeout, a
    /// run dir short enough for the daemons' sockets.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let size = &self.shm_size;
        if size.is_empty() || !size.chars().all(|c| c.is_ascii_alphanumeric() || c == '%') {
            return Err(invalid(
                "mps.shm_size",
                "must not be empty; use e.g. \"50%\" or \"8g\"",
            ));
        }
        if self.ready_timeout_s == 0 {
            return Err(invalid("mps.ready_timeout_s", "must be at least 1"));
        }
        let run_dir_len = self.run_dir.as_os_str().len();
        if run_dir_len > MAX_MPS_RUN_DIR {
            return Err(invalid(
                "mps.run_dir",
                format!(
                    "path {} is {run_dir_len} bytes; the MPS control daemon's socket \
                     <run_dir>/mps/<hash>/pipe/control_privileged must fit in a unix socket \
                     path, so at most {MAX_MPS_RUN_DIR}: choose a shorter path, e.g. \
                     /run/gpuslice",
                    self.run_dir.display()
                ),
            ));
        }
        Ok(())
    }
}
