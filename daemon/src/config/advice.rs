//! `[advice]`: right-sizing advice from each claim's usage history.
//!
//! `min_observed_s` is how long a claim must be watched before advice is
//! given; `headroom_percent` is added to the observed peaks before a form
//! is judged to fit; `half_life_s` is how fast old samples lose weight in the
//! history's histograms; `max_claims` bounds the history (the least recently
//! seen claim is dropped first).

use serde::Deserialize;

use super::validate::{ConfigError, invalid};

/// Shortest half life: an hour. Shorter ones forget a daily pattern within
/// the day.
pub const MIN_HALF_LIFE_S: u64 = 3600;

/// Most claims the history may keep (about 3 KiB each at worst).
pub const MAX_CLAIMS: usize = 65_536;

/// `[advice]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AdviceConfig {
    /// Seconds a claim must be observed before it gets advice. Default 86400.
    pub min_observed_s: u64,
    /// Percent added to the observed peaks before a form must fit them,
    /// 0..=100. Default 15.
    pub headroom_percent: u32,
    /// Half life of the history's decaying histograms, seconds, at least
    /// 3600. Default 86400.
    pub half_life_s: u64,
    /// Claims the history keeps at most. Default 2048.
    pub max_claims: usize,
}

impl Default for AdviceConfig {
    fn default() -> Self {
        Self {
            min_observed_s: 86_400,
            headroom_percent: 15,
            half_life_s: 86_400,
            max_claims: 2048,
        }
    }
}

impl AdviceConfig {
    /// Checks the ranges.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.headroom_percent > 100 {
            return Err(invalid(
                "advice.headroom_percent",
                format!(
                    "{} is more than 100; use a percent from 0 to 100, e.g. 15",
                    self.headroom_percent
                ),
            ));
        }
        if self.half_life_s < MIN_HALF_LIFE_S {
            return Err(invalid(
                "advice.half_life_s",
                format!(
                    "{} is less than {MIN_HALF_LIFE_S} (an hour); use e.g. 86400 (a day)",
                    self.half_life_s
                ),
            ));
        }
        if self.max_claims == 0 || self.max_claims > MAX_CLAIMS {
            return Err(invalid(
                "advice.max_claims",
                format!(
                    "{} is outside 1..={MAX_CLAIMS}; use e.g. 2048",
                    self.max_claims
                ),
            ));
        }
        Ok(())
    }
}
