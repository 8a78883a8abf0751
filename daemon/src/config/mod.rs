//! The daemon's one TOML file, /etc/gpuslice/gpuslice.toml.
//!
//! Every key is optional and has a documented default ([`Config::default`]);
//! unknown keys are refused with their line and column, so a typo never goes
//! unnoticed. Relative paths are taken relative to the config file's folder.
//! This module only parses and validates: it opens no socket and creates no
//! folder.

mod activity;
mod advice;
mod imex;
mod limits;
mod metrics;
mod sim;
mod validate;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use activity::ActivityConfig;
pub use advice::AdviceConfig;
pub use imex::ImexConfig;
pub use limits::{ClaimOverride, LimitMode, LimitsConfig, MAX_GRACE_S};
pub use metrics::{DEFAULT_DRIVER_NAME, LoopbackAddr, MetricsConfig};
pub use sim::{DEFAULT_CLUSTER_UUID, SimConfig, SimFabricConfig};
pub use validate::ConfigError;
pub(crate) use validate::invalid;

pub use crate::claims::access::mig::config::{
    MigConfig, MigCreate, MigGpuConfig, MigOffering, advertise_text,
};
pub use crate::claims::access::mps::config::{MAX_MPS_RUN_DIR, MpsConfig, ShmKind, SupervisorKind};
pub use crate::claims::access::timeslicing::config::TimeSliceConfig;

/// Default path of the config file.
pub const DEFAULT_PATH: &str = "/etc/gpuslice/gpuslice.toml";

/// File name of the simulated hardware state when no path is configured.
pub const SIM_HARDWARE_STATE_FILE: &str = "sim-hardware.json";

/// File name of the simulated health events when no path is configured.
pub const SIM_HEALTH_EVENTS_FILE: &str = "sim-health-events";
/// Default folder name of the simulated backend's fake GPU processes.
pub const SIM_PROCESSES_DIR: &str = "sim-processes";

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The API socket. Default /run/gpuslice/gpusliced.sock.
    pub socket: PathBuf,
    /// Group that owns the socket (mode 0660) and may call the API besides
    /// root. Default: none (the daemon's own group; only root and the daemon's
    /// own user may call).
    pub socket_group: Option<String>,
    /// Claim records. Default /var/lib/gpuslice.
    pub state_dir: PathBuf,
    /// Where per-claim CDI specs go. Default /var/run/cdi.
    pub cdi_dir: PathBuf,
    /// Root of the NVIDIA driver installation on the host. Default /.
    pub driver_root: PathBuf,
    /// Root under which the /dev/nvidia* nodes are found. Default: driver_root.
    pub dev_root: Option<PathBuf>,
    /// Host path of nvidia-cdi-hook; when set, specs carry its update-ldcache
    /// hook. Default: none (no hooks).
    pub cdi_hook: Option<PathBuf>,
    /// Which GPUs the daemon drives.
    pub backend: BackendConfig,
    /// MIG partitioning.
    pub mig: MigConfig,
    /// Logging.
    pub log: LogConfig,
    /// `[mps]`: MPS control daemons.
    pub mps: MpsConfig,
    /// `[timeslice]`: compute time-slicing.
    pub timeslice: TimeSliceConfig,
    /// `[health]`: device health events.
    pub health: HealthConfig,
    /// `[metrics]`: the Prometheus exporters (off by default).
    pub metrics: MetricsConfig,
    /// `[activity]`: per-claim GPU use (sampled every 5 s by default).
    pub activity: ActivityConfig,
    /// `[advice]`: right-sizing advice from the usage history.
    pub advice: AdviceConfig,
    /// `[limits]`: over-shares and unclaimed processes warned of, or ended.
    pub limits: LimitsConfig,
    /// `[imex]`: the IMEX daemon of a ComputeDomain's channels.
    pub imex: ImexConfig,
}

/// `[health]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HealthConfig {
    /// XIDs that do not make a device unhealthy, besides NVIDIA's default
    /// list (13, 31, 43, 45, 68, 109). Default: none.
    pub ignore_xids: Vec<u64>,
}

/// `[backend]`: the hardware boundary.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackendConfig {
    /// "nvml" (real GPUs, the default) or "sim" (simulated GPUs).
    pub kind: BackendKind,
    /// `[backend.nvml]`.
    pub nvml: NvmlConfig,
    /// `[backend.sim]`.
    pub sim: SimConfig,
}

/// The backend kind; there is no automatic choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// Real GPUs through NVML.
    #[default]
    Nvml,
    /// Simulated GPUs.
    Sim,
}

/// `[backend.nvml]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NvmlConfig {
    /// Path of libnvidia-ml.so.1. Default: the dynamic loader's search.
    pub library: Option<PathBuf>,
    /// Where the host's sysfs is mounted, read for each GPU's PCIe root and
    /// NUMA node. Default /sys.
    pub sysfs_root: Option<PathBuf>,
}

/// `[log]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// A tracing filter, e.g. "info" or "gpuslice=debug". Default "info";
    /// the GPUSLICE_LOG environment variable overrides it.
    pub level: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            socket: PathBuf::from("/run/gpuslice/gpusliced.sock"),
            socket_group: None,
            state_dir: PathBuf::from("/var/lib/gpuslice"),
            cdi_dir: PathBuf::from("/var/run/cdi"),
            driver_root: PathBuf::from("/"),
            dev_root: None,
            cdi_hook: None,
            backend: BackendConfig::default(),
            mig: MigConfig::default(),
            log: LogConfig::default(),
            mps: MpsConfig::default(),
            timeslice: TimeSliceConfig::default(),
            health: HealthConfig::default(),
            metrics: MetricsConfig::default(),
            activity: ActivityConfig::default(),
            advice: AdviceConfig::default(),
            limits: LimitsConfig::default(),
            imex: ImexConfig::default(),
        }
    }
}

impl Default for BackendConfig {
    fn default() -> Self {
        Self {
            kind: BackendKind::Nvml,
            nvml: NvmlConfig::default(),
            sim: SimConfig::default(),
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            level: "info".to_owned(),
        }
    }
}

impl Config {
    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let base = parent.unwrap_or(Path::new("."));
        let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
        Self::parse(&text, path, &base)
    }

    /// Parses `text` (read from `origin`), resolves relative paths against
    /// `base` and validates the result.
    pub fn parse(text: &str, origin: &Path, base: &Path) -> Result<Self, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|err| ConfigError::Parse {
            path: origin.to_path_buf(),
            message: err.to_string(),
        })?;
        config.resolve_relative(base);
        config.validate()?;
        Ok(config)
    }

    /// The root of the /dev/nvidia* nodes.
    pub fn dev_root(&self) -> &Path {
        self.dev_root.as_deref().unwrap_or(&self.driver_root)
    }

    /// The MPS control program: `[mps] control_program`, or the driver's.
    pub fn mps_control_program(&self) -> PathBuf {
        self.mps
            .control_program
            .clone()
            .unwrap_or_else(|| self.driver_root.join("usr/bin/nvidia-cuda-mps-control"))
    }

    /// nvidia-smi: `[timeslice] nvidia_smi`, or the driver's.
    pub fn nvidia_smi(&self) -> PathBuf {
        self.timeslice
            .nvidia_smi
            .clone()
            .unwrap_or_else(|| self.driver_root.join("usr/bin/nvidia-smi"))
    }

    /// nvidia-imex: `[imex] program`, or the driver's.
    pub fn imex_program(&self) -> PathBuf {
        self.imex
            .program
            .clone()
            .unwrap_or_else(|| self.driver_root.join("usr/bin/nvidia-imex"))
    }

    /// `[imex] rack_network`, as `validate` checked it.
    pub fn imex_rack(&self) -> gpuslice_imex::network::RackNetwork {
        gpuslice_imex::network::RackNetwork::parse(&self.imex.rack_network).unwrap_or_default()
    }

    /// nvidia-imex-ctl: `[imex] ctl_program`, or the driver's.
    pub fn imex_ctl_program(&self) -> PathBuf {
        self.imex
            .ctl_program
            .clone()
            .unwrap_or_else(|| self.driver_root.join("usr/bin/nvidia-imex-ctl"))
    }

    /// Where the simulated backend keeps its hardware state:
    /// `backend.sim.hardware_state`, or `sim-hardware.json` in the socket's
    /// folder (the daemon's runtime dir, /run/gpuslice by default).
    pub fn sim_hardware_state(&self) -> PathBuf {
        self.backend.sim.hardware_state.clone().unwrap_or_else(|| {
            let dir = self.socket.parent().unwrap_or(Path::new("/run/gpuslice"));
            dir.join(SIM_HARDWARE_STATE_FILE)
        })
    }

    /// Where the simulated backend reads injected health events:
    /// `backend.sim.health_events`, or `sim-health-events` in the folder of
    /// [`Config::sim_hardware_state`].
    pub fn sim_health_events(&self) -> PathBuf {
        self.backend.sim.health_events.clone().unwrap_or_else(|| {
            let state = self.sim_hardware_state();
            let dir = state.parent().unwrap_or(Path::new("/run/gpuslice"));
            dir.join(SIM_HEALTH_EVENTS_FILE)
        })
    }

    /// Where the simulated backend finds its fake GPU processes:
    /// `backend.sim.processes`, or `sim-processes` in the folder of
    /// [`Config::sim_hardware_state`].
    pub fn sim_processes(&self) -> PathBuf {
        self.backend.sim.processes.clone().unwrap_or_else(|| {
            let state = self.sim_hardware_state();
            let dir = state.parent().unwrap_or(Path::new("/run/gpuslice"));
            dir.join(SIM_PROCESSES_DIR)
        })
    }

    fn resolve_relative(&mut self, base: &Path) {
        let resolve = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = normalize(&base.join(&*p));
            }
        };
        resolve(&mut self.socket);
        resolve(&mut self.state_dir);
        resolve(&mut self.cdi_dir);
        resolve(&mut self.driver_root);
        resolve(&mut self.mps.run_dir);
        resolve(&mut self.imex.run_dir);
        for p in [
            &mut self.dev_root,
            &mut self.cdi_hook,
            &mut self.backend.nvml.library,
            &mut self.backend.nvml.sysfs_root,
            &mut self.mps.control_program,
            &mut self.timeslice.nvidia_smi,
            &mut self.imex.program,
            &mut self.imex.ctl_program,
            &mut self.backend.sim.hardware_state,
            &mut self.backend.sim.health_events,
            &mut self.backend.sim.processes,
            &mut self.metrics.textfile,
        ] {
            if let Some(p) = p.as_mut() {
                resolve(p);
            }
        }
    }
}

/// Removes `.` and `..` components lexically ("/a/b/../c" → "/a/c").
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;
