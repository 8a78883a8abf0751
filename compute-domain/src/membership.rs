//! Who is in a ComputeDomain and what each member is told, as NVIDIA's
//! controller and daemons decide it (third_party/dra-driver-nvidia-gpu):
//!
//! - a node joins with what it reports of itself (its address, its NVLink
//!   clique, whether its IMEX daemon is ready) and gets an **index**: the
//!   lowest one free in its clique, so a member's index, and the IMEX DNS
//!   name made from it, never changes while others come and go
//!   (`getNextAvailableIndex` of cmd/compute-domain-daemon/cdclique.go),
//!   below the most nodes an IMEX domain takes (NVIDIA's default 18);
//! - the domain is **Ready** once at least `numNodes` nodes are members and
//!   every member is ready (`calculateGlobalStatus` of the controller, the
//!   driver-managed rule: gpuslice follows each node's daemon);
//! - a node's IMEX daemon is configured with its **peers**: the addresses of
//!   the members of its own clique, in index order (an IMEX domain does not
//!   span cliques). Peers come from one domain's status only, so two
//!   domains on one clique never see each other's nodes.
//!
//! Pure: a status in, a status out.

use crate::api::{ComputeDomainNode, ComputeDomainStatus, Readiness};

/// The most nodes one IMEX domain takes when nothing says otherwise
/// (NVIDIA's `defaultMaxNodesPerIMEXDomain`: the nodes of one NVL72 rack).
pub const DEFAULT_MAX_NODES_PER_CLIQUE: i64 = 18;

/// What a node reports of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The Node's name.
    pub node: String,
    /// The address its IMEX daemon listens on.
    pub ip_address: String,
    /// Its GPUs' NVLink clique (`<cluster uuid>.<clique id>`).
    pub clique_id: String,
    /// Whether its IMEX daemon brokers memory now.
    pub ready: bool,
}

/// Why a node cannot join.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MembershipError {
    #[error(
        "node {node} cannot join clique {clique:?}: it already has {max} nodes, the most one IMEX domain takes"
    )]
    CliqueFull {
        node: String,
        clique: String,
        max: i64,
    },
    #[error(
        "node {0} reports no NVLink clique: it is not on a multi-node NVLink fabric (a GB200 NVL rack), so it cannot join a ComputeDomain"
    )]
    NoClique(String),
}

/// `status` with `report`'s node in it: a new member gets the lowest index
/// free in its clique; a member keeps its index unless its clique changed.
pub fn join(
    status: &ComputeDomainStatus,
    report: &Report,
    max_per_clique: i64,
) -> Result<ComputeDomainStatus, MembershipError> {
    if report.clique_id.is_empty() {
        return Err(MembershipError::NoClique(report.node.clone()));
    }
    let readiness = if report.ready {
        Readiness::Ready
    } else {
        Readiness::NotReady
    };
    let mut next = status.clone();
    let kept = next
        .nodes
        .iter()
        .position(|n| n.name == report.node && n.clique_id == report.clique_id);
    if let Some(at) = kept {
        let member = &mut next.nodes[at];
        member.ip_address.clone_from(&report.ip_address);
        member.status = readiness;
    } else {
        next.nodes.retain(|n| n.name != report.node);
        let index = free_index(&next.nodes, &report.clique_id);
        if index >= max_per_clique {
            return Err(MembershipError::CliqueFull {
                node: report.node.clone(),
                clique: report.clique_id.clone(),
                max: max_per_clique,
            });
        }
        next.nodes.push(ComputeDomainNode {
            name: report.node.clone(),
            ip_address: report.ip_address.clone(),
            clique_id: report.clique_id.clone(),
            index,
            status: readiness,
        });
        next.nodes.sort_by(|a, b| a.name.cmp(&b.name));
    }
    Ok(next)
}

/// `status` without `node` (lost, or its last pod gone); the others keep
/// their indices.
pub fn leave(status: &ComputeDomainStatus, node: &str) -> ComputeDomainStatus {
    let mut next = status.clone();
    next.nodes.retain(|n| n.name != node);
    next
}

/// The lowest index no member of `clique` holds.
fn free_index(nodes: &[ComputeDomainNode], clique: &str) -> i64 {
    let mut index = 0;
    while nodes
        .iter()
        .any(|n| n.clique_id == clique && n.index == index)
    {
        index += 1;
    }
    index
}

/// The domain's readiness: at least `num_nodes` members, every one ready.
pub fn readiness(num_nodes: i64, status: &ComputeDomainStatus) -> Readiness {
    let enough = i64::try_from(status.nodes.len()).unwrap_or(i64::MAX) >= num_nodes;
    if enough && status.nodes.iter().all(|n| n.status == Readiness::Ready) {
        Readiness::Ready
    } else {
        Readiness::NotReady
    }
}

/// The addresses `node`'s IMEX daemon is configured with: every member of
/// its clique (itself included, as the IMEX nodes config lists the whole
/// domain), in index order; empty when `node` is not a member.
pub fn peers(status: &ComputeDomainStatus, node: &str) -> Vec<String> {
    let Some(me) = status.nodes.iter().find(|n| n.name == node) else {
        return Vec::new();
    };
    let mut clique: Vec<&ComputeDomainNode> = status
        .nodes
        .iter()
        .filter(|n| n.clique_id == me.clique_id)
        .collect();
    clique.sort_by_key(|n| n.index);
    clique.iter().map(|n| n.ip_address.clone()).collect()
}

#[cfg(test)]
mod tests;
