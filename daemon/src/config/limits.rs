//! `[limits]`: what gpusliced does about a shared claim over its memory
//! share, and about a process that belongs to no claim.
//!
//! `overshare` and `unclaimed` are each "warn" (log once per episode, the
//! default and the behaviour before limits existed), "dry-run" (also log,
//! once per episode, which process would be ended) or "end" (end it);
//! `grace_s` is how long the condition must last before anything is done,
//! `term_grace_s` how long a process gets between SIGTERM and SIGKILL;
//! `claim_override` whether a claim's own `LimitsConfig` may change this;
//! `unclaimed_exempt` the process names (`comm`) never ended.

use serde::{Deserialize, Serialize};

use super::validate::{ConfigError, invalid};

/// Longest grace: a day.
pub const MAX_GRACE_S: u64 = 86_400;

/// Longest wait between SIGTERM and SIGKILL: ten minutes.
pub const MAX_TERM_GRACE_S: u64 = 600;

/// Longest `comm` the kernel keeps (`TASK_COMM_LEN` 16, with the NUL).
pub const MAX_COMM_LEN: usize = 15;

/// What to do about one kind of condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[derive(Serialize, Deserialize, strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum LimitMode {
    /// Log once per episode (the episode warning); end nothing.
    #[default]
    Warn,
    /// Log once per episode which process would be ended; end nothing.
    DryRun,
    /// End the process.
    End,
}

/// `[limits] claim_override`: whether a claim's `LimitsConfig` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[derive(strum::Display, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum ClaimOverride {
    /// A claim carrying one is refused at prepare.
    #[default]
    Off,
    /// Only a stricter mode or a shorter grace is accepted.
    Stricter,
    /// Any setting is accepted.
    Any,
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// An MPS or time-sliced claim over its memory share. Default "warn".
    pub overshare: LimitMode,
    /// A process on a GPU gpuslice owns with no claim in its environment.
    /// Default "warn".
    pub unclaimed: LimitMode,
    /// Seconds the condition must last before a process is ended (and
    /// between two actions on the same claim and device). Default 60.
    pub grace_s: u64,
    /// Seconds between SIGTERM and SIGKILL; 0: SIGKILL at once. Default 10.
    pub term_grace_s: u64,
    /// Whether a claim's `LimitsConfig` may change the mode or grace.
    /// Default "off".
    pub claim_override: ClaimOverride,
    /// Process names (`comm`) never ended, e.g. `["nv-hostengine"]`.
    /// Default: none.
    pub unclaimed_exempt: Vec<String>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            overshare: LimitMode::Warn,
            unclaimed: LimitMode::Warn,
            grace_s: 60,
            term_grace_s: 10,
            claim_override: ClaimOverride::Off,
            unclaimed_exempt: Vec::new(),
        }
    }
}

impl LimitsConfig {
    /// Whether any condition may lead to more than a warning: on the
    /// node's settings, or on a claim's own where claims may set them.
    pub fn acts(&self) -> bool {
        self.overshare != LimitMode::Warn
            || self.unclaimed != LimitMode::Warn
            || self.claim_override != ClaimOverride::Off
    }

    /// Checks the ranges and the exempt names.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.grace_s > MAX_GRACE_S {
            return Err(invalid(
                "limits.grace_s",
                format!(
                    "{} is more than {MAX_GRACE_S} (a day); use e.g. 60",
                    self.grace_s
                ),
            ));
        }
        if self.term_grace_s > MAX_TERM_GRACE_S {
            return Err(invalid(
                "limits.term_grace_s",
                format!(
                    "{} is more than {MAX_TERM_GRACE_S} (ten minutes); use e.g. 10, or 0 for \
                     SIGKILL at once",
                    self.term_grace_s
                ),
            ));
        }
        for name in &self.unclaimed_exempt {
            let len = name.len();
            if name.is_empty() || len > MAX_COMM_LEN || name.contains(['/', '\n', '\0']) {
                return Err(invalid(
                    "limits.unclaimed_exempt",
                    format!(
                        "{name:?} cannot be a process name: the kernel's comm is 1 to \
                         {MAX_COMM_LEN} bytes without '/' or newlines (as in \
                         /proc/<pid>/comm, e.g. \"nv-hostengine\")"
                    ),
                ));
            }
        }
        Ok(())
    }
}
