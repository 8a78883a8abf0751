//! The ResourceClaimTemplate made from a ComputeDomain, the one its pods
//! name in `resourceClaims[].resourceClaimTemplateName`, as NVIDIA's
//! controller makes it (templates/compute-domain-workload-claim-template.
//! tmpl.yaml, filled in by cmd/compute-domain-controller/
//! resourceclaimtemplate.go): in the domain's namespace, named by
//! `spec.channel.resourceClaimTemplate.name`, labelled with the domain's uid
//! and held by its finalizer until the domain is cleaned up; one request
//! `channel` of the default-channel DeviceClass, configured with the
//! domain's `ComputeDomainChannelConfig` (its uid and allocation mode).
//!
//! gpuslice's plugins make it without a controller ([`owned_template`]):
//! NVIDIA's template with an ownerReference to its ComputeDomain
//! (controller) and no finalizer, so the garbage collector deletes it with
//! the domain and no node needs the right to delete templates. Whoever
//! finds one already there checks that it is the domain's
//! ([`check_found`]) before taking it for made. Nodes wait
//! [`creation_delay`] before making one, so that of many nodes seeing a
//! new domain at once usually one makes it.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::resource::v1::{
    DeviceClaim, DeviceClaimConfiguration, DeviceRequest, ExactDeviceRequest,
    OpaqueDeviceConfiguration, ResourceClaimSpec, ResourceClaimTemplate, ResourceClaimTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;

use crate::api::{ApiError, ComputeDomain, KIND};
use crate::config::ChannelConfig;
use crate::{
    API_VERSION, COMPUTE_DOMAIN_LABEL, DEFAULT_CHANNEL_CLASS, DRIVER_NAME, TARGET_LABEL,
    TARGET_WORKLOAD,
};

/// The request's name in the template.
pub const REQUEST: &str = "channel";

/// Why no template can be made for a domain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(
        "the ComputeDomain has no metadata.{0} yet: the API server gives it one when it is created"
    )]
    NotCreated(&'static str),
}

/// The workload ResourceClaimTemplate of `domain`, a ComputeDomain as the
/// API server holds it (with its namespace and uid).
pub fn workload_template(domain: &ComputeDomain) -> Result<ResourceClaimTemplate, TemplateError> {
    domain.validate()?;
    let channel = domain.channel()?;
    let namespace = domain
        .metadata
        .namespace
        .clone()
        .ok_or(TemplateError::NotCreated("namespace"))?;
    let uid = domain
        .metadata
        .uid
        .clone()
        .ok_or(TemplateError::NotCreated("uid"))?;
    let config = ChannelConfig::new(&uid, channel.allocation_mode);
    let labels = BTreeMap::from([
        (COMPUTE_DOMAIN_LABEL.to_owned(), uid),
        (TARGET_LABEL.to_owned(), TARGET_WORKLOAD.to_owned()),
    ]);
    Ok(ResourceClaimTemplate {
        metadata: ObjectMeta {
            namespace: Some(namespace),
            name: Some(channel.resource_claim_template.name.clone()),
            finalizers: Some(vec![COMPUTE_DOMAIN_LABEL.to_owned()]),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: ResourceClaimTemplateSpec {
            metadata: None,
            spec: ResourceClaimSpec {
                devices: Some(DeviceClaim {
                    requests: Some(vec![DeviceRequest {
                        name: REQUEST.to_owned(),
                        exactly: Some(ExactDeviceRequest {
                            device_class_name: DEFAULT_CHANNEL_CLASS.to_owned(),
                            ..ExactDeviceRequest::default()
                        }),
                        first_available: None,
                    }]),
                    config: Some(vec![DeviceClaimConfiguration {
                        requests: Some(vec![REQUEST.to_owned()]),
                        opaque: Some(OpaqueDeviceConfiguration {
                            driver: DRIVER_NAME.to_owned(),
                            parameters: RawExtension(config.to_parameters()),
                        }),
                    }]),
                    constraints: None,
                }),
            },
        },
    })
}

/// The template gpuslice's plugins make for `domain`: [`workload_template`]
/// owned by the domain (an ownerReference, controller), without NVIDIA's
/// finalizer.
pub fn owned_template(domain: &ComputeDomain) -> Result<ResourceClaimTemplate, TemplateError> {
    let mut template = workload_template(domain)?;
    let name = domain
        .metadata
        .name
        .clone()
        .ok_or(TemplateError::NotCreated("name"))?;
    let uid = domain.metadata.uid.clone().unwrap_or_default();
    template.metadata.finalizers = None;
    template.metadata.owner_references = Some(vec![OwnerReference {
        api_version: API_VERSION.to_owned(),
        kind: KIND.to_owned(),
        name,
        uid,
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    Ok(template)
}

/// Why a template found under the domain's template name is not the
/// domain's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotTheDomains {
    #[error("its label {COMPUTE_DOMAIN_LABEL} is {found:?}, not the domain's uid")]
    Label { found: Option<String> },
    #[error("it has no ownerReference to the domain (controller) but {found}")]
    Owner { found: String },
    #[error("its spec is not the one made for the domain")]
    Spec,
}

/// Whether `found`, the template stored under `made`'s name, is the one
/// `made` ([`owned_template`]) would be: the domain's uid as label and as
/// controlling owner, and the same spec.
pub fn check_found(
    found: &ResourceClaimTemplate,
    made: &ResourceClaimTemplate,
) -> Result<(), NotTheDomains> {
    let label = |t: &ResourceClaimTemplate| {
        (t.metadata.labels.as_ref()).and_then(|l| l.get(COMPUTE_DOMAIN_LABEL).cloned())
    };
    let uid = label(made);
    if label(found) != uid {
        return Err(NotTheDomains::Label {
            found: label(found),
        });
    }
    let owners = found
        .metadata
        .owner_references
        .as_deref()
        .unwrap_or_default();
    let owned = owners
        .iter()
        .any(|o| Some(&o.uid) == uid.as_ref() && o.kind == KIND && o.controller == Some(true));
    if !owned {
        let found: Vec<String> = owners
            .iter()
            .map(|o| format!("{} {} ({})", o.kind, o.name, o.uid))
            .collect();
        return Err(NotTheDomains::Owner {
            found: if found.is_empty() {
                "none".to_owned()
            } else {
                found.join(", ")
            },
        });
    }
    if found.spec != made.spec {
        return Err(NotTheDomains::Spec);
    }
    Ok(())
}

/// The window [`creation_delay`] spreads the nodes' creates over.
pub const CREATION_WINDOW: Duration = Duration::from_secs(3);

/// The share of nodes that make the template at once, without waiting.
const AT_ONCE: f64 = 1.0 / 10_000.0;

/// How long `node` waits, after it first sees the domain `uid` without its
/// template, before it makes it (unless its cache shows it made by then).
///
/// Each node draws `u` in [0, 1) from a hash of (node, uid) and waits
/// `CREATION_WINDOW * ln(u / AT_ONCE) / ln(1 / AT_ONCE)` (0 below
/// `AT_ONCE`): the share of nodes that have begun by time `t` grows as
/// `AT_ONCE * e^(t/tau)` (tau = window / ln 10^4 = 0.33 s), so however many
/// nodes there are, few begin within one watch latency of the first (at
/// 1,000 nodes and 0.1 s, the first begins near 0.75 s and fewer than one
/// other on average before the first create reaches the others), while a
/// small cluster waits at most the window (4 nodes: about 2.6 s).
pub fn creation_delay(node: &str, uid: &str) -> Duration {
    let hash = fnv1a(node.bytes().chain([b'/']).chain(uid.bytes()));
    // 53 bits: exact in an f64.
    let draw = (hash >> 11) as f64 / (1_u64 << 53) as f64;
    if draw <= AT_ONCE {
        return Duration::ZERO;
    }
    let share = (draw / AT_ONCE).ln() / (1.0 / AT_ONCE).ln();
    CREATION_WINDOW.mul_f64(share.clamp(0.0, 1.0))
}

/// FNV-1a, 64 bits: stable across builds and platforms.
fn fnv1a(bytes: impl Iterator<Item = u8>) -> u64 {
    bytes.fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests;
