//! MPS's opaque configs: NVIDIA's `sharing.mpsConfig` (strategy "MPS") and
//! our `MpsMemoryConfig`, decoded strictly into one [`MpsSettings`]. A part
//! of `opaque` kept in the kind's folder: it stands on that module's floor.
//! Pure.
//!
//! ```yaml
//! apiVersion: gpuslice.dev/v1alpha1
//! kind: MpsMemoryConfig
//! memory: 20Gi          # this claim's share of a whole GPU's memory, under MPS
//! ```
//!
//! The two combine: an `MpsMemoryConfig` alone implies MPS, and it cannot
//! sit beside NVIDIA's own pinned limits. The MPS memory limits (NVIDIA's and
//! ours) bind each client *process*, not the claim: a claim that runs N
//! processes can pin N times the limit.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::opaque::{Quantity, SharingError, decode_entry, decode_setting, quantity_bytes};

/// NVIDIA's name of the strategy.
pub(crate) const STRATEGY: &str = "MPS";
/// The key of its settings under `sharing`.
pub(crate) const SETTINGS_KEY: &str = "mpsConfig";
/// Our extension's kind (under `gpuslice.dev/v1alpha1`).
pub(crate) const MEMORY_CONFIG_KIND: &str = "MpsMemoryConfig";

/// The smallest pinned memory limit MPS takes (it counts in whole MiB).
pub const MIN_PINNED_LIMIT_BYTES: u64 = 1024 * 1024;

/// MPS settings of a request, before they are checked against its devices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MpsSettings {
    /// `defaultActiveThreadPercentage`, 1..100.
    pub default_active_thread_percentage: Option<u8>,
    /// `defaultPinnedDeviceMemoryLimit` in bytes, ≥ 1 MiB.
    pub default_pinned_device_memory_limit: Option<u64>,
    /// `defaultPerDevicePinnedMemoryLimit`: key (device index in the request,
    /// or UUID) → bytes; overrides the default for that device.
    pub per_device_pinned_memory_limit: BTreeMap<String, u64>,
    /// Our `MpsMemoryConfig.memory`: the claim's share of a whole GPU, bytes.
    pub memory_share: Option<u64>,
}

/// `mpsConfig`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MpsConfig {
    /// 1..100.
    #[serde(rename = "defaultActiveThreadPercentage", default)]
    default_active_thread_percentage: Option<i64>,
    /// A quantity, e.g. "10Gi".
    #[serde(rename = "defaultPinnedDeviceMemoryLimit", default)]
    default_pinned_device_memory_limit: Option<Quantity>,
    /// Device index within the request ("0") or UUID → quantity.
    #[serde(rename = "defaultPerDevicePinnedMemoryLimit", default)]
    default_per_device_pinned_memory_limit: Option<BTreeMap<String, Quantity>>,
    /// All UIDs share one server (Volta and later). Only `false` is supported.
    #[serde(rename = "multiUser", default)]
    multi_user: Option<bool>,
}

/// `apiVersion: gpuslice.dev/v1alpha1`, `kind: MpsMemoryConfig`: a share of a
/// whole GPU's memory under MPS, which the daemon sets as the claim's pinned
/// device memory limit and counts against the GPU's memory.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MpsMemoryConfig {
    /// Checked by the envelope first.
    #[serde(rename = "apiVersion")]
    _api_version: String,
    /// Checked by the envelope first.
    #[serde(rename = "kind")]
    _kind: String,
    /// The amount, e.g. "20Gi".
    memory: Quantity,
}

/// `sharing.mpsConfig` of config entry `index` (absent or null: defaults).
pub(crate) fn parse_settings(
    index: usize,
    value: Option<serde_json::Value>,
) -> Result<MpsSettings, SharingError> {
    let base = format!("configs[{index}].sharing.{SETTINGS_KEY}");
    let at = |path: &str| format!("{base}{path}");
    let mps: Option<MpsConfig> = match value {
        None => None,
        Some(value) => decode_setting(&base, value)?,
    };
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
        Some(q) => Some(pinned_limit(&at(".defaultPinnedDeviceMemoryLimit"), q)?),
    };
    let mut per_device = BTreeMap::new();
    for (key, q) in mps
        .default_per_device_pinned_memory_limit
        .unwrap_or_default()
    {
        let field = at(&format!(".defaultPerDevicePinnedMemoryLimit.{key}"));
        per_device.insert(key, pinned_limit(&field, &q)?);
    }
    Ok(MpsSettings {
        default_active_thread_percentage: percentage,
        default_pinned_device_memory_limit: default_limit,
        per_device_pinned_memory_limit: per_device,
        memory_share: None,
    })
}

/// The bytes of the `MpsMemoryConfig` that is config entry `index`.
pub(crate) fn parse_memory_share(index: usize, json: &str) -> Result<u64, SharingError> {
    let config: MpsMemoryConfig = decode_entry(index, json)?;
    pinned_limit(&format!("configs[{index}].memory"), &config.memory)
}

impl MpsSettings {
    /// These settings (of config entry `nvidia_index`, when one) with the
    /// memory share of the `MpsMemoryConfig` at `field`: refused beside
    /// NVIDIA's own pinned limits, which would say the same thing twice.
    pub(crate) fn with_memory_share(
        self,
        field: String,
        nvidia_index: usize,
        bytes: u64,
    ) -> Result<Self, SharingError> {
        if self.default_pinned_device_memory_limit.is_some()
            || !self.per_device_pinned_memory_limit.is_empty()
        {
            return Err(SharingError::Conflict {
                field,
                problem: format!(
                    "configs[{nvidia_index}].sharing.{SETTINGS_KEY} already sets pinned memory \
                     limits; set the memory either there or in the {MEMORY_CONFIG_KIND}, not \
                     both"
                ),
            });
        }
        Ok(Self {
            memory_share: Some(bytes),
            ..self
        })
    }

    /// Whether it sets any limit (which needs a GPU with MPS's client limits).
    pub(crate) fn wants_limits(&self) -> bool {
        self.default_active_thread_percentage.is_some()
            || self.default_pinned_device_memory_limit.is_some()
            || !self.per_device_pinned_memory_limit.is_empty()
            || self.memory_share.is_some()
    }
}

/// A memory quantity of at least 1 MiB.
fn pinned_limit(field: &str, quantity: &Quantity) -> Result<u64, SharingError> {
    let bytes = quantity_bytes(field, quantity)?;
    if bytes < MIN_PINNED_LIMIT_BYTES {
        return Err(SharingError::BadValue {
            field: field.to_owned(),
            value: format!("{:?}", quantity.as_text()),
            problem: "is less than 1Mi, the smallest limit MPS takes; ask for at least \"1Mi\""
                .to_owned(),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests;
