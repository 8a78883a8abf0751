//! The round's gpusliced: `ListDomains` read as the node's domains (those
//! with a channel prepared here, their daemon's readiness and the peers it
//! was told) and `SetDomainPeers`.

use gpuslice_proto::gpuslice::v1 as pb;

use super::round::{DomainNode, NodeDomains};
use crate::gpusliced::GpuSlice;

/// gpusliced over its socket.
#[derive(Debug, Clone)]
pub struct GpuslicedDomains {
    client: GpuSlice,
}

impl GpuslicedDomains {
    /// Over `client`.
    pub fn new(client: GpuSlice) -> Self {
        Self { client }
    }
}

impl DomainNode for GpuslicedDomains {
    async fn domains(&self) -> Result<NodeDomains, String> {
        let reply = self
            .client
            .clone()
            .list_domains(pb::ListDomainsRequest {})
            .await
            .map_err(|s| s.message().to_owned())?
            .into_inner();
        Ok(NodeDomains {
            clique: reply.clique,
            address: reply.bind_address,
            domains: reply
                .domains
                .into_iter()
                .filter(|d| !d.claims.is_empty())
                .map(|d| {
                    let peers = d.members.iter().map(|m| m.address.clone()).collect();
                    (d.domain, (d.ready, peers))
                })
                .collect(),
        })
    }

    async fn set_peers(&self, domain: &str, peers: &[String]) -> Result<(), String> {
        self.client
            .clone()
            .set_domain_members(pb::SetDomainMembersRequest {
                domain: domain.to_owned(),
                members: peers
                    .iter()
                    .zip(0u32..)
                    .map(|(address, index)| pb::DomainMember {
                        index,
                        address: address.clone(),
                    })
                    .collect(),
            })
            .await
            .map(|_| ())
            .map_err(|s| s.message().to_owned())
    }
}
