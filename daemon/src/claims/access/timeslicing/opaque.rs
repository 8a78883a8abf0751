//! Time-slicing's opaque config: NVIDIA's `sharing.timeSlicingConfig`
//! (strategy "TimeSlicing", whole GPUs only), decoded strictly into the
//! [`TimeSliceInterval`] the claim asks for. A part of `opaque` kept in the
//! kind's folder: it stands on that module's floor. Pure.

use serde::Deserialize;

use crate::opaque::{SharingError, decode_setting};

/// NVIDIA's name of the strategy.
pub(crate) const STRATEGY: &str = "TimeSlicing";
/// The key of its settings under `sharing`.
pub(crate) const SETTINGS_KEY: &str = "timeSlicingConfig";

/// The compute time-slice of a GPU, as `nvidia-smi compute-policy` levels it.
/// Stored in claim records by its name, which is also its text ("Default",
/// "Short", "Medium", "Long").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[derive(serde::Serialize, serde::Deserialize, strum::Display)]
#[derive(strum::IntoStaticStr, strum::VariantArray)]
pub enum TimeSliceInterval {
    /// The driver's default (level 0).
    Default,
    /// Level 1.
    Short,
    /// Level 2.
    Medium,
    /// Level 3.
    Long,
}

impl TimeSliceInterval {
    /// The value of `nvidia-smi compute-policy --set-timeslice=N`.
    pub fn level(self) -> u8 {
        match self {
            Self::Default => 0,
            Self::Short => 1,
            Self::Medium => 2,
            Self::Long => 3,
        }
    }

    /// "Default", "Short", "Medium" or "Long" (exact case, as NVIDIA's API).
    pub fn parse(text: &str) -> Option<Self> {
        <Self as strum::VariantArray>::VARIANTS
            .iter()
            .copied()
            .find(|i| <&str>::from(*i) == text)
    }
}

/// `timeSlicingConfig`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TimeSlicingConfig {
    /// "Default", "Short", "Medium" or "Long"; absent means Default.
    #[serde(default)]
    interval: Option<String>,
}

/// `sharing.timeSlicingConfig` of config entry `index` (absent or null:
/// the Default interval).
pub(crate) fn parse_settings(
    index: usize,
    value: Option<serde_json::Value>,
) -> Result<TimeSliceInterval, SharingError> {
    let field = format!("configs[{index}].sharing.{SETTINGS_KEY}");
    let config: Option<TimeSlicingConfig> = match value {
        None => None,
        Some(value) => decode_setting(&field, value)?,
    };
    let Some(text) = config.and_then(|c| c.interval) else {
        return Ok(TimeSliceInterval::Default);
    };
    TimeSliceInterval::parse(&text).ok_or_else(|| SharingError::BadValue {
        field: format!("{field}.interval"),
        value: format!("{text:?}"),
        problem: "is not an interval; use Default, Short, Medium or Long".to_owned(),
    })
}
