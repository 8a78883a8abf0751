//! Rounds of four nodes' plugins against an in-memory API server that
//! keeps resourceVersions (a stale write is a conflict) and in-memory
//! gpusliceds.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use gpuslice_compute_domain::api::{ComputeDomain, Readiness};
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use serde_json::json;

use super::round::{DomainApi, DomainNode, NodeDomains, WriteError, round};

const UID: &str = "5b9c2d0e-7a41-4f3b-9c8d-2e6f1a0b3c4d";
const CLIQUE: &str = "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b.0";

#[derive(Default)]
struct Api {
    domain: Mutex<Option<ComputeDomain>>,
    version: Mutex<u64>,
    templates: Mutex<BTreeMap<(String, String), ResourceClaimTemplate>>,
    nodes: Mutex<BTreeSet<String>>,
    /// Writes to refuse as conflicts (another writer came first).
    conflicts: Mutex<usize>,
}

impl Api {
    fn with_domain(num_nodes: i64) -> Self {
        let api = Self::default();
        let domain: ComputeDomain = serde_json::from_value(json!({
            "apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
            "metadata": {"name": "imex-channel-injection", "namespace": "default", "uid": UID,
                         "resourceVersion": "1"},
            "spec": {"numNodes": num_nodes,
                     "channel": {"resourceClaimTemplate": {"name": "imex-channel-0"}}}
        }))
        .expect("domain");
        *api.domain.lock().expect("lock") = Some(domain);
        *api.version.lock().expect("lock") = 1;
        *api.nodes.lock().expect("lock") = (1..=4).map(|n| format!("node-{n}")).collect();
        api
    }

    fn status(&self) -> gpuslice_compute_domain::api::ComputeDomainStatus {
        let domain = self.domain.lock().expect("lock").clone().expect("domain");
        domain.status.unwrap_or_default()
    }
}

impl DomainApi for Api {
    async fn domains(&self) -> Result<Vec<ComputeDomain>, String> {
        Ok(self
            .domain
            .lock()
            .expect("lock")
            .clone()
            .into_iter()
            .collect())
    }

    async fn domain(&self, _: &str, _: &str) -> Result<Option<ComputeDomain>, String> {
        Ok(self.domain.lock().expect("lock").clone())
    }

    async fn write_status(&self, domain: &ComputeDomain) -> Result<(), WriteError> {
        let mut conflicts = self.conflicts.lock().expect("lock");
        let mut version = self.version.lock().expect("lock");
        let mut stored = self.domain.lock().expect("lock");
        let Some(current) = stored.as_mut() else {
            return Err(WriteError::Failed("gone".to_owned()));
        };
        if *conflicts > 0 {
            *conflicts -= 1;
            *version += 1;
            current.metadata.resource_version = Some(version.to_string());
            return Err(WriteError::Conflict);
        }
        if domain.metadata.resource_version != current.metadata.resource_version {
            return Err(WriteError::Conflict);
        }
        *version += 1;
        current.status.clone_from(&domain.status);
        current.metadata.resource_version = Some(version.to_string());
        Ok(())
    }

    async fn create_template(&self, template: &ResourceClaimTemplate) -> Result<bool, String> {
        let key = (
            template.metadata.namespace.clone().unwrap_or_default(),
            template.metadata.name.clone().unwrap_or_default(),
        );
        let mut templates = self.templates.lock().expect("lock");
        Ok(templates.insert(key, template.clone()).is_none())
    }

    async fn domain_templates(&self) -> Result<Vec<(String, String, String)>, String> {
        let templates = self.templates.lock().expect("lock");
        Ok(templates
            .iter()
            .map(|((ns, name), t)| {
                let labels = t.metadata.labels.clone().unwrap_or_default();
                let uid = labels
                    .get("resource.nvidia.com/computeDomain")
                    .cloned()
                    .unwrap_or_default();
                (ns.clone(), name.clone(), uid)
            })
            .collect())
    }

    async fn remove_template(&self, namespace: &str, name: &str) -> Result<(), String> {
        let mut templates = self.templates.lock().expect("lock");
        templates.remove(&(namespace.to_owned(), name.to_owned()));
        Ok(())
    }

    async fn node_names(&self) -> Result<BTreeSet<String>, String> {
        Ok(self.nodes.lock().expect("lock").clone())
    }
}

/// A node's gpusliced: its channels' domains, their readiness, the peers
/// it was told.
#[derive(Default)]
struct Node {
    address: String,
    domains: Mutex<BTreeMap<String, (bool, Vec<String>)>>,
}

impl Node {
    fn new(n: usize) -> Self {
        Self {
            address: format!("127.0.0.{n}"),
            domains: Mutex::default(),
        }
    }

    fn prepare(&self, ready: bool) {
        let mut domains = self.domains.lock().expect("lock");
        let entry = domains.entry(UID.to_owned()).or_default();
        entry.0 = ready;
    }

    fn peers(&self) -> Vec<String> {
        let domains = self.domains.lock().expect("lock");
        domains.get(UID).map(|(_, p)| p.clone()).unwrap_or_default()
    }
}

impl DomainNode for Node {
    async fn domains(&self) -> Result<NodeDomains, String> {
        Ok(NodeDomains {
            clique: CLIQUE.to_owned(),
            address: self.address.clone(),
            domains: self.domains.lock().expect("lock").clone(),
        })
    }

    async fn set_peers(&self, domain: &str, peers: &[String]) -> Result<(), String> {
        let mut domains = self.domains.lock().expect("lock");
        let entry = domains.get_mut(domain).ok_or("not a member")?;
        entry.1 = peers.to_vec();
        Ok(())
    }
}

async fn everyone(api: &Api, nodes: &[Node]) {
    for (i, node) in nodes.iter().enumerate() {
        let report = round(api, node, &format!("node-{}", i + 1)).await;
        assert!(report.problems.is_empty(), "{report:?}");
    }
}

#[tokio::test]
async fn four_nodes_make_one_template_join_with_their_cliques_and_get_ready() {
    let api = Api::with_domain(4);
    let nodes: Vec<Node> = (1..=4).map(Node::new).collect();
    everyone(&api, &nodes).await;
    assert_eq!(api.templates.lock().expect("lock").len(), 1, "made once");
    assert!(api.status().nodes.is_empty(), "no channel prepared yet");
    for node in &nodes {
        node.prepare(true);
    }
    everyone(&api, &nodes).await;
    let status = api.status();
    assert_eq!(status.status, Readiness::Ready);
    assert_eq!(status.nodes.len(), 4);
    assert!(status.nodes.iter().all(|n| n.clique_id == CLIQUE));
    // The last one to join saw all four; the others learn them next round.
    everyone(&api, &nodes).await;
    let all: Vec<String> = (1..=4).map(|n| format!("127.0.0.{n}")).collect();
    for node in &nodes {
        assert_eq!(node.peers(), all);
    }
}

#[tokio::test]
async fn a_daemon_not_ready_makes_its_node_and_the_domain_not_ready_until_it_is() {
    let api = Api::with_domain(4);
    let nodes: Vec<Node> = (1..=4).map(Node::new).collect();
    for node in &nodes {
        node.prepare(true);
    }
    everyone(&api, &nodes).await;
    assert_eq!(api.status().status, Readiness::Ready);
    nodes[1].prepare(false);
    everyone(&api, &nodes).await;
    let status = api.status();
    assert_eq!(status.status, Readiness::NotReady);
    let two = status
        .nodes
        .iter()
        .find(|n| n.name == "node-2")
        .expect("node-2");
    assert_eq!(two.status, Readiness::NotReady);
    nodes[1].prepare(true);
    everyone(&api, &nodes).await;
    assert_eq!(api.status().status, Readiness::Ready);
}

#[tokio::test]
async fn conflicts_are_read_again_and_a_lost_node_leaves_the_peers() {
    let api = Api::with_domain(3);
    let nodes: Vec<Node> = (1..=4).map(Node::new).collect();
    for node in &nodes {
        node.prepare(true);
    }
    *api.conflicts.lock().expect("lock") = 2;
    let report = round(&api, &nodes[0], "node-1").await;
    assert_eq!(
        (report.conflicts, report.statuses_written),
        (2, 1),
        "{report:?}"
    );
    everyone(&api, &nodes).await;
    assert_eq!(api.status().nodes.len(), 4);
    api.nodes.lock().expect("lock").remove("node-4");
    everyone(&api, &nodes[..3]).await;
    everyone(&api, &nodes[..3]).await;
    let names: Vec<String> = api.status().nodes.iter().map(|n| n.name.clone()).collect();
    assert_eq!(names, ["node-1", "node-2", "node-3"]);
    assert_eq!(nodes[0].peers(), ["127.0.0.1", "127.0.0.2", "127.0.0.3"]);
    assert_eq!(api.status().status, Readiness::Ready, "3 of numNodes 3");
}

#[tokio::test]
async fn a_node_whose_channels_are_gone_leaves_and_a_gone_domain_loses_its_template() {
    let api = Api::with_domain(2);
    let nodes: Vec<Node> = (1..=2).map(Node::new).collect();
    for node in &nodes {
        node.prepare(true);
    }
    everyone(&api, &nodes).await;
    nodes[1].domains.lock().expect("lock").clear();
    everyone(&api, &nodes).await;
    let names: Vec<String> = api.status().nodes.iter().map(|n| n.name.clone()).collect();
    assert_eq!(names, ["node-1"]);
    *api.domain.lock().expect("lock") = None;
    let report = round(&api, &nodes[0], "node-1").await;
    assert_eq!(report.templates_removed, 1, "{report:?}");
    assert!(api.templates.lock().expect("lock").is_empty());
}
