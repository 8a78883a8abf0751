//! One node's turn at one ComputeDomain, decided from what the node sees:
//! the domain as its watch cache holds it, the membership Leases there
//! are, and what gpusliced says of the domain's IMEX daemon here. gpuslice
//! has no controller: each node's plugin keeps its own entry of
//! `status.nodes` (server-side apply under a field manager of its own, so
//! members never conflict), and this says what it is to write, and when.
//!
//! - A node with a channel of the domain prepared is a **member**: it holds
//!   a membership Lease (created before its entry, so the others can tell
//!   a node that is gone from one that has not written yet) and an entry
//!   with its address, clique and index ([`membership::choose_index`]).
//! - Its entry is **Ready** only when its IMEX daemon is READY, knows the
//!   members it was last told, reaches every other one, and those members
//!   are exactly its clique's entries as the node sees them (its own as it
//!   is to be written): no Ready before the members know each other.
//! - It writes (its entry and `status.status`, computed over the entries it
//!   sees with its own as it is to be written) only when that differs from
//!   what is stored: nothing at rest. When only `status.status` is stale
//!   (every member sees that at once), the first member corrects it; the
//!   others are told to wait ([`Turn::defer`]).
//! - Its daemon is told the clique's members when they differ from what it
//!   has, but while they are unsettled (fewer entries than `numNodes`, two
//!   entries on one index, a node joining its clique with a Lease and no
//!   entry yet) a new member holds that back a while ([`View::patient`]):
//!   IMEX takes one SIGUSR1 per 5 s, so every telling too early costs the
//!   next one that long.
//! - A node joining creates its Lease first and applies its entry at its
//!   next turn, once its cache shows the Lease: by then it usually sees the
//!   Leases of the nodes joining with it, and they take distinct indices.
//! - A node with no channel left **leaves**: its entry goes (applied
//!   without it), then its Lease.
//! - The entry of a node that is **gone** (its Lease gone: the garbage
//!   collector deletes it with its Node) is removed by the live member of
//!   its clique with the lowest index, or by any member once the caller
//!   says it is overdue; which entries are gone is the caller's to say,
//!   since it needs a clock.
//!
//! Pure: views in, a [`Turn`] out.

use std::collections::{BTreeMap, BTreeSet};

use crate::api::{ComputeDomainNode, Readiness};
use crate::membership::{self, Entries, MembershipError};

/// The label naming the domain (its uid) on a membership Lease.
pub const LEASE_DOMAIN_LABEL: &str = "gpuslice.dev/compute-domain";
/// The label naming the node on a membership Lease.
pub const LEASE_NODE_LABEL: &str = "gpuslice.dev/node";
/// The label naming the node's clique on a membership Lease (so nodes
/// joining at once take distinct indices); absent when the clique is not
/// a label value.
pub const LEASE_CLIQUE_LABEL: &str = "gpuslice.dev/clique";

/// The name of `node`'s membership Lease of the domain `uid`.
pub fn lease_name(uid: &str, node: &str) -> String {
    format!("{uid}.{node}")
}

/// The node taking its turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Me {
    /// Its Node's name.
    pub node: String,
    /// The address its IMEX daemons bind.
    pub address: String,
    /// Its GPUs' NVLink clique; empty without a fabric.
    pub clique: String,
}

/// What gpusliced says of the domain's IMEX daemon on the node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Local {
    /// `nvidia-imex-ctl -q` answered READY.
    pub ready: bool,
    /// Its process knows the members it was last told.
    pub members_known: bool,
    /// It reaches every other one of them.
    pub connected: bool,
    /// Those members: address by index.
    pub members: BTreeMap<u32, String>,
}

/// The domain as the node's caches hold it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View<'a> {
    /// `spec.numNodes`.
    pub num_nodes: i64,
    /// `status.status` as stored, if any.
    pub status: Option<Readiness>,
    /// `status.nodes` as read.
    pub entries: &'a Entries,
    /// The domain's membership Leases: the nodes holding one, with the
    /// clique each is labelled with (empty when not).
    pub leases: &'a BTreeMap<String, String>,
    /// The entries of nodes that are gone, by name: true when overdue (any
    /// member removes it then, not only the first).
    pub gone: &'a BTreeMap<String, bool>,
    /// The node became a member a moment ago and may wait for unsettled
    /// members to settle before it tells its daemon: IMEX takes one SIGUSR1
    /// per 5 s, so members told one by one would make the last ones wait
    /// that long; told once settled, they cost one.
    pub patient: bool,
}

/// What to do about the node's membership Lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseStep {
    /// Nothing.
    Keep,
    /// Create it (before the entry is applied).
    Create,
    /// Delete it (the entry is gone).
    Delete,
}

/// What the node applies: its entry (None: none, so it goes) and
/// `status.status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Apply {
    pub entry: Option<ComputeDomainNode>,
    pub status: Readiness,
}

/// The node's turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    pub lease: LeaseStep,
    /// What to apply, when it differs from what is stored.
    pub apply: Option<Apply>,
    /// The members to tell the node's daemon, when they differ from what it
    /// has.
    pub members: Option<BTreeMap<u32, String>>,
    /// Gone entries this node removes: (position, name).
    pub remove: Vec<(usize, String)>,
    /// `status.status` once `remove` is done, written with the removal (a
    /// Ready status over fewer than `numNodes` entries is refused).
    pub remove_status: Readiness,
    /// Why the node cannot be a member, if so.
    pub problem: Option<MembershipError>,
    /// The apply only corrects `status.status` (the node's entry is as
    /// stored) and another member comes first for that: every member sees
    /// the same stale `status.status` at once, so the caller lets the first
    /// correct it and writes only if it is still wrong a moment later.
    pub defer: bool,
}

/// The turn of `me` (`local`: its daemon's state, None when it has no
/// channel of the domain).
pub fn turn(me: &Me, local: Option<&Local>, view: &View<'_>) -> Turn {
    let mut turn = Turn {
        lease: LeaseStep::Keep,
        apply: None,
        members: None,
        remove: removals(me, view),
        remove_status: Readiness::NotReady,
        problem: None,
        defer: false,
    };
    let stored = view.entries.get(&me.node).map(|p| &p.node);
    let others: Vec<&ComputeDomainNode> = (view.entries.usable.iter())
        .map(|p| &p.node)
        .filter(|n| n.name != me.node)
        .collect();
    let own_listed = view.entries.names().any(|(_, name)| name == me.node);
    let own_lease = view.leases.contains_key(&me.node);
    // Entries not used, but counted; an own one that could not be read is
    // replaced (or removed) by this turn.
    let unread = (view.entries.skipped.len()
        + view.entries.total.saturating_sub(membership::MAX_ENTRIES))
    .saturating_sub(usize::from(own_listed && stored.is_none()));
    let Some(local) = local else {
        // A node leaving removes its own entry only: its apply moves the
        // positions a removal would test.
        turn.remove.clear();
        if own_listed {
            let status = membership::readiness(view.num_nodes, others, unread);
            turn.apply = Some(Apply {
                entry: None,
                status,
            });
        } else if own_lease {
            turn.lease = LeaseStep::Delete;
        }
        return turn;
    };
    let joining: Vec<&str> = (view.leases.iter())
        .filter(|(node, clique)| {
            **clique == me.clique && **node != me.node && view.entries.get(node).is_none()
        })
        .map(|(node, _)| node.as_str())
        .collect();
    let index = match membership::choose_index(
        &others,
        stored,
        &me.node,
        &me.clique,
        &joining,
        membership::DEFAULT_MAX_NODES_PER_CLIQUE,
    ) {
        Ok(index) => index,
        Err(err) => {
            turn.problem = Some(err);
            return turn;
        }
    };
    if !own_lease {
        turn.lease = LeaseStep::Create;
        return turn;
    }
    let mut entry = ComputeDomainNode {
        name: me.node.clone(),
        ip_address: me.address.clone(),
        clique_id: me.clique.clone(),
        index,
        status: Readiness::NotReady,
    };
    let wanted = membership::members(others.iter().copied().chain([&entry]), &me.clique);
    let ready = local.ready && local.members_known && local.connected && local.members == wanted;
    if ready {
        entry.status = Readiness::Ready;
    }
    let status = membership::readiness(
        view.num_nodes,
        others.iter().copied().chain([&entry]),
        unread,
    );
    turn.remove_status = after_removal(view, &turn.remove, &others, Some(&entry), unread);
    if stored != Some(&entry) || view.status != Some(status) {
        turn.defer = stored == Some(&entry) && !first_member(me, view);
        turn.apply = Some(Apply {
            entry: Some(entry),
            status,
        });
    }
    let in_clique = 1 + (others.iter()).filter(|n| n.clique_id == me.clique).count();
    let forming = i64::try_from(view.entries.total).unwrap_or(i64::MAX) < view.num_nodes;
    let unsettled = forming || wanted.len() < in_clique || !joining.is_empty();
    if local.members != wanted && !(view.patient && unsettled) {
        turn.members = Some(wanted);
    }
    turn
}

/// `status.status` over `others` and `own` without the entries `remove`d.
fn after_removal(
    view: &View<'_>,
    remove: &[(usize, String)],
    others: &[&ComputeDomainNode],
    own: Option<&ComputeDomainNode>,
    unread: usize,
) -> Readiness {
    let kept = (others.iter().copied())
        .filter(|n| !remove.iter().any(|(_, name)| *name == n.name))
        .chain(own);
    membership::readiness(view.num_nodes, kept, unread)
}

/// Whether `me` is the domain's first live member: the lowest (index,
/// name) among the entries of nodes that are not gone.
fn first_member(me: &Me, view: &View<'_>) -> bool {
    (view.entries.usable.iter())
        .map(|p| &p.node)
        .filter(|n| !view.gone.contains_key(&n.name))
        .min_by(|a, b| (a.index, &a.name).cmp(&(b.index, &b.name)))
        .is_some_and(|n| n.name == me.node)
}

/// The gone entries `me` removes: those whose first live member (lowest
/// index in their clique, else in the domain) it is, and every overdue one,
/// when it is a live member itself.
fn removals(me: &Me, view: &View<'_>) -> Vec<(usize, String)> {
    let live: Vec<&ComputeDomainNode> = (view.entries.usable.iter())
        .map(|p| &p.node)
        .filter(|n| !view.gone.contains_key(&n.name))
        .collect();
    if !live.iter().any(|n| n.name == me.node) {
        return Vec::new();
    }
    let first_of = |clique: Option<&str>| {
        (live.iter())
            .filter(|n| clique.is_none_or(|c| n.clique_id == c))
            .min_by(|a, b| (a.index, &a.name).cmp(&(b.index, &b.name)))
            .map(|n| n.name.clone())
    };
    let mut done = BTreeSet::new();
    let mut remove = Vec::new();
    for (position, name) in view.entries.names() {
        let Some(overdue) = view.gone.get(name) else {
            continue;
        };
        let clique = view.entries.get(name).map(|p| p.node.clique_id.as_str());
        let first = first_of(clique).or_else(|| first_of(None));
        if (*overdue || first.as_deref() == Some(me.node.as_str())) && done.insert(name) {
            remove.push((position, name.to_owned()));
        }
    }
    remove
}

#[cfg(test)]
mod tests;
