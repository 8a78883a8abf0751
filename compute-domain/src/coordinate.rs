//! One node's turn at a ComputeDomain's status. gpuslice has no controller
//! of its own: each node's plugin keeps its own entry of the status (joined
//! while the node has a channel of the domain prepared, with its address,
//! clique and its IMEX daemon's readiness; gone once it has none), drops
//! the entries of Nodes the API server no longer has (a lost node leaves its
//! peers), and sets the domain's readiness; writes race through the API
//! server's resourceVersion (a conflict is read again and retried), so
//! every node's turn starts from the status as stored. What each node's
//! IMEX daemon is told is [`crate::membership::peers`] of the result.
//!
//! Pure: the domain and the node's view in, the status to write (if any)
//! out.

use crate::api::{ComputeDomain, ComputeDomainStatus};
use crate::membership::{self, MembershipError, Report};

/// What a node sees of itself for one domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView {
    /// The Node's name.
    pub node: String,
    /// The address its IMEX daemon binds.
    pub ip_address: String,
    /// Its GPUs' NVLink clique; empty without a fabric.
    pub clique_id: String,
    /// It has a channel of the domain prepared.
    pub member: bool,
    /// Its IMEX daemon for the domain reports READY.
    pub ready: bool,
}

/// The status after `view`'s turn, or `None` when the stored one is
/// already it. `node_exists` says whether the API server has a Node of
/// that name; members without one are dropped.
pub fn next_status(
    domain: &ComputeDomain,
    view: &NodeView,
    node_exists: &dyn Fn(&str) -> bool,
    max_per_clique: i64,
) -> Result<Option<ComputeDomainStatus>, MembershipError> {
    let stored = domain.status.clone().unwrap_or_default();
    let mut next = if view.member {
        let report = Report {
            node: view.node.clone(),
            ip_address: view.ip_address.clone(),
            clique_id: view.clique_id.clone(),
            ready: view.ready,
        };
        membership::join(&stored, &report, max_per_clique)?
    } else {
        membership::leave(&stored, &view.node)
    };
    next.nodes
        .retain(|n| n.name == view.node || node_exists(&n.name));
    next.status = membership::readiness(domain.spec.num_nodes, &next);
    Ok((next != stored).then_some(next))
}

#[cfg(test)]
mod tests;
