//! One opaque config object → a typed [`ParsedEntry`], refusing anything
//! unknown or out of range with the field's path. Pure.

use std::collections::BTreeMap;

use gpuslice_quantity::bytes::parse_bytes;
use serde::de::DeserializeOwned;

use super::error::SharingError;
use super::model::{
    GPUSLICE_API_VERSION, GpuConfig, LimitsConfigEntry, MigDeviceConfig, MpsConfig,
    MpsMemoryConfig, NVIDIA_API_VERSION, Quantity, TypeMeta,
};
use super::{
    ClaimLimits, ConfigKind, MIN_PINNED_LIMIT_BYTES, MpsSettings, SharingPolicy, TimeSliceInterval,
};
use crate::config::{LimitMode, MAX_GRACE_S};

/// Largest opaque config Kubernetes stores (10 KiB).
pub const MAX_CONFIG_BYTES: usize = 10 * 1024;

/// What one config entry says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParsedEntry {
    /// A GpuConfig or MigDeviceConfig.
    Nvidia {
        /// Which of the two.
        kind: ConfigKind,
        /// Its sharing settings (memory share unset).
        policy: SharingPolicy,
    },
    /// Our MpsMemoryConfig: bytes of a whole GPU under MPS.
    MemoryShare(u64),
    /// Our LimitsConfig: the claim's own over-share mode and grace.
    Limits(ClaimLimits),
}

/// Parses config entry `index` (its position in the claim's configs).
pub fn parse_entry(index: usize, json: &str) -> Result<ParsedEntry, SharingError> {
    let at = |path: &str| format!("configs[{index}]{path}");
    if json.len() > MAX_CONFIG_BYTES {
        return Err(SharingError::TooLarge {
            field: at(""),
            bytes: json.len(),
            max: MAX_CONFIG_BYTES,
        });
    }
    let meta: TypeMeta = decode(index, json)?;
    match (meta.api_version.as_str(), meta.kind.as_str()) {
        (NVIDIA_API_VERSION, "GpuConfig") => {
            let config: GpuConfig = decode(index, json)?;
            let policy = match config.sharing {
                None => SharingPolicy::Exclusive,
                Some(s) => gpu_policy(index, &s.strategy, s.time_slicing_config, s.mps_config)?,
            };
            Ok(ParsedEntry::Nvidia {
                kind: ConfigKind::Gpu,
                policy,
            })
        }
        (NVIDIA_API_VERSION, "MigDeviceConfig") => {
            let config: MigDeviceConfig = decode(index, json)?;
            let policy = match config.sharing {
                None => SharingPolicy::Exclusive,
                Some(s) => mig_policy(index, &s.strategy, s.mps_config)?,
            };
            Ok(ParsedEntry::Nvidia {
                kind: ConfigKind::Mig,
                policy,
            })
        }
        (NVIDIA_API_VERSION, other) => Err(SharingError::UnknownKind {
            field: at(".kind"),
            api_version: NVIDIA_API_VERSION.to_owned(),
            kind: other.to_owned(),
            expected: "\"GpuConfig\" or \"MigDeviceConfig\"",
        }),
        (GPUSLICE_API_VERSION, "MpsMemoryConfig") => {
            let config: MpsMemoryConfig = decode(index, json)?;
            let bytes = limit(&at(".memory"), &config.memory)?;
            Ok(ParsedEntry::MemoryShare(bytes))
        }
        (GPUSLICE_API_VERSION, "LimitsConfig") => {
            let config: LimitsConfigEntry = decode(index, json)?;
            claim_limits(index, config).map(ParsedEntry::Limits)
        }
        (GPUSLICE_API_VERSION, other) => Err(SharingError::UnknownKind {
            field: at(".kind"),
            api_version: GPUSLICE_API_VERSION.to_owned(),
            kind: other.to_owned(),
            expected: "\"MpsMemoryConfig\" or \"LimitsConfig\"",
        }),
        (other, _) => Err(SharingError::UnknownApiVersion {
            field: at(".apiVersion"),
            api_version: other.to_owned(),
        }),
    }
}

/// Strict decode; the error carries the path of the offending value.
fn decode<T: DeserializeOwned>(index: usize, json: &str) -> Result<T, SharingError> {
    let mut de = serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let field = if path == "." || path == "?" || path.is_empty() {
            format!("configs[{index}]")
        } else if path.starts_with('[') {
            format!("configs[{index}]{path}")
        } else {
            format!("configs[{index}].{path}")
        };
        SharingError::Malformed {
            field,
            problem: err.into_inner().to_string(),
        }
    })
}

fn gpu_policy(
    index: usize,
    strategy: &str,
    time_slicing: Option<super::model::TimeSlicingConfig>,
    mps: Option<MpsConfig>,
) -> Result<SharingPolicy, SharingError> {
    let at = |path: &str| format!("configs[{index}].sharing{path}");
    match strategy {
        "TimeSlicing" => {
            if mps.is_some() {
                return Err(SharingError::OtherStrategysConfig {
                    field: at(".mpsConfig"),
                    strategy: strategy.to_owned(),
                });
            }
            let interval = time_slicing.and_then(|t| t.interval);
            let interval = match interval.as_deref() {
                None => TimeSliceInterval::Default,
                Some(text) => {
                    TimeSliceInterval::parse(text).ok_or_else(|| SharingError::BadValue {
                        field: at(".timeSlicingConfig.interval"),
                        value: format!("{text:?}"),
                        problem: "is not an interval; use Default, Short, Medium or Long"
                            .to_owned(),
                    })?
                }
            };
            Ok(SharingPolicy::TimeSlicing { interval })
        }
        "MPS" => {
            if time_slicing.is_some() {
                return Err(SharingError::OtherStrategysConfig {
                    field: at(".timeSlicingConfig"),
                    strategy: strategy.to_owned(),
                });
            }
            mps_settings(index, mps).map(SharingPolicy::Mps)
        }
        other => Err(unknown_strategy(index, other, "TimeSlicing or MPS")),
    }
}

fn mig_policy(
    index: usize,
    strategy: &str,
    mps: Option<MpsConfig>,
) -> Result<SharingPolicy, SharingError> {
    match strategy {
        "TimeSlicing" => Err(SharingError::TimeSliceOnMig {
            field: format!("configs[{index}].sharing.strategy"),
        }),
        "MPS" => mps_settings(index, mps).map(SharingPolicy::Mps),
        other => Err(unknown_strategy(index, other, "MPS")),
    }
}

fn unknown_strategy(index: usize, strategy: &str, allowed: &str) -> SharingError {
    SharingError::BadValue {
        field: format!("configs[{index}].sharing.strategy"),
        value: format!("{strategy:?}"),
        problem: format!("is not a sharing strategy; use {allowed}"),
    }
}

fn mps_settings(index: usize, mps: Option<MpsConfig>) -> Result<MpsSettings, SharingError> {
    let at = |path: &str| format!("configs[{index}].sharing.mpsConfig{path}");
    let Some(mps) = mps else {
        return Ok(MpsSettings::default());
    };
    if mps.multi_user == Some(true) {
        return Err(SharingError::BadValue {
            field: at(".multiUser"),
            value: "true".to_owned(),
            problem: "is not supported by gpusliced: each MPS daemon serves one user; \
                      remove multiUser or set it to false"
                .to_owned(),
        });
    }
    let percentage = match mps.default_active_thread_percentage {
        None => None,
        Some(p) => Some(
            u8::try_from(p)
                .ok()
                .filter(|p| (1..=100).contains(p))
                .ok_or_else(|| SharingError::BadValue {
                    field: at(".defaultActiveThreadPercentage"),
                    value: p.to_string(),
                    problem: "is outside 1..100".to_owned(),
                })?,
        ),
    };
    let default_limit = match &mps.default_pinned_device_memory_limit {
        None => None,
        Some(q) => Some(limit(&at(".defaultPinnedDeviceMemoryLimit"), q)?),
    };
    let mut per_device = BTreeMap::new();
    for (key, q) in mps
        .default_per_device_pinned_memory_limit
        .unwrap_or_default()
    {
        let bytes = limit(
            &at(&format!(".defaultPerDevicePinnedMemoryLimit.{key}")),
            &q,
        )?;
        per_device.insert(key, bytes);
    }
    Ok(MpsSettings {
        default_active_thread_percentage: percentage,
        default_pinned_device_memory_limit: default_limit,
        per_device_pinned_memory_limit: per_device,
        memory_share: None,
    })
}

/// A memory quantity of at least 1 MiB.
fn limit(field: &str, quantity: &Quantity) -> Result<u64, SharingError> {
    let text = quantity.as_text();
    let bytes = parse_bytes(&text).map_err(|problem| SharingError::Malformed {
        field: field.to_owned(),
        problem: problem.to_string(),
    })?;
    if bytes < MIN_PINNED_LIMIT_BYTES {
        return Err(SharingError::BadValue {
            field: field.to_owned(),
            value: format!("{text:?}"),
            problem: "is less than 1Mi, the smallest limit MPS takes; ask for at least \"1Mi\""
                .to_owned(),
        });
    }
    Ok(bytes)
}

/// A `LimitsConfig`: a known mode, a grace within a day, at least one of them.
fn claim_limits(index: usize, config: LimitsConfigEntry) -> Result<ClaimLimits, SharingError> {
    let at = |path: &str| format!("configs[{index}]{path}");
    let overshare = match config.overshare.as_deref() {
        None => None,
        Some("warn") => Some(LimitMode::Warn),
        Some("dry-run") => Some(LimitMode::DryRun),
        Some("end") => Some(LimitMode::End),
        Some(other) => {
            return Err(SharingError::BadValue {
                field: at(".overshare"),
                value: format!("{other:?}"),
                problem: "is not a limits mode; use \"warn\", \"dry-run\" or \"end\"".to_owned(),
            });
        }
    };
    if let Some(grace) = config.grace_seconds
        && grace > MAX_GRACE_S
    {
        return Err(SharingError::BadValue {
            field: at(".graceSeconds"),
            value: grace.to_string(),
            problem: format!("is more than {MAX_GRACE_S} (a day); use e.g. 60"),
        });
    }
    if overshare.is_none() && config.grace_seconds.is_none() {
        return Err(SharingError::Conflict {
            field: at(""),
            problem: "a LimitsConfig sets neither overshare nor graceSeconds; set one of them \
                      or remove the LimitsConfig"
                .to_owned(),
        });
    }
    Ok(ClaimLimits {
        overshare,
        grace_s: config.grace_seconds,
    })
}
