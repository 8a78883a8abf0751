//! gpusliced, as the node's turns use it (over its local socket: no API
//! server request): `ListDomains` read as the node's clique and address
//! and, per domain with a channel prepared here, its IMEX daemon's state
//! ([`Local`]); `SetDomainMembers`.

use std::collections::BTreeMap;

use gpuslice_compute_domain::coordinate::Local;
use gpuslice_proto::gpuslice::v1 as pb;

use crate::gpusliced::GpuSlice;

/// What gpusliced says of the node's domains.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeDomains {
    /// The node's clique; empty without a fabric.
    pub clique: String,
    /// The address its IMEX daemons bind.
    pub address: String,
    /// Per domain uid with a channel prepared here: its daemon.
    pub domains: BTreeMap<String, Local>,
}

/// gpusliced, as the turns use it.
pub trait DomainNode {
    /// `ListDomains`.
    fn domains(&self) -> impl Future<Output = Result<NodeDomains, String>> + Send;
    /// `SetDomainMembers`: the members skipped, with why.
    fn set_members(
        &self,
        domain: &str,
        members: &BTreeMap<u32, String>,
    ) -> impl Future<Output = Result<Vec<String>, String>> + Send;
}

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

/// A domain's daemon as ListDomains shows it.
pub fn local(info: &pb::DomainInfo) -> Local {
    Local {
        ready: info.ready,
        members_known: info.members_known,
        connected: info.connected,
        members: (info.members.iter())
            .map(|m| (m.index, m.address.clone()))
            .collect(),
    }
}

impl DomainNode for GpuslicedDomains {
    async fn domains(&self) -> Result<NodeDomains, String> {
        let reply = self
            .client
            .clone()
            .list_domains(pb::ListDomainsRequest {})
            .await
            .map_err(|s| format!("gpusliced ListDomains: {}", s.message()))?
            .into_inner();
        Ok(NodeDomains {
            clique: reply.clique,
            address: reply.bind_address,
            domains: (reply.domains.iter())
                .filter(|d| !d.claims.is_empty())
                .map(|d| (d.domain.clone(), local(d)))
                .collect(),
        })
    }

    async fn set_members(
        &self,
        domain: &str,
        members: &BTreeMap<u32, String>,
    ) -> Result<Vec<String>, String> {
        let request = pb::SetDomainMembersRequest {
            domain: domain.to_owned(),
            members: (members.iter())
                .map(|(index, address)| pb::DomainMember {
                    index: *index,
                    address: address.clone(),
                })
                .collect(),
        };
        self.client
            .clone()
            .set_domain_members(request)
            .await
            .map(|reply| reply.into_inner().skipped)
            .map_err(|s| format!("gpusliced SetDomainMembers {domain}: {}", s.message()))
    }
}
