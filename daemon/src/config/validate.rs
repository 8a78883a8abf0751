//! Checks on a parsed config that serde cannot express, and the config error type.

use std::path::PathBuf;

use super::{BackendKind, Config};

/// Longest unix socket path the kernel accepts (sun_path is 108 bytes with the NUL).
const MAX_SOCKET_PATH: usize = 107;

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
    /// Not valid TOML, an unknown key, or a value of the wrong type. The
    /// message carries the line and column.
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
        /// The dotted key, e.g. "backend.sim.gpus".
        key: &'static str,
        /// What is wrong and what to do.
        problem: String,
    },
}

pub(crate) fn invalid(key: &'static str, problem: impl Into<String>) -> ConfigError {
    ConfigError::Invalid {
        key,
        problem: problem.into(),
    }
}

impl Config {
    /// Checks the rules serde cannot: socket path length, absolute hook, names.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let socket_len = self.socket.as_os_str().len();
        if socket_len > MAX_SOCKET_PATH {
            return Err(invalid(
                "socket",
                format!(
                    "path {} is {socket_len} bytes; unix sockets allow at most {MAX_SOCKET_PATH}: \
                     choose a shorter path",
                    self.socket.display()
                ),
            ));
        }
        if let Some(group) = &self.socket_group {
            let ok = !group.is_empty()
                && group
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
            if !ok {
                return Err(invalid(
                    "socket_group",
                    format!("{group:?} is not a valid group name"),
                ));
            }
        }
        (self.backend.sim).validate(self.backend.kind == BackendKind::Sim)?;
        self.mig.validate()?;
        self.metrics.validate()?;
        self.activity.validate()?;
        self.advice.validate()?;
        self.limits.validate()?;
        if self.limits.acts() && !self.activity.enabled() {
            return Err(invalid(
                "limits",
                "overshare or unclaimed other than \"warn\", or claim_override other than \
                 \"off\", needs the activity sampler: set [activity] interval_s above 0, e.g. 5",
            ));
        }
        self.mps.validate()?;
        if self.imex.ready_timeout_s == 0 {
            return Err(invalid("imex.ready_timeout_s", "must be at least 1"));
        }
        let rack = gpuslice_imex::network::RackNetwork::parse(&self.imex.rack_network)
            .map_err(|e| invalid("imex.rack_network", e.to_string()))?;
        if let Some(bind) = self.imex.bind_address
            && !rack.is_empty()
            && let Err(err) = rack.admit(bind)
        {
            return Err(invalid(
                "imex.bind_address",
                format!("{err}: the node's own address must be on the rack's network"),
            ));
        }
        if self.log.level.trim().is_empty() {
            return Err(invalid("log.level", "must not be empty; use e.g. \"info\""));
        }
        Ok(())
    }
}
