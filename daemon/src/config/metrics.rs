//! `[metrics]`: the Prometheus exporters, both off by default.
//!
//! `listen` is a loopback address only: the daemon's sandbox and its role (a
//! root process owning the node's GPUs) make a network-facing endpoint the
//! wrong place for it; a Prometheus on another host scrapes node_exporter or
//! a local agent instead. `textfile` must end in `.prom`, the only files
//! node_exporter's textfile collector reads. `pool_name` and `driver_name`
//! give the `dra_pool_name` and `dra_driver_name` labels (the DRA plugin's
//! pool and driver), so the series join with dcgm-exporter's.

use std::net::SocketAddr;
use std::path::PathBuf;

use serde::Deserialize;

use super::validate::{ConfigError, invalid};

/// The DRA driver name the plugin publishes by default (its
/// `driver_name`), the default of `driver_name` here.
pub const DEFAULT_DRIVER_NAME: &str = "gpu.nvidia.com";

/// `[metrics]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// Serve `GET /metrics` over HTTP on this loopback address (port 0: any
    /// free port, logged and put in the sd_notify status). Default: off.
    pub listen: Option<LoopbackAddr>,
    /// Write the metrics to this file (atomically) for node_exporter's
    /// textfile collector. Default: off.
    pub textfile: Option<PathBuf>,
    /// Seconds between two textfile writes (also written at start-up and at
    /// shutdown). Default 15.
    pub textfile_interval_seconds: u64,
    /// The `dra_pool_name` label: the pool the DRA plugin publishes the
    /// node's devices in, which is the Node's name. Default: env `NODE_NAME`,
    /// else the host name in lowercase (the plugin's own rule when its
    /// `node_name` is not set).
    pub pool_name: Option<String>,
    /// The `dra_driver_name` label: the plugin's `driver_name`. Default
    /// `gpu.nvidia.com`.
    pub driver_name: String,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        Self {
            listen: None,
            textfile: None,
            textfile_interval_seconds: 15,
            pool_name: None,
            driver_name: DEFAULT_DRIVER_NAME.to_owned(),
        }
    }
}

/// A socket address on the loopback interface (127.0.0.0/8 or ::1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct LoopbackAddr(SocketAddr);

impl LoopbackAddr {
    /// The address.
    pub fn addr(self) -> SocketAddr {
        self.0
    }
}

impl TryFrom<String> for LoopbackAddr {
    type Error = String;

    fn try_from(text: String) -> Result<Self, String> {
        let addr: SocketAddr = text.parse().map_err(|_| {
            format!(
                "metrics.listen: {text:?} is not an IP address and port; use e.g. \
                 \"127.0.0.1:9464\" or \"[::1]:9464\" (host names are not resolved)"
            )
        })?;
        if !addr.ip().is_loopback() {
            return Err(format!(
                "metrics.listen: {addr} is not a loopback address; gpusliced serves metrics \
                 on 127.0.0.0/8 or [::1] only. To scrape from another host, use `textfile` \
                 with node_exporter, or a local agent that scrapes 127.0.0.1"
            ));
        }
        Ok(Self(addr))
    }
}

impl MetricsConfig {
    /// Checks the textfile's name and the interval.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if let Some(path) = &self.textfile {
            let named = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.len() > ".prom".len() && n.ends_with(".prom"));
            if !named {
                return Err(invalid(
                    "metrics.textfile",
                    format!(
                        "{} must be a file name ending in .prom (node_exporter's textfile \
                         collector reads only *.prom), e.g. \
                         \"/var/lib/prometheus/node-exporter/gpuslice.prom\"",
                        path.display()
                    ),
                ));
            }
        }
        for (key, value) in [
            ("metrics.pool_name", self.pool_name.as_deref()),
            ("metrics.driver_name", Some(self.driver_name.as_str())),
        ] {
            if value.is_some_and(|v| v.is_empty() || v.chars().any(char::is_whitespace)) {
                return Err(invalid(
                    key,
                    "must be a name as the DRA plugin publishes it (not empty, no spaces)",
                ));
            }
        }
        if self.textfile_interval_seconds == 0 {
            return Err(invalid(
                "metrics.textfile_interval_seconds",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}
