//! The `ComputeDomain` object as NVIDIA defines it
//! (api/nvidia.com/resource/v1beta1/computedomain.go, and the CRD generated
//! from it): spec `numNodes` and `channel` (the ResourceClaimTemplate to make
//! and whether a claim gets one IMEX channel or all of them), status `status`
//! and one entry per member node. [`ComputeDomain::validate`] applies the
//! CRD's rules, and the one the API server applies later to the template's
//! name, so a bad object is refused with what to fix before anything is made
//! for it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use crate::API_VERSION;
pub use gpuslice_imex::config::AllocationMode;

/// `kind` of the object.
pub const KIND: &str = "ComputeDomain";

/// A set of nodes prepared to run one multi-node workload: its pods share
/// GPU memory over NVLink through IMEX channels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputeDomain {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub metadata: ObjectMeta,
    pub spec: ComputeDomainSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ComputeDomainStatus>,
}

/// What the domain is to be (immutable once made).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ComputeDomainSpec {
    /// Nodes expected to join; 0 (the default) leaves readiness to each
    /// node's daemon. Deprecated by NVIDIA, kept for its manifests.
    #[serde(default)]
    pub num_nodes: i64,
    /// The channel its pods ask for; the CRD requires it.
    pub channel: Option<ChannelSpec>,
}

/// The channel a workload runs with inside the domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelSpec {
    /// The ResourceClaimTemplate made for the domain, named by its pods.
    pub resource_claim_template: TemplateName,
    /// One channel per claim, or all of them.
    #[serde(default)]
    pub allocation_mode: AllocationMode,
}

/// `channel.resourceClaimTemplate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TemplateName {
    pub name: String,
}

/// Ready or not, for the domain and for each of its nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Readiness {
    Ready,
    #[default]
    NotReady,
}

/// What the domain is now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ComputeDomainStatus {
    /// Ready once every expected node's IMEX daemon is.
    #[serde(default)]
    pub status: Readiness,
    /// The member nodes, one entry per name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<ComputeDomainNode>,
}

/// One member node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputeDomainNode {
    pub name: String,
    #[serde(rename = "ipAddress")]
    pub ip_address: String,
    /// The NVLink partition (clique) the node's GPUs are in.
    #[serde(rename = "cliqueID")]
    pub clique_id: String,
    /// Unique within the clique; fixes the node's IMEX DNS name.
    #[serde(default)]
    pub index: i64,
    /// Whether the node's IMEX daemon brokers memory now.
    #[serde(default)]
    pub status: Readiness,
}

/// Why a ComputeDomain cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApiError {
    #[error(
        "apiVersion {found:?} kind {kind:?} is not a ComputeDomain: write apiVersion: {API_VERSION} and kind: {KIND}"
    )]
    NotAComputeDomain { found: String, kind: String },
    #[error(
        "spec.numNodes is {0}: it must be 0 or more (0 lets each node's IMEX daemon decide readiness)"
    )]
    NegativeNodes(i64),
    #[error(
        "spec.channel is missing: name the ResourceClaimTemplate its pods use, in spec.channel.resourceClaimTemplate.name"
    )]
    NoChannel,
    #[error(
        "spec.channel.resourceClaimTemplate.name {name:?} cannot name a ResourceClaimTemplate: {why}"
    )]
    BadTemplateName { name: String, why: &'static str },
    #[error("status.nodes names {0:?} twice: each node is one entry")]
    NodeTwice(String),
    #[error(
        "status.nodes gives nodes {first:?} and {second:?} index {index} in clique {clique:?}: an index is unique within a clique"
    )]
    IndexTwice {
        first: String,
        second: String,
        clique: String,
        index: i64,
    },
}

impl ComputeDomain {
    /// The CRD's rules (apiVersion and kind, `numNodes` ≥ 0, a channel with
    /// a template name), the template name a valid object name (a DNS-1123
    /// subdomain, as the API server will ask of the ResourceClaimTemplate),
    /// and, when a status is given, one entry per node and per (clique,
    /// index).
    pub fn validate(&self) -> Result<(), ApiError> {
        if self.api_version != API_VERSION || self.kind != KIND {
            return Err(ApiError::NotAComputeDomain {
                found: self.api_version.clone(),
                kind: self.kind.clone(),
            });
        }
        if self.spec.num_nodes < 0 {
            return Err(ApiError::NegativeNodes(self.spec.num_nodes));
        }
        let channel = self.spec.channel.as_ref().ok_or(ApiError::NoChannel)?;
        let name = &channel.resource_claim_template.name;
        if let Some(why) = subdomain_problem(name) {
            return Err(ApiError::BadTemplateName {
                name: name.clone(),
                why,
            });
        }
        self.status
            .as_ref()
            .map_or(Ok(()), ComputeDomainStatus::validate)
    }

    /// The channel spec, once [`Self::validate`] has passed.
    pub fn channel(&self) -> Result<&ChannelSpec, ApiError> {
        self.spec.channel.as_ref().ok_or(ApiError::NoChannel)
    }
}

impl ComputeDomainStatus {
    fn validate(&self) -> Result<(), ApiError> {
        for (i, node) in self.nodes.iter().enumerate() {
            for other in &self.nodes[..i] {
                if other.name == node.name {
                    return Err(ApiError::NodeTwice(node.name.clone()));
                }
                if other.clique_id == node.clique_id && other.index == node.index {
                    return Err(ApiError::IndexTwice {
                        first: other.name.clone(),
                        second: node.name.clone(),
                        clique: node.clique_id.clone(),
                        index: node.index,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Why `name` is not a DNS-1123 subdomain (Kubernetes' object name rule:
/// at most 253 characters, lowercase letters, digits, '-' and '.', each
/// dot-separated part starting and ending with a letter or digit), if not.
fn subdomain_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("it is empty");
    }
    if name.len() > 253 {
        return Some("it is longer than 253 characters");
    }
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    for part in name.split('.') {
        let edges_ok = part
            .chars()
            .next()
            .zip(part.chars().last())
            .is_some_and(|(a, b)| a.is_ascii_alphanumeric() && b.is_ascii_alphanumeric());
        if !part.chars().all(allowed) || !edges_ok {
            return Some(
                "an object name is lowercase letters, digits, '-' and '.', each part between \
                 dots starting and ending with a letter or digit",
            );
        }
    }
    None
}

#[cfg(test)]
mod tests;
