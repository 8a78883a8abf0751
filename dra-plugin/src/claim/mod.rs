//! From an allocated ResourceClaim to what gpusliced's Prepare needs: our
//! driver's allocation results as devices, and our driver's opaque configs in
//! precedence order (class configs first, then claim configs; later wins).
//!
//! Pure: the caller fetched the claim. Checks what the kubelet plugin helper
//! checks: the claim is allocated and is the claim the kubelet asked for (same
//! UID; a different UID means it was deleted and re-created). Under
//! DRAConsumableCapacity each result's consumed memory and share id go along.

use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::api::resource::v1::{DeviceAllocationConfiguration, ResourceClaim};

use crate::slices::MEMORY;
use crate::slices::quantity::whole_value;

/// `source` of a config copied from the DeviceClass.
pub const SOURCE_CLASS: &str = "FromClass";
/// `source` of a config written in the claim.
pub const SOURCE_CLAIM: &str = "FromClaim";

/// Why a claim cannot be prepared (the kubelet retries it later).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClaimError {
    /// The claim has no `status.allocation` yet.
    #[error("ResourceClaim {claim} is not allocated; the scheduler has not placed it yet")]
    NotAllocated {
        /// `namespace/name`.
        claim: String,
    },
    /// The claim object is another one than the kubelet's.
    #[error(
        "ResourceClaim {claim} has uid {found}, the kubelet asked for {expected}: \
         the claim was deleted and re-created; the kubelet will unprepare the old one"
    )]
    UidMismatch {
        /// `namespace/name`.
        claim: String,
        /// The UID the kubelet sent.
        expected: String,
        /// The UID the API server has.
        found: String,
    },
    /// None of the allocation results is ours.
    #[error("ResourceClaim {claim} has no device allocated by driver {driver}")]
    NoDevices {
        /// `namespace/name`.
        claim: String,
        /// Our driver name.
        driver: String,
    },
    /// A consumed amount that is not a quantity (DRAConsumableCapacity).
    #[error(
        "ResourceClaim {claim}: device {device} has consumedCapacity memory {found:?}, which is \
         not a whole quantity"
    )]
    BadConsumedCapacity {
        /// `namespace/name`.
        claim: String,
        /// The allocated device.
        device: String,
        /// The value found.
        found: String,
    },
    /// A config entry with a source this shim does not know.
    #[error(
        "ResourceClaim {claim}: config source {found:?} is neither {SOURCE_CLASS} nor {SOURCE_CLAIM}"
    )]
    UnknownSource {
        /// `namespace/name`.
        claim: String,
        /// The source found.
        found: String,
    },
}

/// What to send gpusliced for one claim.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaimPlan {
    /// Our driver's allocation results, in the claim's order.
    pub devices: Vec<pb::AllocatedDevice>,
    /// Our driver's opaque configs: class ones first, then claim ones, each
    /// group in the claim's order.
    pub configs: Vec<pb::OpaqueConfig>,
}

/// Checks `claim` against the kubelet's `expected_uid` and extracts what is
/// `driver`'s.
pub fn plan(
    claim: &ResourceClaim,
    expected_uid: &str,
    driver: &str,
) -> Result<ClaimPlan, ClaimError> {
    let id = format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or_default(),
        claim.metadata.name.as_deref().unwrap_or_default()
    );
    let found = claim.metadata.uid.as_deref().unwrap_or_default();
    if found != expected_uid {
        return Err(ClaimError::UidMismatch {
            claim: id,
            expected: expected_uid.to_owned(),
            found: found.to_owned(),
        });
    }
    let Some(allocated) = claim
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
    else {
        return Err(ClaimError::NotAllocated { claim: id });
    };
    let devices: Vec<pb::AllocatedDevice> = allocated
        .results
        .iter()
        .flatten()
        .filter(|result| result.driver == driver)
        .map(|result| {
            let consumed = result
                .consumed_capacity
                .as_ref()
                .and_then(|c| c.get(MEMORY))
                .map(|q| {
                    whole_value(&q.0).ok_or_else(|| ClaimError::BadConsumedCapacity {
                        claim: id.clone(),
                        device: result.device.clone(),
                        found: q.0.chars().take(64).collect(),
                    })
                })
                .transpose()?;
            Ok(pb::AllocatedDevice {
                device: result.device.clone(),
                request_names: vec![request_name(&result.request).to_owned()],
                pool: result.pool.clone(),
                consumed_memory_bytes: consumed,
                share_id: result.share_id.clone().unwrap_or_default(),
            })
        })
        .collect::<Result<_, ClaimError>>()?;
    if devices.is_empty() {
        return Err(ClaimError::NoDevices {
            claim: id,
            driver: driver.to_owned(),
        });
    }
    let configs = opaque_configs(allocated.config.as_deref().unwrap_or_default(), driver, &id)?;
    Ok(ClaimPlan { devices, configs })
}

/// The request part of `request` or `request/subrequest` (firstAvailable):
/// the kubelet matches containers by request name only.
pub fn request_name(request: &str) -> &str {
    request.split_once('/').map_or(request, |(name, _)| name)
}

fn opaque_configs(
    entries: &[DeviceAllocationConfiguration],
    driver: &str,
    claim: &str,
) -> Result<Vec<pb::OpaqueConfig>, ClaimError> {
    let mut ours = Vec::new();
    for entry in entries {
        let Some(opaque) = entry.opaque.as_ref().filter(|o| o.driver == driver) else {
            continue;
        };
        let source = match entry.source.as_str() {
            SOURCE_CLASS => pb::ConfigSource::Class,
            SOURCE_CLAIM => pb::ConfigSource::Claim,
            other => {
                return Err(ClaimError::UnknownSource {
                    claim: claim.to_owned(),
                    found: other.to_owned(),
                });
            }
        };
        ours.push(pb::OpaqueConfig {
            source: source.into(),
            requests: entry
                .requests
                .iter()
                .flatten()
                .map(|r| request_name(r).to_owned())
                .collect(),
            parameters_json: opaque.parameters.0.to_string(),
        });
    }
    // Stable: keeps each group's order, class configs before claim configs.
    ours.sort_by_key(|config| config.source != i32::from(pb::ConfigSource::Class));
    Ok(ours)
}

#[cfg(test)]
mod tests;
