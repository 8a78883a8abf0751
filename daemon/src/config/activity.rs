//! `[activity]`: per-claim GPU use, sampled through the backend.
//!
//! `interval_s` is the time between two samples (0 turns sampling off);
//! `max_claim_series` bounds the per-claim metric series (one per claim and
//! device), the rest counted by `gpuslice_activity_series_dropped`.

use serde::Deserialize;

use super::validate::{ConfigError, invalid};

/// Longest sampling interval: a sample older than this says nothing useful
/// about "active now", and idle times are counted in whole samples.
pub const MAX_INTERVAL_S: u64 = 3600;

/// `[activity]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ActivityConfig {
    /// Seconds between two samples; 0: sampling off. Default 5.
    pub interval_s: u64,
    /// Per-claim metric series shown at most. Default 1024.
    pub max_claim_series: usize,
}

impl Default for ActivityConfig {
    fn default() -> Self {
        Self {
            interval_s: 5,
            max_claim_series: 1024,
        }
    }
}

impl ActivityConfig {
    /// Whether sampling is on.
    pub fn enabled(&self) -> bool {
        self.interval_s > 0
    }

    /// Checks the interval's upper bound.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.interval_s > MAX_INTERVAL_S {
            return Err(invalid(
                "activity.interval_s",
                format!(
                    "{} is more than {MAX_INTERVAL_S} (an hour); use e.g. 5, or 0 to turn sampling off",
                    self.interval_s
                ),
            ));
        }
        Ok(())
    }
}
