use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;
use crate::membership::read;

/// A domain as the API server holds it, and what every node's gpusliced
/// and Leases say.
#[derive(Debug, Clone, Default)]
struct World {
    num_nodes: i64,
    status: Option<Readiness>,
    /// status.nodes in stored order.
    nodes: Vec<ComputeDomainNode>,
    leases: BTreeMap<String, String>,
    /// Per node with a channel: its daemon.
    local: BTreeMap<String, Local>,
    /// Every status.status written, in order.
    history: Vec<Readiness>,
    /// Deferred applies are made (their moment passed).
    undefer: bool,
}

fn me(n: usize, clique: &str) -> Me {
    Me {
        node: format!("node-{n}"),
        address: format!("10.0.0.{n}"),
        clique: clique.to_owned(),
    }
}

impl World {
    fn entries(&self) -> Entries {
        read(Some(&serde_json::to_value(&self.nodes).expect("JSON")))
    }

    /// `me`'s turn; what it did is applied as the API server and gpusliced
    /// would (a server-side apply of its own entry).
    fn turn(&mut self, me: &Me, gone: &BTreeMap<String, bool>) -> Turn {
        let entries = self.entries();
        let view = View {
            num_nodes: self.num_nodes,
            status: self.status,
            entries: &entries,
            leases: &self.leases,
            gone,
            patient: false,
        };
        let turn = turn(me, self.local.get(&me.node), &view);
        match turn.lease {
            LeaseStep::Create => {
                self.leases.insert(me.node.clone(), me.clique.clone());
            }
            LeaseStep::Delete => {
                self.leases.remove(&me.node);
            }
            LeaseStep::Keep => {}
        }
        if let Some(apply) = turn.apply.as_ref().filter(|_| !turn.defer || self.undefer) {
            let at = self.nodes.iter().position(|n| n.name == me.node);
            match (&apply.entry, at) {
                (Some(entry), Some(at)) => self.nodes[at] = entry.clone(),
                (Some(entry), None) => self.nodes.push(entry.clone()),
                (None, Some(at)) => {
                    self.nodes.remove(at);
                }
                (None, None) => {}
            }
            self.status = Some(apply.status);
            self.history.push(apply.status);
        }
        if let Some(members) = &turn.members {
            let local = self.local.get_mut(&me.node).expect("a member");
            if &local.members != members {
                local.members.clone_from(members);
                local.members_known = false;
                local.connected = false;
            }
        }
        for (position, name) in turn.remove.iter().rev() {
            assert_eq!(&self.nodes[*position].name, name, "the entry named");
            self.nodes.remove(*position);
        }
        if !turn.remove.is_empty() {
            self.status = Some(turn.remove_status);
            self.history.push(turn.remove_status);
        }
        self.admitted();
        turn
    }

    /// What the status admission policy checks on every write: Ready only
    /// with at least numNodes entries, all Ready.
    fn admitted(&self) {
        if self.status == Some(Readiness::Ready) {
            assert!(
                i64::try_from(self.nodes.len()).expect("small") >= self.num_nodes
                    && self.nodes.iter().all(|n| n.status == Readiness::Ready),
                "a Ready status the admission policy refuses: {:?}",
                self.nodes
            );
        }
    }

    /// The daemon of `node` was signalled: it knows its members and reaches
    /// them.
    fn signal(&mut self, node: &str) {
        if let Some(local) = self.local.get_mut(node) {
            local.members_known = true;
            local.connected = true;
        }
    }

    /// A domain of `num_nodes` with a channel prepared on each of `nodes`.
    fn prepared(num_nodes: i64, nodes: &[Me]) -> Self {
        let mut world = Self {
            num_nodes,
            ..Self::default()
        };
        for node in nodes {
            world.prepare(&node.node);
        }
        world
    }

    /// A channel prepared on `node`: its daemon READY, knowing no member.
    fn prepare(&mut self, node: &str) {
        self.local.insert(
            node.to_owned(),
            Local {
                ready: true,
                members_known: true,
                connected: true,
                members: BTreeMap::new(),
            },
        );
    }

    /// Everyone takes turns until nobody has anything to do (the watch
    /// reaches every node long before an IMEX daemon is signalled).
    fn settle(&mut self, nodes: &[Me], order: &[usize]) {
        let none = BTreeMap::new();
        for _ in 0..20 {
            let mut quiet = true;
            let mut deferred = false;
            for &i in order {
                let turn = self.turn(&nodes[i % nodes.len()], &none);
                let waits = turn.defer && !self.undefer;
                deferred |= waits;
                quiet &= (turn.apply.is_none() || waits)
                    && turn.members.is_none()
                    && turn.lease == LeaseStep::Keep;
                self.check();
            }
            // A deferred apply is made once nobody else corrected it.
            self.undefer = quiet && deferred;
            if quiet && !deferred {
                return;
            }
        }
        panic!("turns do not settle: {self:#?}");
    }

    /// While the status is Ready, every member's daemon knows and reaches
    /// exactly its clique's entries.
    fn check(&self) {
        if self.status != Some(Readiness::Ready) {
            return;
        }
        for node in &self.nodes {
            assert_eq!(node.status, Readiness::Ready);
            let local = &self.local[&node.name];
            let wanted = membership::members(&self.nodes, &node.clique_id);
            assert!(
                local.members_known && local.connected && local.members == wanted,
                "{} Ready without knowing its members: {self:#?}",
                node.name
            );
        }
    }
}

#[test]
fn a_joining_node_makes_its_lease_then_an_entry_not_ready_and_tells_its_daemon() {
    let mut world = World {
        num_nodes: 1,
        ..World::default()
    };
    let one = me(1, "c.1");
    let none = BTreeMap::new();
    assert_eq!(world.turn(&one, &none).apply, None, "no channel: nothing");
    world.prepare("node-1");
    let turn = world.turn(&one, &none);
    assert_eq!(turn.lease, LeaseStep::Create);
    assert_eq!(
        (turn.apply, turn.members),
        (None, None),
        "its entry once its Lease shows"
    );
    let turn = world.turn(&one, &none);
    assert_eq!(turn.lease, LeaseStep::Keep);
    let entry = turn.apply.and_then(|a| a.entry).expect("an entry");
    assert_eq!((entry.index, entry.status), (0, Readiness::NotReady));
    assert_eq!(
        turn.members,
        Some(BTreeMap::from([(0, "10.0.0.1".to_owned())]))
    );
    world.signal("node-1");
    let turn = world.turn(&one, &none);
    let apply = turn.apply.expect("Ready now");
    assert_eq!(apply.status, Readiness::Ready);
    assert_eq!(apply.entry.map(|e| e.status), Some(Readiness::Ready));
    let turn = world.turn(&one, &none);
    assert_eq!((turn.apply, turn.members), (None, None), "nothing at rest");
}

#[test]
fn a_member_is_not_ready_while_its_daemon_lacks_a_member_or_a_connection() {
    let nodes = [me(1, "c.1"), me(2, "c.1")];
    let mut world = World::prepared(2, &nodes);
    world.settle(&nodes, &[0, 1]);
    assert_eq!(world.status, Some(Readiness::NotReady));
    world.signal("node-1");
    world.settle(&nodes, &[0, 1]);
    assert_eq!(
        world.status,
        Some(Readiness::NotReady),
        "node-2 not told yet"
    );
    world.signal("node-2");
    world.local.get_mut("node-1").expect("node-1").connected = false;
    world.settle(&nodes, &[0, 1]);
    assert_eq!(
        world.status,
        Some(Readiness::NotReady),
        "node-1 unconnected"
    );
    world.signal("node-1");
    world.settle(&nodes, &[1, 0]);
    assert_eq!(world.status, Some(Readiness::Ready));
    assert!(world.nodes.iter().all(|n| n.status == Readiness::Ready));
}

#[test]
fn a_node_leaves_with_its_entry_first_and_its_lease_after() {
    let nodes = [me(1, "c.1"), me(2, "c.1")];
    let mut world = World::prepared(1, &nodes);
    world.settle(&nodes, &[0, 1]);
    world.signal("node-1");
    world.signal("node-2");
    world.settle(&nodes, &[0, 1]);
    assert_eq!(world.status, Some(Readiness::Ready));
    world.local.remove("node-2");
    let none = BTreeMap::new();
    let turn = world.turn(&nodes[1], &none);
    assert_eq!(turn.lease, LeaseStep::Keep, "the entry goes first");
    assert_eq!(turn.apply.and_then(|a| a.entry), None);
    assert_eq!(world.nodes.len(), 1);
    assert_eq!(world.turn(&nodes[1], &none).lease, LeaseStep::Delete);
    assert!(!world.leases.contains_key("node-2"));
    // node-1 is told it alone; it is not Ready until its daemon knows.
    world.settle(&nodes, &[0]);
    assert_eq!(world.status, Some(Readiness::NotReady));
    world.signal("node-1");
    world.settle(&nodes, &[0]);
    assert_eq!(world.status, Some(Readiness::Ready));
}

#[test]
fn a_gone_entry_is_removed_by_the_first_live_member_or_by_anyone_when_overdue() {
    let nodes = [me(1, "c.1"), me(2, "c.1"), me(3, "c.1")];
    let mut world = World::prepared(0, &nodes);
    world.settle(&nodes, &[0, 1, 2]);
    let gone = BTreeMap::from([("node-1".to_owned(), false)]);
    assert!(
        world.turn(&nodes[2], &gone).remove.is_empty(),
        "node-2 is first"
    );
    let turn = world.turn(&nodes[1], &gone);
    assert_eq!(turn.remove, [(0, "node-1".to_owned())]);
    assert_eq!(world.nodes.len(), 2);
    let overdue = BTreeMap::from([("node-2".to_owned(), true)]);
    let turn = world.turn(&nodes[2], &overdue);
    assert_eq!(turn.remove, [(0, "node-2".to_owned())]);
    assert!(
        world.turn(&nodes[0], &BTreeMap::new()).remove.is_empty(),
        "and nobody else"
    );
}

/// A domain of three nodes of one clique (numNodes 3), formed and Ready.
fn ready_domain_of_three() -> (World, [Me; 3]) {
    let nodes = [me(1, "c.1"), me(2, "c.1"), me(3, "c.1")];
    let mut world = World::prepared(3, &nodes);
    world.settle(&nodes, &[0, 1, 2]);
    for node in &nodes {
        world.signal(&node.node);
    }
    world.settle(&nodes, &[0, 1, 2]);
    assert_eq!(world.status, Some(Readiness::Ready));
    (world, nodes)
}

#[test]
fn removing_a_gone_member_of_a_ready_domain_writes_it_not_ready_at_once() {
    let (mut world, nodes) = ready_domain_of_three();
    world.local.remove("node-3");
    let gone = BTreeMap::from([("node-3".to_owned(), false)]);
    let turn = world.turn(&nodes[0], &gone);
    assert_eq!(turn.remove, [(2, "node-3".to_owned())]);
    assert_eq!(turn.remove_status, Readiness::NotReady, "2 of numNodes 3");
    assert_eq!(world.status, Some(Readiness::NotReady));
}

#[test]
fn a_stale_status_is_corrected_by_the_first_member_the_others_wait() {
    let (mut world, nodes) = ready_domain_of_three();
    world.status = Some(Readiness::NotReady);
    let none = BTreeMap::new();
    let first = world.clone().turn(&nodes[0], &none);
    assert!(first.apply.is_some() && !first.defer, "{first:?}");
    for node in &nodes[1..] {
        let later = world.clone().turn(node, &none);
        assert!(later.apply.is_some() && later.defer, "{later:?}");
    }
}

#[test]
fn a_node_without_a_clique_cannot_join() {
    let mut world = World::default();
    world.prepare("node-1");
    let turn = world.turn(&me(1, ""), &BTreeMap::new());
    let err = turn.problem.expect("refused");
    assert!(err.to_string().contains("no NVLink clique"), "{err}");
    assert_eq!((turn.apply, turn.lease), (None, LeaseStep::Keep));
}

proptest! {
    /// Nodes of two cliques prepare in any order, their turns in any
    /// order, their daemons signalled in any order: indices are unique in
    /// each clique, a Ready entry keeps its index, the status is Ready only
    /// while every member's daemon knows and reaches its clique's members,
    /// and once all are prepared and signalled it is Ready, then quiet.
    #[test]
    fn turns_in_any_order_settle_ready_and_never_ready_too_soon(
        events in proptest::collection::vec((0usize..6, any::<bool>()), 1..40),
        order in Just((0usize..6).collect::<Vec<_>>()).prop_shuffle(),
    ) {
        let nodes: Vec<Me> = (1..=6).map(|n| me(n, if n % 2 == 0 { "c.2" } else { "c.1" })).collect();
        let mut world = World { num_nodes: 6, ..World::default() };
        let mut ready_index: BTreeMap<String, i64> = BTreeMap::new();
        for (node, prepare) in events.into_iter().chain((0..6).map(|n| (n, true))) {
            let name = nodes[node].node.clone();
            if prepare && !world.local.contains_key(&name) {
                world.prepare(&name);
            } else {
                world.signal(&name);
            }
            world.settle(&nodes, &order);
            for n in &world.nodes {
                if n.status == Readiness::Ready {
                    if let Some(index) = ready_index.get(&n.name) {
                        prop_assert_eq!(*index, n.index, "a Ready entry kept its index");
                    }
                    ready_index.insert(n.name.clone(), n.index);
                } else {
                    ready_index.remove(&n.name);
                }
            }
            for clique in ["c.1", "c.2"] {
                let indices: Vec<i64> = world.nodes.iter().filter(|n| n.clique_id == clique).map(|n| n.index).collect();
                let unique: BTreeSet<i64> = indices.iter().copied().collect();
                prop_assert_eq!(unique.len(), indices.len());
            }
        }
        for node in &nodes {
            world.signal(&node.node);
        }
        world.settle(&nodes, &order);
        prop_assert_eq!(world.status, Some(Readiness::Ready));
        prop_assert_eq!(world.nodes.len(), 6);
        let last = world.history.iter().rposition(|s| *s == Readiness::NotReady);
        let first_ready = world.history.iter().position(|s| *s == Readiness::Ready);
        prop_assert!(first_ready.is_some_and(|r| last.is_none_or(|l| l < r)),
            "never Ready then NotReady while it formed: {:?}", world.history);
    }
}

#[test]
fn a_new_member_holds_its_daemons_members_back_while_they_are_unsettled() {
    let local = Local {
        ready: true,
        members_known: true,
        connected: true,
        members: BTreeMap::new(),
    };
    let me = me(1, "c.1");
    let leases = BTreeMap::from([("node-1".to_owned(), "c.1".to_owned())]);
    let none = BTreeMap::new();
    let told = |nodes: serde_json::Value, num_nodes: i64, leases: &BTreeMap<String, String>| {
        let entries = read(Some(&nodes));
        let view = |patient| View {
            num_nodes,
            status: None,
            entries: &entries,
            leases,
            gone: &none,
            patient,
        };
        (
            turn(&me, Some(&local), &view(true)).members.is_some(),
            turn(&me, Some(&local), &view(false)).members.is_some(),
        )
    };
    let entry = |n: u32, index: u32| {
        serde_json::json!({"name": format!("node-{n}"), "ipAddress": format!("10.0.0.{n}"),
                           "cliqueID": "c.1", "index": index, "status": "NotReady"})
    };
    let settled = serde_json::json!([entry(1, 0), entry(2, 1)]);
    assert_eq!(told(settled.clone(), 2, &leases), (true, true), "settled");
    assert_eq!(told(settled, 3, &leases), (false, true), "forming");
    let twice = serde_json::json!([entry(1, 0), entry(2, 1), entry(3, 1)]);
    assert_eq!(told(twice, 3, &leases), (false, true), "two on index 1");
    let mut joining = leases.clone();
    joining.insert("node-4".to_owned(), "c.1".to_owned());
    let settled = serde_json::json!([entry(1, 0), entry(2, 1)]);
    assert_eq!(told(settled, 2, &joining), (false, true), "node-4 joining");
}
