//! The DRA plugin's one TOML file, /etc/gpuslice/gpuslice-dra-plugin.toml, in the
//! same style as gpusliced's: every key optional with a documented default,
//! unknown keys refused with line and column, relative paths taken relative
//! to the file's folder.
//!
//! This module parses, validates and resolves (node name, API-server access)
//! from values passed in: it reads no environment and opens no socket itself,
//! so every rule is testable.

mod claim_status;
mod compute_domains;
mod resolve;

use std::path::{Path, PathBuf};

use serde::Deserialize;

pub use claim_status::{ClaimStatusConfig, ClaimStatusMode, MIN_RECHECK_S, MIN_REFRESH_S};
pub use compute_domains::{
    COMPUTE_DOMAIN_DRIVER, ComputeDomainsConfig, ComputeDomainsMode, DEFAULT_LEASE_NAMESPACE,
};
pub use resolve::{ApiAccess, Environment, Resolved};

/// Default path of the config file.
pub const DEFAULT_PATH: &str = "/etc/gpuslice/gpuslice-dra-plugin.toml";

/// Longest unix socket path the kernel accepts (sun_path is 108 bytes with the NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// The DRA driver name: ResourceSlice `spec.driver`, the name the kubelet
    /// registers, and the `opaque.driver` of configs meant for us. Default
    /// `gpu.nvidia.com`, so NVIDIA's DeviceClasses and CEL selectors work.
    pub driver_name: String,
    /// The Node's name. Default: env `NODE_NAME`, else the host name in
    /// lowercase (what the kubelet uses without `--hostname-override`).
    pub node_name: Option<String>,
    /// The kubeconfig to reach the API server. Default: in-cluster
    /// credentials when `KUBERNETES_SERVICE_HOST` is set, else the kubelet's
    /// own kubeconfig, `/var/lib/kubelet/kubeconfig` (EKS AMIs' path).
    pub kubeconfig: Option<PathBuf>,
    /// gpusliced's API socket. Default /run/gpuslice/gpusliced.sock.
    pub gpusliced_socket: PathBuf,
    /// The kubelet's plugin registry folder, where the registration socket
    /// `<driver_name>-reg.sock` goes. Default /var/lib/kubelet/plugins_registry.
    pub registry_dir: PathBuf,
    /// The kubelet's plugins folder; the DRA socket is
    /// `<plugins_dir>/<driver_name>/dra.sock`. Default /var/lib/kubelet/plugins.
    pub plugins_dir: PathBuf,
    /// Seconds between two full comparisons of the published ResourceSlices
    /// with gpusliced's inventory: the safety net. Changes are published at
    /// once without it (gpusliced's WatchInventory, and a watch of the
    /// slices for deletions and foreign edits); this catches anything a
    /// watch missed. Default 30, as the kubelet plugin helper's sync delay.
    pub resync_seconds: u64,
    /// Publish unhealthy devices with a NoSchedule device taint
    /// `<driver_name>/unhealthy`. Needs the DRADeviceTaints feature gate on the
    /// cluster (alpha in 1.34); without it the API server drops taints.
    /// Default false.
    pub taint_unhealthy: bool,
    /// Seconds between two device-health lists sent to each kubelet watching
    /// (`NodeWatchResources`); the kubelet trusts one for three periods.
    /// Default 10.
    pub health_seconds: u64,
    /// Publish whole GPUs as shareable by memory (DRAConsumableCapacity,
    /// alpha in 1.34/1.35, beta from 1.36; without the gate the API server
    /// drops the fields): `allowMultipleAllocations: true` and a `memory`
    /// capacity `requestPolicy` whose default is all the memory (a claim that
    /// asks for none still takes the GPU alone), minimum and step 1Mi. The
    /// scheduler then packs claims by memory; gpusliced enforces an MPS
    /// claim's consumed memory as its pinned memory limit. Default false.
    pub consumable_capacity: bool,
    /// Writing usage into each prepared claim's status.
    pub claim_status: ClaimStatusConfig,
    /// Serving ComputeDomain channels (the second driver).
    pub compute_domains: ComputeDomainsConfig,
    /// Logging.
    pub log: LogConfig,
}

/// `[log]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// A tracing filter, e.g. "info" or "gpuslice_dra_plugin=debug". Env
    /// `GPUSLICE_LOG` overrides it. Default "info".
    pub level: String,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            driver_name: "gpu.nvidia.com".to_owned(),
            node_name: None,
            kubeconfig: None,
            gpusliced_socket: PathBuf::from("/run/gpuslice/gpusliced.sock"),
            registry_dir: PathBuf::from("/var/lib/kubelet/plugins_registry"),
            plugins_dir: PathBuf::from("/var/lib/kubelet/plugins"),
            resync_seconds: 30,
            taint_unhealthy: false,
            health_seconds: 10,
            consumable_capacity: false,
            claim_status: ClaimStatusConfig::default(),
            compute_domains: ComputeDomainsConfig::default(),
            log: LogConfig::default(),
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

/// A config that cannot be used, with what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// Not valid TOML, an unknown key, or a value of the wrong type.
    #[error("config file {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// toml's message, with line, column and the offending text.
        message: String,
    },
    /// A value that parses but cannot work.
    #[error("config key {key}: {problem}")]
    Invalid {
        /// The key, e.g. "driver_name".
        key: &'static str,
        /// What is wrong and what to do.
        problem: String,
    },
}

impl Config {
    /// Reads and validates the file at `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Read {
            path: path.to_path_buf(),
            error,
        })?;
        let base = path.parent().unwrap_or_else(|| Path::new("."));
        Self::parse(&text, path, base)
    }

    /// Parses `text` (from `origin`, for messages), makes relative paths
    /// relative to `base`, and validates.
    pub fn parse(text: &str, origin: &Path, base: &Path) -> Result<Self, ConfigError> {
        let mut config: Self = toml::from_str(text).map_err(|err| ConfigError::Parse {
            path: origin.to_path_buf(),
            message: err.to_string(),
        })?;
        for path in [
            &mut config.gpusliced_socket,
            &mut config.registry_dir,
            &mut config.plugins_dir,
        ] {
            *path = base.join(&*path);
        }
        for kubeconfig in [
            config.kubeconfig.as_mut(),
            config.claim_status.kubeconfig.as_mut(),
            config.compute_domains.kubeconfig.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            *kubeconfig = base.join(&*kubeconfig);
        }
        config.validate()?;
        Ok(config)
    }

    /// The DRA socket the kubelet dials: `<plugins_dir>/<driver>/dra.sock`.
    pub fn dra_socket(&self) -> PathBuf {
        self.dra_socket_of(&self.driver_name)
    }

    /// The registration socket the kubelet watches:
    /// `<registry_dir>/<driver>-reg.sock`.
    pub fn registration_socket(&self) -> PathBuf {
        self.registration_socket_of(&self.driver_name)
    }

    /// `driver`'s DRA socket (each driver the plugin serves has its own).
    pub fn dra_socket_of(&self, driver: &str) -> PathBuf {
        self.plugins_dir.join(driver).join("dra.sock")
    }

    /// `driver`'s registration socket (one per driver: the kubelet registers
    /// each socket in its registry folder as one plugin).
    pub fn registration_socket_of(&self, driver: &str) -> PathBuf {
        self.registry_dir.join(format!("{driver}-reg.sock"))
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if !gpuslice_publish::names::is_dns_subdomain(&self.driver_name)
            || self.driver_name.len() > 63
        {
            return Err(ConfigError::Invalid {
                key: "driver_name",
                problem: format!(
                    "{:?} is not a DNS subdomain of at most 63 characters (lowercase letters, \
                     digits, '-' and '.'), e.g. \"gpu.nvidia.com\"",
                    self.driver_name
                ),
            });
        }
        if let Some(node) = &self.node_name {
            resolve::check_node_name(node)?;
        }
        for (key, seconds) in [
            ("resync_seconds", self.resync_seconds),
            ("health_seconds", self.health_seconds),
        ] {
            if seconds == 0 {
                return Err(ConfigError::Invalid {
                    key,
                    problem: "must be at least 1".to_owned(),
                });
            }
        }
        self.claim_status.validate()?;
        self.compute_domains.validate()?;
        let channels = (self.compute_domains.enabled != ComputeDomainsMode::Off).then(|| {
            [
                ("plugins_dir", self.dra_socket_of(COMPUTE_DOMAIN_DRIVER)),
                (
                    "registry_dir",
                    self.registration_socket_of(COMPUTE_DOMAIN_DRIVER),
                ),
            ]
        });
        for (key, path) in [
            ("plugins_dir", self.dra_socket()),
            ("registry_dir", self.registration_socket()),
            ("gpusliced_socket", self.gpusliced_socket.clone()),
        ]
        .into_iter()
        .chain(channels.into_iter().flatten())
        {
            if path.as_os_str().len() > MAX_SOCKET_PATH {
                return Err(ConfigError::Invalid {
                    key,
                    problem: format!(
                        "socket path {} is longer than {MAX_SOCKET_PATH} bytes; use a shorter folder",
                        path.display()
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
