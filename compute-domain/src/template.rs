//! The ResourceClaimTemplate made from a ComputeDomain, the one its pods
//! name in `resourceClaims[].resourceClaimTemplateName`, as NVIDIA's
//! controller makes it (templates/compute-domain-workload-claim-template.
//! tmpl.yaml, filled in by cmd/compute-domain-controller/
//! resourceclaimtemplate.go): in the domain's namespace, named by
//! `spec.channel.resourceClaimTemplate.name`, labelled with the domain's uid
//! and held by its finalizer until the domain is cleaned up; one request
//! `channel` of the default-channel DeviceClass, configured with the
//! domain's `ComputeDomainChannelConfig` (its uid and allocation mode).

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    DeviceClaim, DeviceClaimConfiguration, DeviceRequest, ExactDeviceRequest,
    OpaqueDeviceConfiguration, ResourceClaimSpec, ResourceClaimTemplate, ResourceClaimTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;

use crate::api::{ApiError, ComputeDomain};
use crate::config::ChannelConfig;
use crate::{
    COMPUTE_DOMAIN_LABEL, DEFAULT_CHANNEL_CLASS, DRIVER_NAME, TARGET_LABEL, TARGET_WORKLOAD,
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
