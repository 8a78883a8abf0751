//! Who is in a ComputeDomain, read from its `status.nodes` as stored, and
//! what each member's IMEX daemon is told, as NVIDIA's daemons decide it
//! (third_party/dra-driver-nvidia-gpu), for a status that every member
//! writes its own entry of (a list-map keyed by `name`):
//!
//! - **reading** ([`read`]): only the first [`MAX_ENTRIES`] entries are
//!   read (the clique maximum twice over: the admission policy refuses
//!   more), and an entry that cannot be used is skipped with why (no name,
//!   a name twice, an `ipAddress` that is not an IP address, an index
//!   outside `0..18`, no clique), never freezing the others;
//! - an **index** per clique ([`choose_index`]): a node joining alone takes
//!   the lowest one free in its clique (`getNextAvailableIndex` of
//!   cmd/compute-domain-daemon/cdclique.go), below the most nodes an IMEX
//!   domain takes (18); nodes joining at once (their membership Leases are
//!   there before their entries) take the free ones in the order of their
//!   names; since members write at once, two may still take the same index:
//!   then the Ready one keeps it, else the lower node name, and the other
//!   moves; a Ready member's index never changes, so the IMEX name it is
//!   known by (`compute-domain-daemon-<index>`) holds while it serves;
//! - the **members** of a clique ([`members`]): index to address, a
//!   duplicate settled the same way; what a member's IMEX daemon is told
//!   (an IMEX domain does not span cliques, and members come from one
//!   domain's status only, so two domains on one clique never meet);
//! - the domain is **Ready** ([`readiness`]) once at least `numNodes`
//!   entries are there and every one is Ready (`calculateGlobalStatus` of
//!   NVIDIA's controller); an entry that could not be read counts as not
//!   Ready.
//!
//! Pure: values in, values out.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use serde_json::Value;

use crate::api::{ComputeDomainNode, Readiness};

/// The most nodes one IMEX domain takes when nothing says otherwise
/// (NVIDIA's `defaultMaxNodesPerIMEXDomain`: the nodes of one NVL72 rack).
pub const DEFAULT_MAX_NODES_PER_CLIQUE: i64 = 18;

/// The most entries of `status.nodes` read: two cliques of
/// [`DEFAULT_MAX_NODES_PER_CLIQUE`] (the admission policy's cap).
pub const MAX_ENTRIES: usize = 36;

/// An entry of `status.nodes` that can be used, where it stands in the
/// stored list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// Its position in the stored list (what a JSON patch names).
    pub position: usize,
    /// The entry.
    pub node: ComputeDomainNode,
}

/// An entry not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// Its position in the stored list.
    pub position: usize,
    /// Its name, when it has one.
    pub name: Option<String>,
    /// Why it is not used.
    pub why: String,
}

/// A domain's `status.nodes`, as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entries {
    /// The usable entries, in stored order.
    pub usable: Vec<Placed>,
    /// The entries read but not used.
    pub skipped: Vec<Skipped>,
    /// How many entries the stored list holds, read or not.
    pub total: usize,
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

/// `status.nodes` (absent, or anything the API server stored) read.
pub fn read(nodes: Option<&Value>) -> Entries {
    let list = nodes
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut entries = Entries {
        total: list.len(),
        ..Entries::default()
    };
    let mut names = BTreeSet::new();
    for (position, raw) in list.iter().take(MAX_ENTRIES).enumerate() {
        let name = raw["name"].as_str().map(str::to_owned);
        let checked = serde_json::from_value::<ComputeDomainNode>(raw.clone())
            .map_err(|e| format!("it does not read as an entry: {e}"))
            .and_then(|node| unusable(&node).map_or(Ok(node), Err));
        let why = match checked {
            Ok(node) if names.insert(node.name.clone()) => {
                entries.usable.push(Placed { position, node });
                continue;
            }
            Ok(_) => "its name is given twice".to_owned(),
            Err(why) => why,
        };
        entries.skipped.push(Skipped {
            position,
            name,
            why,
        });
    }
    entries
}

/// Why a well-formed entry cannot be used, if not.
fn unusable(node: &ComputeDomainNode) -> Option<String> {
    if node.name.is_empty() {
        return Some("it has no name".to_owned());
    }
    if node.ip_address.parse::<IpAddr>().is_err() {
        let shown: String = node.ip_address.chars().take(64).collect();
        return Some(format!("its ipAddress {shown:?} is not an IP address"));
    }
    if !(0..DEFAULT_MAX_NODES_PER_CLIQUE).contains(&node.index) {
        return Some(format!(
            "its index {} is not from 0 to {}",
            node.index,
            DEFAULT_MAX_NODES_PER_CLIQUE - 1
        ));
    }
    if node.clique_id.is_empty() {
        return Some("it has no cliqueID".to_owned());
    }
    None
}

impl Entries {
    /// The usable entry of `node`.
    pub fn get(&self, node: &str) -> Option<&Placed> {
        self.usable.iter().find(|p| p.node.name == node)
    }

    /// Every name the list gives (usable or not), with its position.
    pub fn names(&self) -> impl Iterator<Item = (usize, &str)> {
        let usable = self
            .usable
            .iter()
            .map(|p| (p.position, p.node.name.as_str()));
        let skipped =
            (self.skipped.iter()).filter_map(|s| s.name.as_deref().map(|name| (s.position, name)));
        usable.chain(skipped)
    }
}

/// Whether `a` keeps an index it shares with `b`: the Ready one, else the
/// lower node name.
pub fn keeps(a: &ComputeDomainNode, b: &ComputeDomainNode) -> bool {
    match (a.status, b.status) {
        (Readiness::Ready, Readiness::NotReady) => true,
        (Readiness::NotReady, Readiness::Ready) => false,
        _ => a.name < b.name,
    }
}

/// The index `node` is to hold in `clique`, given `others` (every entry
/// but its own), its own entry as stored (`stored`) and the other nodes of
/// its clique joining with it (`joining`: they hold a membership Lease but
/// have no entry yet): the one it holds unless another entry that keeps it
/// holds it too; else, among the indices free, the one of its rank among
/// the joining nodes by name (so nodes joining at once take distinct ones),
/// or the lowest free when there are fewer.
pub fn choose_index(
    others: &[&ComputeDomainNode],
    stored: Option<&ComputeDomainNode>,
    node: &str,
    clique: &str,
    joining: &[&str],
    max_per_clique: i64,
) -> Result<i64, MembershipError> {
    if clique.is_empty() {
        return Err(MembershipError::NoClique(node.to_owned()));
    }
    let in_clique: Vec<&ComputeDomainNode> = (others.iter().copied())
        .filter(|o| o.clique_id == clique)
        .collect();
    if let Some(own) = stored.filter(|s| s.clique_id == clique) {
        let lost = (in_clique.iter()).any(|o| o.index == own.index && keeps(o, own));
        if !lost {
            return Ok(own.index);
        }
    }
    let free: Vec<i64> = (0..max_per_clique)
        .filter(|i| !in_clique.iter().any(|o| o.index == *i))
        .collect();
    let rank = joining.iter().filter(|j| **j < node).count();
    let full = || MembershipError::CliqueFull {
        node: node.to_owned(),
        clique: clique.to_owned(),
        max: max_per_clique,
    };
    free.get(rank)
        .or_else(|| free.first())
        .copied()
        .ok_or_else(full)
}

/// The members of `clique` among `nodes`: address by index, an index two
/// entries hold going to the one that keeps it.
pub fn members<'a>(
    nodes: impl IntoIterator<Item = &'a ComputeDomainNode>,
    clique: &str,
) -> BTreeMap<u32, String> {
    let mut holders: BTreeMap<u32, &ComputeDomainNode> = BTreeMap::new();
    for node in nodes.into_iter().filter(|n| n.clique_id == clique) {
        let Ok(index) = u32::try_from(node.index) else {
            continue;
        };
        let held = holders.get(&index);
        if held.is_none_or(|h| keeps(node, h)) {
            holders.insert(index, node);
        }
    }
    (holders.into_iter())
        .map(|(i, n)| (i, n.ip_address.clone()))
        .collect()
}

/// The domain's readiness: at least `num_nodes` entries (`total` of them,
/// `unread` of which could not be used or were not read), every one Ready.
pub fn readiness<'a>(
    num_nodes: i64,
    nodes: impl IntoIterator<Item = &'a ComputeDomainNode>,
    unread: usize,
) -> Readiness {
    let mut count = unread;
    let mut all_ready = unread == 0;
    for node in nodes {
        count += 1;
        all_ready &= node.status == Readiness::Ready;
    }
    let enough = i64::try_from(count).unwrap_or(i64::MAX) >= num_nodes;
    if enough && all_ready {
        Readiness::Ready
    } else {
        Readiness::NotReady
    }
}

#[cfg(test)]
mod tests;
