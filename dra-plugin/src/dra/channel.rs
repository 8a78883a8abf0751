//! What a channel claim's prepare checks before gpusliced sees it, and the
//! ComputeDomain it then vouches for (`PrepareChannel`'s `domain`): the
//! claim is allocated to this node (every channel result's pool is this
//! node's), and the domain its `ComputeDomainChannelConfig` names exists in
//! the claim's own namespace and is not being deleted. One tenant per
//! domain: a claim in namespace B naming A's domain uid is refused here,
//! and gpusliced refuses a claim whose domain nobody vouched for. Every
//! refusal names the namespaces.

use std::sync::Arc;

use gpuslice_compute_domain::config::{OpaqueConfig, parse};
use gpuslice_proto::gpuslice::v1 as pb;
use tokio::sync::Notify;

use crate::claim::ClaimPlan;
use crate::compute_domains::status::lookup::{Found, Lookup};
use crate::config::COMPUTE_DOMAIN_DRIVER;

/// What the channel driver's prepares need beyond the GPU driver's.
#[derive(Debug, Clone)]
pub struct ChannelSide {
    /// This node's name: the pool of its channels.
    pub node: String,
    /// Finds a claim's ComputeDomain.
    pub lookup: Lookup,
    /// Wakes the loop keeping the domains, after a prepare or unprepare.
    pub wake: Arc<Notify>,
}

/// Why a channel claim is not prepared here.
#[derive(Debug, thiserror::Error)]
pub enum ChannelRefusal {
    #[error(
        "channel claim {claim} is allocated to pool {pools} of driver {COMPUTE_DOMAIN_DRIVER}, \
         not to this node {node}: a node prepares only the channels the scheduler allocated to it"
    )]
    NotThisNode {
        claim: String,
        node: String,
        pools: String,
    },
    #[error(
        "channel claim {claim} has no ComputeDomainChannelConfig naming its ComputeDomain \
         (domainID){why}"
    )]
    NoDomain { claim: String, why: String },
    #[error(
        "ComputeDomain {uid} named by channel claim {claim} does not exist in the claim's \
         namespace {namespace}: no channel is prepared for it"
    )]
    Missing {
        claim: String,
        uid: String,
        namespace: String,
    },
    #[error(
        "ComputeDomain {uid} named by channel claim {claim} is in namespace {found}, not in the \
         claim's namespace {namespace}: a channel claim joins only a ComputeDomain of its own \
         namespace"
    )]
    Elsewhere {
        claim: String,
        uid: String,
        namespace: String,
        found: String,
    },
    #[error(
        "ComputeDomain {namespace}/{name} ({uid}) named by channel claim {claim} is being \
         deleted: no new channel is prepared for it"
    )]
    Deleting {
        claim: String,
        uid: String,
        namespace: String,
        name: String,
    },
    #[error("cannot look up ComputeDomain {uid} for channel claim {claim}: {error}")]
    Lookup {
        claim: String,
        uid: String,
        error: kube::Error,
    },
}

/// The domain uid of a claim's channel config: the first config that reads
/// as one, or why none does.
fn domain_uid(plan: &ClaimPlan) -> Result<String, String> {
    let mut why = String::new();
    for config in &plan.configs {
        let parsed = serde_json::from_str(&config.parameters_json)
            .map_err(|e| e.to_string())
            .and_then(|v| parse(&v).map_err(|e| e.to_string()));
        match parsed {
            Ok(OpaqueConfig::Channel(channel)) => return Ok(channel.domain_id),
            Ok(OpaqueConfig::Daemon(_)) => why = ": a ComputeDomainDaemonConfig is not one".into(),
            Err(e) => why = format!(": {e}"),
        }
    }
    Err(why)
}

impl ChannelSide {
    /// The domain to vouch for, for the claim `claim` (`namespace/name`)
    /// in `namespace` planned as `plan`.
    pub async fn vouch(
        &self,
        claim: &str,
        namespace: &str,
        plan: &ClaimPlan,
    ) -> Result<pb::ComputeDomainRef, ChannelRefusal> {
        let elsewhere: Vec<&str> = (plan.devices.iter())
            .map(|d| d.pool.as_str())
            .filter(|pool| *pool != self.node)
            .collect();
        if !elsewhere.is_empty() {
            return Err(ChannelRefusal::NotThisNode {
                claim: claim.to_owned(),
                node: self.node.clone(),
                pools: elsewhere.join(", "),
            });
        }
        let uid = domain_uid(plan).map_err(|why| ChannelRefusal::NoDomain {
            claim: claim.to_owned(),
            why,
        })?;
        let found =
            self.lookup
                .find(&uid, namespace)
                .await
                .map_err(|error| ChannelRefusal::Lookup {
                    claim: claim.to_owned(),
                    uid: uid.clone(),
                    error,
                })?;
        let (claim, namespace) = (claim.to_owned(), namespace.to_owned());
        match found {
            Found::Here { name } => Ok(pb::ComputeDomainRef {
                namespace,
                name,
                uid,
            }),
            Found::Deleting { name } => Err(ChannelRefusal::Deleting {
                claim,
                uid,
                namespace,
                name,
            }),
            Found::Elsewhere(namespaces) => Err(ChannelRefusal::Elsewhere {
                claim,
                uid,
                namespace,
                found: namespaces.join(", "),
            }),
            Found::Missing => Err(ChannelRefusal::Missing {
                claim,
                uid,
                namespace,
            }),
        }
    }
}
