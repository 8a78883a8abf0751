//! `[claim_status]`: whether and how often the plugin writes each prepared
//! claim's `status.devices` entries (docs/claim-status.md), and with which
//! identity. Parsed and checked here; the writer is the plugin's
//! `claim_status` room.

use std::path::PathBuf;

use serde::Deserialize;

use super::ConfigError;

/// Least `refresh_s`: figures no more often than this per claim.
pub const MIN_REFRESH_S: u64 = 10;
/// Least `recheck_s`: a refused or dropped write is probed again at most
/// this often.
pub const MIN_RECHECK_S: u64 = 60;

/// `[claim_status]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClaimStatusConfig {
    /// `"auto"` (default): write where the API server lets us and keeps
    /// what we write (probed with a dry run; logged once either way);
    /// `"off"`: never write.
    pub mode: ClaimStatusMode,
    /// The kubeconfig of the identity that writes status: a Node-bound
    /// token of the `gpuslice-dra-plugin` ServiceAccount
    /// (packaging/rbac/claim-status.yaml). Default: the plugin's own
    /// `kubeconfig` (the kubelet's credentials by default, which the Node
    /// authorizer never lets write claim status: the probe says so).
    pub kubeconfig: Option<PathBuf>,
    /// Seconds between two writes of one claim's figures; condition changes
    /// are written at once. Default 300, at least 10.
    pub refresh_s: u64,
    /// Most writes in any minute, all claims together. Default 60, at least 1.
    pub max_writes_per_minute: u32,
    /// Seconds before a refused or dropped write is probed again.
    /// Default 3600, at least 60.
    pub recheck_s: u64,
}

/// `[claim_status] mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimStatusMode {
    /// Write where allowed and kept.
    Auto,
    /// Never write.
    Off,
}

impl Default for ClaimStatusConfig {
    fn default() -> Self {
        Self {
            mode: ClaimStatusMode::Auto,
            kubeconfig: None,
            refresh_s: 300,
            max_writes_per_minute: 60,
            recheck_s: 3600,
        }
    }
}

impl ClaimStatusConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let at_least = |key: &'static str, value: u64, least: u64, why: &str| {
            if value < least {
                Err(ConfigError::Invalid {
                    key,
                    problem: format!("{value} is below {least}: {why}"),
                })
            } else {
                Ok(())
            }
        };
        at_least(
            "[claim_status] refresh_s",
            self.refresh_s,
            MIN_REFRESH_S,
            "figures are written at most once per refresh_s per claim; condition changes are \
             written at once anyway",
        )?;
        at_least(
            "[claim_status] max_writes_per_minute",
            u64::from(self.max_writes_per_minute),
            1,
            "set [claim_status] mode = \"off\" to write nothing",
        )?;
        at_least(
            "[claim_status] recheck_s",
            self.recheck_s,
            MIN_RECHECK_S,
            "a refused or dropped write is probed again at most once a minute",
        )
    }
}
