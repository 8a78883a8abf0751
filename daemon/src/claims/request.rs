//! A prepare request, checked before anything is touched: a claim uid that is
//! a canonical UUID (so nothing untrusted reaches a file name), sane names,
//! devices that exist, and opaque configs parsed strictly and resolved per
//! device ([`sharing`]).

mod configs;
pub mod resolve;

use super::error::ClaimError;
use crate::config::LimitsConfig;
use crate::features::{Feature, Missing};
use crate::inventory::{DeviceRef, Inventory};
use crate::opaque::admit::admit;
use crate::opaque::{ClaimLimits, ConfigSource};
use crate::state::DeviceSharing;

/// Longest namespace or claim name Kubernetes allows (DNS subdomain).
const MAX_NAME: usize = 253;
/// Longest share id accepted (Kubernetes makes them UUIDs, 36 bytes).
const MAX_SHARE_ID: usize = 64;
/// The smallest consumed memory MPS can carry as a limit (it counts in MiB).
const MIN_CONSUMED_MEMORY: u64 = crate::opaque::MIN_PINNED_LIMIT_BYTES;

/// One allocated device, as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRequest {
    /// Inventory name.
    pub device: String,
    /// Request names it satisfies.
    pub request_names: Vec<String>,
    /// Pool it came from.
    pub pool: String,
    /// Memory the scheduler counted for this allocation (DRAConsumableCapacity).
    pub consumed_memory: Option<u64>,
    /// The allocation's share id (DRAConsumableCapacity); empty when none.
    pub share_id: String,
}

/// One opaque config entry, as asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigRequest {
    /// The DeviceClass or the claim: claim configs win.
    pub source: ConfigSource,
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
    /// Checks everything that does not depend on other claims, and returns
    /// how each device (in request order) is shared: `None` for a device that
    /// is the claim's alone.
    pub fn validate(
        &self,
        inventory: &Inventory,
    ) -> Result<Vec<Option<DeviceSharing>>, ClaimError> {
        validate_uid(&self.uid)?;
        check_name("claim.namespace".into(), &self.namespace, MAX_NAME, false)?;
        check_name("claim.name".into(), &self.name, MAX_NAME, false)?;
        if self.devices.is_empty() {
            return Err(ClaimError::NoDevices);
        }
        for (i, d) in self.devices.iter().enumerate() {
            let Some(device) = inventory.device(&d.device) else {
                if let Some(missing) = slice_of_gpu_without_mig(inventory, &d.device) {
                    return Err(missing.into());
                }
                return Err(ClaimError::UnknownDevice {
                    device: d.device.chars().take(80).collect(),
                    known: inventory.device_names().join(", "),
                });
            };
            if self.devices[..i].iter().any(|e| e.device == d.device) {
                return Err(ClaimError::DuplicateDevice {
                    device: d.device.clone(),
                });
            }
            for (j, r) in d.request_names.iter().enumerate() {
                check_name(format!("devices[{i}].request_names[{j}]"), r, 63, false)?;
            }
            check_name(format!("devices[{i}].pool"), &d.pool, MAX_NAME, true)?;
            check_name(
                format!("devices[{i}].share_id"),
                &d.share_id,
                MAX_SHARE_ID,
                true,
            )?;
            check_consumed(i, d.consumed_memory, &device)?;
        }
        configs::resolve_sharing(self, inventory)
    }

    /// The claim's own limits (its winning `LimitsConfig`), when it has one
    /// and `node`'s `[limits] claim_override` lets it stand. Call after
    /// [`PrepareRequest::validate`], before anything is reserved.
    pub fn limits(&self, node: &LimitsConfig) -> Result<Option<ClaimLimits>, ClaimError> {
        let entries = configs::entries(self);
        let Some((index, limits)) = crate::opaque::claim_limits(&entries)? else {
            return Ok(None);
        };
        Ok(Some(admit(node, index, limits)?))
    }
}

/// A MIG slice's name ("gpu-0-mig-1g24gb-0") whose GPU has no MIG: the
/// refusal that says so, rather than "not in the inventory".
fn slice_of_gpu_without_mig(inventory: &Inventory, device: &str) -> Option<Missing> {
    let (gpu, _) = device.split_once("-mig-")?;
    let gpu = inventory.gpu(gpu)?;
    (!gpu.features.mig).then(|| Missing {
        feature: Feature::Mig,
        gpu: gpu.name.clone(),
        product: gpu.info.product_name.clone(),
        asked: device.chars().take(80).collect(),
        evidence: None,
    })
}

/// Consumed memory, when given, is at least 1 MiB and at most the device's.
fn check_consumed(
    index: usize,
    consumed: Option<u64>,
    device: &DeviceRef<'_>,
) -> Result<(), ClaimError> {
    let Some(bytes) = consumed else {
        return Ok(());
    };
    let memory = device_memory(device);
    let problem = if bytes < MIN_CONSUMED_MEMORY {
        format!("{bytes} bytes is less than 1Mi, the smallest amount MPS can limit")
    } else if bytes > memory {
        format!("{bytes} bytes is more than the device has ({memory} bytes)")
    } else {
        return Ok(());
    };
    Err(ClaimError::InvalidField {
        field: format!("devices[{index}].consumed_memory_bytes"),
        problem,
    })
}

/// A device's memory: the whole GPU's, or the MIG profile's.
fn device_memory(device: &DeviceRef<'_>) -> u64 {
    match device {
        DeviceRef::Gpu(g) => g.info.memory_bytes,
        DeviceRef::Mig(m, _) => m.profile.memory_bytes,
    }
}

#[cfg(test)]
mod tests;
