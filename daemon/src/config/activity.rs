//! `[activity]`: per-claim GPU use, sampled through the backend.
//!
//! `interval_s` is the time between two samples (0 turns sampling off);
//! `max_claim_series` bounds the per-claim metric series (one per claim and
//! device), the rest counted by `gpuslice_activity_series_dropped`;
//! `idle_after_s` is how long a claim must see no activity before its
//! summary says it is idle; `summary_window_s` is the window its memory peak
//! and SM mean and peak are taken over (at most [`MAX_WINDOW_SAMPLES`]
//! samples, so the per-device ring stays small).

use serde::Deserialize;

use super::validate::{ConfigError, invalid};

/// Longest sampling interval: a sample older than this says nothing useful
/// about "active now", and idle times are counted in whole samples.
pub const MAX_INTERVAL_S: u64 = 3600;

/// Longest `idle_after_s`: a week.
pub const MAX_IDLE_AFTER_S: u64 = 7 * 86_400;

/// Most samples a summary window may span (`summary_window_s /
/// interval_s`): the bound of each device's window ring.
pub const MAX_WINDOW_SAMPLES: u64 = 3600;

/// The summary window when none is set, unless an interval is longer.
pub const DEFAULT_WINDOW_S: u64 = 300;

/// `[activity]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ActivityConfig {
    /// Seconds between two samples; 0: sampling off. Default 5.
    pub interval_s: u64,
    /// Per-claim metric series shown at most. Default 1024.
    pub max_claim_series: usize,
    /// Seconds without activity after which a claim's summary says it is
    /// idle (since the moment its idleness began), 0..=604800. Default 1800.
    pub idle_after_s: u64,
    /// Seconds of samples a summary's memory peak and SM mean and peak are
    /// taken over; at least `interval_s`, at most 3600 samples. Unset: 300,
    /// or one interval where `interval_s` is longer (see
    /// [`ActivityConfig::summary_window_s`]).
    pub summary_window_s: Option<u64>,
}

impl Default for ActivityConfig {
    fn default() -> Self {
        Self {
            interval_s: 5,
            max_claim_series: 1024,
            idle_after_s: 1800,
            summary_window_s: None,
        }
    }
}

impl ActivityConfig {
    /// Whether sampling is on.
    pub fn enabled(&self) -> bool {
        self.interval_s > 0
    }

    /// The summary window in force, in seconds: the one set, else
    /// [`DEFAULT_WINDOW_S`] or one interval where that is longer.
    pub fn summary_window_s(&self) -> u64 {
        self.summary_window_s
            .unwrap_or(DEFAULT_WINDOW_S.max(self.interval_s))
    }

    /// Checks the interval's upper bound, the idle time's and the window's.
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
        if self.idle_after_s > MAX_IDLE_AFTER_S {
            return Err(invalid(
                "activity.idle_after_s",
                format!(
                    "{} is more than {MAX_IDLE_AFTER_S} (a week); use e.g. 1800 (half an hour)",
                    self.idle_after_s
                ),
            ));
        }
        self.validate_window()
    }

    /// The window spans at least one sample and at most
    /// [`MAX_WINDOW_SAMPLES`] (with sampling off it is not used).
    fn validate_window(&self) -> Result<(), ConfigError> {
        let Some(window) = self.summary_window_s.filter(|_| self.enabled()) else {
            return Ok(());
        };
        if window < self.interval_s {
            return Err(invalid(
                "activity.summary_window_s",
                format!(
                    "{window} is shorter than interval_s ({}); use at least one interval, e.g. 300",
                    self.interval_s
                ),
            ));
        }
        let most = self.interval_s.saturating_mul(MAX_WINDOW_SAMPLES);
        if window > most {
            return Err(invalid(
                "activity.summary_window_s",
                format!(
                    "{window} spans more than {MAX_WINDOW_SAMPLES} samples of interval_s = {}; use at most {most}, e.g. 300",
                    self.interval_s
                ),
            ));
        }
        Ok(())
    }
}
