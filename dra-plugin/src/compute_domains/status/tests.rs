//! A node's passes against recording fakes of the API server's writes and
//! of gpusliced, over snapshots built by hand: what it writes, in which
//! order, and that it writes a change once.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gpuslice_compute_domain::api::Readiness;
use gpuslice_compute_domain::coordinate::{Apply, Local};
use gpuslice_compute_domain::template::{CREATION_WINDOW, owned_template};
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use serde_json::json;

use super::cache::Snapshot;
use super::kube_api::{Created, DomainWrites, WriteError};
use super::memory::Memory;
use super::node::{DomainNode, NodeDomains};
use super::read::{DomainSeen, read_domain};
use super::round::{Pass, Report};

const UID: &str = "5b9c2d0e-7a41-4f3b-9c8d-2e6f1a0b3c4d";
const CLIQUE: &str = "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.0";

#[derive(Debug, Default)]
struct Writes {
    log: Mutex<Vec<String>>,
    /// What a template create finds (None: it makes it).
    existing: Mutex<Option<ResourceClaimTemplate>>,
}

impl Writes {
    fn log(&self) -> Vec<String> {
        std::mem::take(&mut *self.log.lock().expect("lock"))
    }

    fn note(&self, what: String) {
        self.log.lock().expect("lock").push(what);
    }
}

impl DomainWrites for Writes {
    async fn apply(&self, _: &DomainSeen, apply: &Apply) -> Result<Option<u64>, WriteError> {
        let entry = apply.entry.as_ref().map(|e| (e.index, e.status));
        self.note(format!("apply {entry:?} {:?}", apply.status));
        Ok(Some(100))
    }

    async fn remove_entries(
        &self,
        _: &DomainSeen,
        entries: &[(usize, String)],
        status: Readiness,
    ) -> Result<Option<u64>, WriteError> {
        self.note(format!("remove {entries:?} {status:?}"));
        Ok(Some(100))
    }

    async fn create_lease(&self, _: &str, _: &str) -> Result<(), WriteError> {
        self.note("create lease".to_owned());
        Ok(())
    }

    async fn delete_lease(&self, _: &str) -> Result<(), WriteError> {
        self.note("delete lease".to_owned());
        Ok(())
    }

    async fn create_template(&self, t: &ResourceClaimTemplate) -> Result<Created, WriteError> {
        self.note(format!(
            "create template {}",
            t.metadata.name.clone().unwrap_or_default()
        ));
        Ok(match self.existing.lock().expect("lock").clone() {
            None => Created::Made,
            Some(found) => Created::Exists(Some(Box::new(found))),
        })
    }
}

#[derive(Debug, Default)]
struct Gpusliced {
    told: Mutex<Vec<BTreeMap<u32, String>>>,
}

impl DomainNode for Gpusliced {
    async fn domains(&self) -> Result<NodeDomains, String> {
        Err("not used".to_owned())
    }

    async fn set_members(
        &self,
        _: &str,
        members: &BTreeMap<u32, String>,
    ) -> Result<Vec<String>, String> {
        self.told.lock().expect("lock").push(members.clone());
        Ok(Vec::new())
    }
}

fn domain(uid: &str, nodes: serde_json::Value) -> DomainSeen {
    let object = serde_json::from_value(json!({
        "metadata": {"name": "cd", "namespace": "ml", "uid": uid, "resourceVersion": "7"},
        "spec": {"numNodes": 1, "channel": {"resourceClaimTemplate": {"name": "cd-channel"}}},
        "status": {"nodes": nodes}
    }))
    .expect("object");
    read_domain(&object).expect("reads")
}

fn here(local: Option<Local>) -> Result<NodeDomains, String> {
    Ok(NodeDomains {
        clique: CLIQUE.to_owned(),
        address: "10.0.0.1".to_owned(),
        domains: local.map(|l| (UID.to_owned(), l)).into_iter().collect(),
    })
}

/// One node's recording fakes and the memory its loop keeps between passes.
#[derive(Debug, Default)]
struct Node {
    writes: Writes,
    gpusliced: Gpusliced,
    memory: Memory,
}

impl Node {
    /// One pass of `node-1` at `now` over `snapshot`, gpusliced answering
    /// `here`.
    async fn pass(
        &mut self,
        now: Instant,
        snapshot: &Snapshot,
        here: &Result<NodeDomains, String>,
    ) -> Report {
        Pass {
            writes: &self.writes,
            gpusliced: &self.gpusliced,
            node: "node-1",
            memory: &mut self.memory,
            now,
        }
        .run(snapshot, here)
        .await
    }
}

#[tokio::test]
async fn a_member_makes_its_lease_tells_its_daemon_and_applies_its_entry_once() {
    let mut node = Node::default();
    let mut snapshot = Snapshot {
        domains: vec![domain(UID, json!([]))],
        ..Snapshot::default()
    };
    let key = ("ml".to_owned(), "cd-channel".to_owned());
    snapshot.templates.insert(key, UID.to_owned());
    let local = Local {
        ready: true,
        members_known: true,
        connected: true,
        members: BTreeMap::new(),
    };
    let t0 = Instant::now();
    let report = node.pass(t0, &snapshot, &here(Some(local.clone()))).await;
    assert!(report.problems.is_empty(), "{report:?}");
    assert_eq!(
        node.writes.log(),
        ["create lease"],
        "its entry once its Lease shows"
    );
    assert_eq!(report.wake, Some(t0 + super::memory::MEMBERS_HOLD));
    // The cache shows the Lease: the entry, but not the members yet.
    snapshot.leases.insert(
        UID.to_owned(),
        BTreeMap::from([("node-1".to_owned(), CLIQUE.to_owned())]),
    );
    let later = t0 + Duration::from_millis(300);
    node.pass(later, &snapshot, &here(Some(local.clone())))
        .await;
    assert_eq!(node.writes.log(), ["apply Some((0, NotReady)) NotReady"]);
    assert!(
        node.gpusliced.told.lock().expect("lock").is_empty(),
        "fewer entries than numNodes: the members are held back"
    );
    // The cache has not caught up with the entry: nothing again.
    node.pass(later, &snapshot, &here(Some(local.clone())))
        .await;
    assert!(node.writes.log().is_empty(), "a change is written once");
    // It has: numNodes entries, the daemon is told its members.
    let entry = json!([{"name": "node-1", "ipAddress": "10.0.0.1", "cliqueID": CLIQUE,
                        "index": 0, "status": "NotReady"}]);
    snapshot.domains = vec![domain(UID, entry)];
    node.pass(later, &snapshot, &here(Some(local))).await;
    assert_eq!(
        node.gpusliced.told.lock().expect("lock").as_slice(),
        [BTreeMap::from([(0, "10.0.0.1".to_owned())])]
    );
    // gpusliced unreachable: nothing about membership.
    let down = Err("gpusliced ListDomains: unavailable".to_owned());
    let report = node.pass(later, &snapshot, &down).await;
    assert!(node.writes.log().is_empty());
    assert_eq!(report.problems, ["gpusliced ListDomains: unavailable"]);
}

#[tokio::test]
async fn a_template_is_made_after_the_nodes_delay_and_one_not_the_domains_is_refused() {
    let mut node = Node::default();
    let seen = domain(UID, json!([]));
    let snapshot = Snapshot {
        domains: vec![seen.clone()],
        ..Snapshot::default()
    };
    let t0 = Instant::now();
    let report = node.pass(t0, &snapshot, &here(None)).await;
    let delay = gpuslice_compute_domain::template::creation_delay("node-1", UID);
    if delay > Duration::ZERO {
        assert!(node.writes.log().is_empty(), "not before its delay");
        assert_eq!(report.wake, Some(t0 + delay));
    }
    let after = t0 + CREATION_WINDOW;
    node.pass(after, &snapshot, &here(None)).await;
    assert_eq!(node.writes.log(), ["create template cd-channel"]);
    // Another domain's template under that name: refused, not asked again.
    node.memory = memory_for_other();
    let theirs = owned_template(&other_domain()).expect("theirs");
    *node.writes.existing.lock().expect("lock") = Some(theirs);
    let report = node.pass(after, &snapshot, &here(None)).await;
    assert_eq!(node.writes.log(), ["create template cd-channel"]);
    assert_eq!(report.refusals.len(), 1, "{report:?}");
    assert!(
        report.refusals[0].contains("is not ComputeDomain ml/cd's"),
        "{report:?}"
    );
    let report = node
        .pass(after + Duration::from_secs(5), &snapshot, &here(None))
        .await;
    assert!(node.writes.log().is_empty(), "{report:?}");
    assert_eq!(seen.uid, UID);
}

/// A fresh memory whose delay for the domain is over.
fn memory_for_other() -> Memory {
    let mut memory = Memory::default();
    let long_ago = Instant::now()
        .checked_sub(CREATION_WINDOW)
        .unwrap_or_else(Instant::now);
    memory.template_due(UID, Duration::ZERO, long_ago);
    memory
}

fn other_domain() -> gpuslice_compute_domain::api::ComputeDomain {
    serde_json::from_value(json!({
        "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
        "metadata": {"name": "other", "namespace": "ml", "uid": "6c0d3e1f-8b52-4a4c-8d9e-3f7a2b1c4d5e"},
        "spec": {"channel": {"resourceClaimTemplate": {"name": "cd-channel"}}}
    }))
    .expect("domain")
}

#[tokio::test]
async fn a_node_leaves_entry_first_then_its_lease_and_removes_a_gone_members_entry() {
    let mut node = Node::default();
    let entries = json!([
        {"name": "node-1", "ipAddress": "10.0.0.1", "cliqueID": CLIQUE, "index": 0, "status": "Ready"},
        {"name": "node-2", "ipAddress": "10.0.0.2", "cliqueID": CLIQUE, "index": 1, "status": "Ready"},
    ]);
    let mut snapshot = Snapshot {
        domains: vec![domain(UID, entries)],
        ..Snapshot::default()
    };
    snapshot
        .templates
        .insert(("ml".to_owned(), "cd-channel".to_owned()), UID.to_owned());
    let both: BTreeMap<String, String> = ["node-1", "node-2"]
        .map(|n| (n.to_owned(), CLIQUE.to_owned()))
        .into();
    snapshot.leases.insert(UID.to_owned(), both);
    let t0 = Instant::now();
    // node-2's Lease goes (its Node deleted): node-1, index 0, removes it.
    let local = Local {
        ready: true,
        members_known: true,
        connected: true,
        members: BTreeMap::from([(0, "10.0.0.1".to_owned()), (1, "10.0.0.2".to_owned())]),
    };
    node.pass(t0, &snapshot, &here(Some(local.clone()))).await;
    assert_eq!(
        node.writes.log(),
        ["apply Some((0, Ready)) Ready"],
        "status was unset"
    );
    let one = BTreeMap::from([("node-1".to_owned(), CLIQUE.to_owned())]);
    snapshot.leases.insert(UID.to_owned(), one);
    node.pass(t0, &snapshot, &here(Some(local.clone()))).await;
    assert!(node.writes.log().is_empty(), "not at once");
    let later = t0 + super::memory::GONE_AFTER_DELETE;
    node.pass(later, &snapshot, &here(Some(local))).await;
    assert_eq!(node.writes.log(), [r#"remove [(1, "node-2")] Ready"#]);
    // node-1's last channel goes: its entry first, its Lease once it is gone.
    node.pass(later, &snapshot, &here(None)).await;
    assert_eq!(
        node.writes.log(),
        ["apply None Ready"],
        "node-2 still listed: 1 of 1"
    );
    snapshot.domains = vec![domain(UID, json!([]))];
    node.pass(later, &snapshot, &here(None)).await;
    assert_eq!(node.writes.log(), ["delete lease"]);
}

#[tokio::test]
async fn a_lease_of_a_domain_gone_is_deleted_but_not_while_a_domain_does_not_read() {
    let mut node = Node::default();
    let mut snapshot = Snapshot {
        unreadable: vec!["ComputeDomain ml/broken: status.nodes is not a list".to_owned()],
        ..Snapshot::default()
    };
    snapshot.leases.insert(
        UID.to_owned(),
        BTreeMap::from([("node-1".to_owned(), CLIQUE.to_owned())]),
    );
    let now = Instant::now();
    let report = node.pass(now, &snapshot, &here(None)).await;
    assert!(
        node.writes.log().is_empty(),
        "the domain that does not read may be this Lease's"
    );
    assert_eq!(report.problems, snapshot.unreadable, "and it is reported");
    snapshot.unreadable.clear();
    node.pass(now, &snapshot, &here(None)).await;
    assert_eq!(node.writes.log(), ["delete lease"]);
}
