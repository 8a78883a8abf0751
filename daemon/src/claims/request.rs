//! A prepare request, checked before anything is touched: a claim uid that is
//! a canonical UUID (so nothing untrusted reaches a file name), sane names,
//! devices that exist, and opaque configs this build can apply.

use serde::Deserialize;

use super::error::ClaimError;
use crate::inventory::{DeviceRef, Inventory};

/// Longest namespace or claim name Kubernetes allows (DNS subdomain).
const MAX_NAME: usize = 253;
/// The opaque config API group NVIDIA's DRA driver defines, which we accept.
const NVIDIA_API_VERSION: &str = "resource.nvidia.com/v1beta1";
/// Largest opaque config Kubernetes stores (10 KiB).
const MAX_CONFIG_BYTES: usize = 10 * 1024;

/// One allocated device, as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRequest {
    /// Inventory name.
    pub device: String,
    /// Request names it satisfies.
    pub request_names: Vec<String>,
    /// Pool it came from.
    pub pool: String,
}

/// One opaque config entry, as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRequest {
    /// Requests it applies to (empty: all).
    pub requests: Vec<String>,
    /// The raw JSON object.
    pub parameters_json: String,
}

/// A prepare request in domain terms, not yet validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepareRequest {
    /// Claim uid.
    pub uid: String,
    /// Claim namespace.
    pub namespace: String,
    /// Claim name.
    pub name: String,
    /// Allocated devices.
    pub devices: Vec<DeviceRequest>,
    /// Opaque configs for our driver, lowest precedence first.
    pub configs: Vec<ConfigRequest>,
}

/// Checks that `uid` is a lowercase, hyphenated UUID.
pub fn validate_uid(uid: &str) -> Result<(), ClaimError> {
    let canonical = uuid::Uuid::try_parse(uid)
        .map(|u| u.hyphenated().to_string())
        .ok();
    if canonical.as_deref() == Some(uid) {
        Ok(())
    } else {
        Err(ClaimError::InvalidUid {
            uid: uid.chars().take(80).collect(),
        })
    }
}

fn check_name(field: String, value: &str, max: usize, allow_empty: bool) -> Result<(), ClaimError> {
    let bad_char = value
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.')));
    let problem = if value.is_empty() && !allow_empty {
        "must not be empty".to_owned()
    } else if value.len() > max {
        format!("is {} bytes; at most {max} are allowed", value.len())
    } else if let Some(c) = bad_char {
        format!("contains {c:?}; only lowercase letters, digits, '-' and '.' are allowed")
    } else {
        return Ok(());
    };
    Err(ClaimError::InvalidField { field, problem })
}

impl PrepareRequest {
    /// Checks everything that does not depend on other claims.
    pub fn validate(&self, inventory: &Inventory) -> Result<(), ClaimError> {
        validate_uid(&self.uid)?;
        check_name("claim.namespace".into(), &self.namespace, MAX_NAME, false)?;
        check_name("claim.name".into(), &self.name, MAX_NAME, false)?;
        if self.devices.is_empty() {
            return Err(ClaimError::NoDevices);
        }
        for (i, d) in self.devices.iter().enumerate() {
            if inventory.device(&d.device).is_none() {
                return Err(ClaimError::UnknownDevice {
                    device: d.device.chars().take(80).collect(),
                    known: inventory.device_names().join(", "),
                });
            }
            if self.devices[..i].iter().any(|e| e.device == d.device) {
                return Err(ClaimError::DuplicateDevice {
                    device: d.device.clone(),
                });
            }
            for (j, r) in d.request_names.iter().enumerate() {
                check_name(format!("devices[{i}].request_names[{j}]"), r, 63, false)?;
            }
            check_name(format!("devices[{i}].pool"), &d.pool, MAX_NAME, true)?;
        }
        for (index, config) in self.configs.iter().enumerate() {
            let kind = check_config(index, config)?;
            self.check_kind_fits(index, config, kind, inventory)?;
        }
        Ok(())
    }

    /// A GpuConfig must apply to whole GPUs only, a MigDeviceConfig to MIG
    /// slices only.
    fn check_kind_fits(
        &self,
        index: usize,
        config: &ConfigRequest,
        kind: ConfigKind,
        inventory: &Inventory,
    ) -> Result<(), ClaimError> {
        let applies = |d: &&DeviceRequest| {
            config.requests.is_empty()
                || d.request_names.is_empty()
                || d.request_names.iter().any(|r| config.requests.contains(r))
        };
        for d in self.devices.iter().filter(applies) {
            let is_mig = matches!(inventory.device(&d.device), Some(DeviceRef::Mig(..)));
            let problem = match (kind, is_mig) {
                (ConfigKind::Gpu, true) => "kind GpuConfig applies to whole GPUs, but",
                (ConfigKind::Mig, false) => "kind MigDeviceConfig applies to MIG devices, but",
                _ => continue,
            };
            return Err(ClaimError::BadConfig {
                index,
                problem: format!(
                    "{problem} it applies to device {} ({}); use kind {} or narrow its requests",
                    d.device,
                    if is_mig { "a MIG slice" } else { "a whole GPU" },
                    if is_mig {
                        "MigDeviceConfig"
                    } else {
                        "GpuConfig"
                    },
                ),
            });
        }
        Ok(())
    }
}

/// Which device type an opaque config is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConfigKind {
    Gpu,
    Mig,
}

/// The opaque config kinds of NVIDIA's DRA driver that gpusliced reads.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OpaqueConfig {
    #[serde(rename = "apiVersion")]
    api_version: String,
    kind: String,
    #[serde(default)]
    sharing: Option<Sharing>,
}

#[derive(Debug, Deserialize)]
struct Sharing {
    #[serde(default)]
    strategy: String,
}

fn check_config(index: usize, config: &ConfigRequest) -> Result<ConfigKind, ClaimError> {
    let bad = |problem: String| ClaimError::BadConfig { index, problem };
    if config.parameters_json.len() > MAX_CONFIG_BYTES {
        return Err(bad(format!(
            "parameters are {} bytes; at most {MAX_CONFIG_BYTES} are allowed",
            config.parameters_json.len()
        )));
    }
    let parsed: OpaqueConfig = serde_json::from_str(&config.parameters_json)
        .map_err(|e| bad(format!("parameters are not a valid config object: {e}")))?;
    if parsed.api_version != NVIDIA_API_VERSION {
        return Err(bad(format!(
            "apiVersion {:?} is not supported; use {NVIDIA_API_VERSION:?}",
            parsed.api_version
        )));
    }
    let kind = match parsed.kind.as_str() {
        "GpuConfig" => ConfigKind::Gpu,
        "MigDeviceConfig" => ConfigKind::Mig,
        other => {
            return Err(bad(format!(
                "kind {other:?} is not supported; use \"GpuConfig\" or \"MigDeviceConfig\""
            )));
        }
    };
    match parsed.sharing {
        None => Ok(kind),
        Some(s) => Err(ClaimError::SharingUnavailable {
            index,
            strategy: s.strategy,
        }),
    }
}

#[cfg(test)]
mod tests;
