//! One opaque config object → a typed [`ParsedEntry`], refusing anything
//! unknown or out of range with the field's path. The envelope (apiVersion,
//! kind, which strategy) is read here; each strategy's settings are read by
//! its kind of access, in the kind's `opaque.rs` (a part of this module kept
//! in the kind's folder), with the decode helpers here. Pure.

use gpuslice_quantity::bytes::parse_bytes;
use serde::de::DeserializeOwned;

use super::error::SharingError;
use super::model::{
    GPUSLICE_API_VERSION, LimitsConfigEntry, NVIDIA_API_VERSION, NvidiaConfig, Quantity,
    SharingObject, TypeMeta,
};
use super::{ClaimLimits, ConfigKind, SharingPolicy};
use crate::claims::access::mps::opaque as mps;
use crate::claims::access::timeslicing::opaque as timeslicing;
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
    let meta: TypeMeta = decode_entry(index, json)?;
    match (meta.api_version.as_str(), meta.kind.as_str()) {
        (NVIDIA_API_VERSION, name @ ("GpuConfig" | "MigDeviceConfig")) => {
            let kind = if name == "GpuConfig" {
                ConfigKind::Gpu
            } else {
                ConfigKind::Mig
            };
            let config: NvidiaConfig = decode_entry(index, json)?;
            let policy = match config.sharing {
                None => SharingPolicy::Exclusive,
                Some(sharing) => strategy_policy(index, kind, sharing)?,
            };
            Ok(ParsedEntry::Nvidia { kind, policy })
        }
        (NVIDIA_API_VERSION, other) => Err(SharingError::UnknownKind {
            field: at(".kind"),
            api_version: NVIDIA_API_VERSION.to_owned(),
            kind: other.to_owned(),
            expected: "\"GpuConfig\" or \"MigDeviceConfig\"",
        }),
        (GPUSLICE_API_VERSION, mps::MEMORY_CONFIG_KIND) => {
            mps::parse_memory_share(index, json).map(ParsedEntry::MemoryShare)
        }
        (GPUSLICE_API_VERSION, "LimitsConfig") => {
            let config: LimitsConfigEntry = decode_entry(index, json)?;
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

/// NVIDIA's sharing strategies, each with the key of its settings under
/// `sharing` and whether a MIG device takes it: the kinds of access that
/// parse a config. Time-slicing is a property of the whole physical GPU, so
/// a MigDeviceConfig has no `timeSlicingConfig` at all.
const STRATEGIES: [(&str, &str, bool); 2] = [
    (timeslicing::STRATEGY, timeslicing::SETTINGS_KEY, false),
    (mps::STRATEGY, mps::SETTINGS_KEY, true),
];

/// `sharing` of config entry `index`, a `kind` config: every key is one a
/// strategy owns, and only the chosen strategy's settings are set.
fn strategy_policy(
    index: usize,
    kind: ConfigKind,
    mut sharing: SharingObject,
) -> Result<SharingPolicy, SharingError> {
    let at = |path: &str| format!("configs[{index}].sharing{path}");
    let known = STRATEGIES
        .iter()
        .filter(|(_, _, on_mig)| kind == ConfigKind::Gpu || *on_mig);
    if let Some(key) = sharing
        .settings
        .keys()
        .find(|key| !known.clone().any(|(_, settings, _)| settings == key))
    {
        let expected: Vec<String> = std::iter::once("strategy")
            .chain(known.map(|(_, settings, _)| *settings))
            .map(|k| format!("`{k}`"))
            .collect();
        return Err(SharingError::Malformed {
            field: at(&format!(".{key}")),
            problem: format!(
                "unknown field `{key}`, expected one of {}",
                expected.join(", ")
            ),
        });
    }
    let strategy = sharing.strategy.as_str();
    if kind == ConfigKind::Mig && strategy == timeslicing::STRATEGY {
        return Err(SharingError::TimeSliceOnMig {
            field: at(".strategy"),
        });
    }
    let Some((_, own_key, _)) = STRATEGIES.iter().find(|(name, ..)| *name == strategy) else {
        let allowed = known.map(|(name, ..)| *name).collect::<Vec<_>>();
        let allowed = allowed.join(" or ");
        return Err(SharingError::BadValue {
            field: at(".strategy"),
            value: format!("{strategy:?}"),
            problem: format!("is not a sharing strategy; use {allowed}"),
        });
    };
    // A null setting is an absent one, as serde reads an `Option`.
    let other = (sharing.settings.iter())
        .find(|(key, value)| !value.is_null() && key != own_key)
        .map(|(key, _)| key.clone());
    if let Some(other) = other {
        return Err(SharingError::OtherStrategysConfig {
            field: at(&format!(".{other}")),
            strategy: strategy.to_owned(),
        });
    }
    let settings = sharing
        .settings
        .remove(*own_key)
        .filter(|value| !value.is_null());
    if strategy == mps::STRATEGY {
        mps::parse_settings(index, settings).map(SharingPolicy::Mps)
    } else {
        timeslicing::parse_settings(index, settings)
            .map(|interval| SharingPolicy::TimeSlicing { interval })
    }
}

/// Strict decode of config entry `index`; the error carries the path of the
/// offending value.
pub fn decode_entry<T: DeserializeOwned>(index: usize, json: &str) -> Result<T, SharingError> {
    let mut de = serde_json::Deserializer::from_str(json);
    let decoded = serde_path_to_error::deserialize(&mut de);
    decoded.map_err(|err| malformed(&format!("configs[{index}]"), err))
}

/// Strict decode of one setting at `field` (e.g.
/// "configs[0].sharing.timeSlicingConfig"); the error carries the path below
/// it.
pub fn decode_setting<T: DeserializeOwned>(
    field: &str,
    value: serde_json::Value,
) -> Result<T, SharingError> {
    serde_path_to_error::deserialize(value).map_err(|err| malformed(field, err))
}

fn malformed<E: std::fmt::Display>(
    field: &str,
    err: serde_path_to_error::Error<E>,
) -> SharingError {
    let path = err.path().to_string();
    let field = if path == "." || path == "?" || path.is_empty() {
        field.to_owned()
    } else if path.starts_with('[') {
        format!("{field}{path}")
    } else {
        format!("{field}.{path}")
    };
    SharingError::Malformed {
        field,
        problem: err.into_inner().to_string(),
    }
}

/// A quantity's bytes, or the refusal naming `field`.
pub fn quantity_bytes(field: &str, quantity: &Quantity) -> Result<u64, SharingError> {
    parse_bytes(&quantity.as_text()).map_err(|problem| SharingError::Malformed {
        field: field.to_owned(),
        problem: problem.to_string(),
    })
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
