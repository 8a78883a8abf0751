//! The node's writes to the API server, over kube, as the identity of
//! `[compute_domains] kubeconfig` (packaging/rbac/compute-domains.yaml
//! allows exactly these): its entry of a domain's status by server-side
//! apply (field manager `gpuslice/<node>`, force) on the `status`
//! subresource; the entries of gone nodes removed by a JSON patch (each a
//! `test` of the name at its position, then `remove`); its membership
//! Leases created (owned by its Node, whose uid is read once) and deleted;
//! a workload template created, and read back when it exists already.

use std::collections::BTreeMap;

use gpuslice_compute_domain::API_VERSION;
use gpuslice_compute_domain::api::{ComputeDomainNode, KIND, Readiness};
use gpuslice_compute_domain::coordinate::{
    Apply, LEASE_CLIQUE_LABEL, LEASE_DOMAIN_LABEL, LEASE_NODE_LABEL, lease_name,
};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, Error};
use serde_json::{Value, json};
use tokio::sync::OnceCell;

use super::cache::compute_domains;
use super::read::DomainSeen;

/// A write the API server refused or that did not reach it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct WriteError {
    /// The HTTP status, when the API server answered.
    pub code: Option<u16>,
    /// What it said.
    pub message: String,
}

impl WriteError {
    fn of(err: &Error) -> Self {
        match err {
            Error::Api(status) => Self {
                code: Some(status.code),
                message: format!("{} ({} {})", status.message, status.code, status.reason),
            },
            other => Self {
                code: None,
                message: other.to_string(),
            },
        }
    }
}

/// What a create found.
#[derive(Debug, Clone, PartialEq)]
pub enum Created {
    /// It made it.
    Made,
    /// One of that name exists: as read back (None: gone again).
    Exists(Option<Box<ResourceClaimTemplate>>),
}

/// The API server's writes, as the node's turns use them. A status write
/// answers the resourceVersion it made, when it is a number.
pub trait DomainWrites {
    fn apply(
        &self,
        domain: &DomainSeen,
        apply: &Apply,
    ) -> impl Future<Output = Result<Option<u64>, WriteError>> + Send;
    /// Removes `entries` (position, name) and sets `status.status` to
    /// `status` in one write.
    fn remove_entries(
        &self,
        domain: &DomainSeen,
        entries: &[(usize, String)],
        status: Readiness,
    ) -> impl Future<Output = Result<Option<u64>, WriteError>> + Send;
    /// The node's Lease of the domain `uid`, labelled with its `clique`.
    fn create_lease(
        &self,
        uid: &str,
        clique: &str,
    ) -> impl Future<Output = Result<(), WriteError>> + Send;
    fn delete_lease(&self, uid: &str) -> impl Future<Output = Result<(), WriteError>> + Send;
    fn create_template(
        &self,
        template: &ResourceClaimTemplate,
    ) -> impl Future<Output = Result<Created, WriteError>> + Send;
}

/// The writes over kube, for one node.
#[derive(Clone)]
pub struct KubeDomains {
    client: Client,
    node: String,
    lease_namespace: String,
    node_uid: std::sync::Arc<OnceCell<String>>,
}

impl std::fmt::Debug for KubeDomains {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeDomains")
            .field("node", &self.node)
            .field("lease_namespace", &self.lease_namespace)
            .finish_non_exhaustive()
    }
}

impl KubeDomains {
    /// Node `node`'s writes over `client`, its Leases in `lease_namespace`.
    pub fn new(client: Client, node: &str, lease_namespace: &str) -> Self {
        Self {
            client,
            node: node.to_owned(),
            lease_namespace: lease_namespace.to_owned(),
            node_uid: std::sync::Arc::default(),
        }
    }

    /// The field manager of the node's status writes.
    pub fn manager(&self) -> String {
        format!("gpuslice/{}", self.node)
    }

    fn status_api(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &compute_domains())
    }

    fn leases(&self) -> Api<Lease> {
        Api::namespaced(self.client.clone(), &self.lease_namespace)
    }

    /// The Node's uid, read once.
    async fn node_uid(&self) -> Result<&String, WriteError> {
        let api: Api<Node> = Api::all(self.client.clone());
        self.node_uid
            .get_or_try_init(|| async {
                let node = api.get(&self.node).await.map_err(|e| WriteError::of(&e))?;
                node.metadata.uid.ok_or_else(|| WriteError {
                    code: None,
                    message: format!("Node {} has no uid", self.node),
                })
            })
            .await
    }
}

/// The server-side apply body of `apply` for `domain`: the node's entry
/// (none when it leaves: applied without it, it goes) and `status.status`.
pub fn apply_body(domain: &DomainSeen, apply: &Apply) -> Value {
    let status = match apply.status {
        Readiness::Ready => "Ready",
        Readiness::NotReady => "NotReady",
    };
    let mut body = json!({
        "apiVersion": API_VERSION, "kind": KIND,
        "metadata": {"name": domain.name, "namespace": domain.namespace},
        "status": {"status": status},
    });
    if let Some(entry) = &apply.entry {
        body["status"]["nodes"] = json!([entry_value(entry)]);
    }
    body
}

fn entry_value(entry: &ComputeDomainNode) -> Value {
    serde_json::to_value(entry).unwrap_or(Value::Null)
}

/// The JSON patch removing `entries` (position, name), each position tested
/// for its name first, the highest position first, then setting
/// `status.status` to `status` (the admission policy refuses a Ready status
/// over fewer than `numNodes` entries, so a removal says so itself).
pub fn removal_patch(entries: &[(usize, String)], status: Readiness) -> Value {
    let mut sorted = entries.to_vec();
    sorted.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut ops: Vec<Value> = sorted
        .iter()
        .flat_map(|(at, name)| {
            [
                json!({"op": "test", "path": format!("/status/nodes/{at}/name"), "value": name}),
                json!({"op": "remove", "path": format!("/status/nodes/{at}")}),
            ]
        })
        .collect();
    ops.push(json!({"op": "add", "path": "/status/status", "value": status}));
    Value::Array(ops)
}

/// Whether `text` is a Kubernetes label value (at most 63 characters,
/// alphanumerics, '-', '_' and '.', starting and ending alphanumeric).
fn is_label_value(text: &str) -> bool {
    let edges = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    text.len() <= 63
        && edges(text.chars().next())
        && edges(text.chars().last())
        && (text.chars()).all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn version_of(object: &DynamicObject) -> Option<u64> {
    object.metadata.resource_version.as_deref()?.parse().ok()
}

impl DomainWrites for KubeDomains {
    async fn apply(&self, domain: &DomainSeen, apply: &Apply) -> Result<Option<u64>, WriteError> {
        let params = PatchParams::apply(&self.manager()).force();
        let body = apply_body(domain, apply);
        (self.status_api(&domain.namespace))
            .patch_status(&domain.name, &params, &Patch::Apply(body))
            .await
            .map(|o| version_of(&o))
            .map_err(|e| WriteError::of(&e))
    }

    async fn remove_entries(
        &self,
        domain: &DomainSeen,
        entries: &[(usize, String)],
        status: Readiness,
    ) -> Result<Option<u64>, WriteError> {
        let patch =
            serde_json::from_value(removal_patch(entries, status)).map_err(|e| WriteError {
                code: None,
                message: e.to_string(),
            })?;
        let params = PatchParams {
            field_manager: Some(self.manager()),
            ..PatchParams::default()
        };
        (self.status_api(&domain.namespace))
            .patch_status(&domain.name, &params, &Patch::<Value>::Json(patch))
            .await
            .map(|o| version_of(&o))
            .map_err(|e| WriteError::of(&e))
    }

    async fn create_lease(&self, uid: &str, clique: &str) -> Result<(), WriteError> {
        let node_uid = self.node_uid().await?.clone();
        let mut labels = BTreeMap::from([
            (LEASE_DOMAIN_LABEL.to_owned(), uid.to_owned()),
            (LEASE_NODE_LABEL.to_owned(), self.node.clone()),
        ]);
        if is_label_value(clique) {
            labels.insert(LEASE_CLIQUE_LABEL.to_owned(), clique.to_owned());
        }
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(lease_name(uid, &self.node)),
                namespace: Some(self.lease_namespace.clone()),
                labels: Some(labels),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".to_owned(),
                    kind: "Node".to_owned(),
                    name: self.node.clone(),
                    uid: node_uid,
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.node.clone()),
                ..LeaseSpec::default()
            }),
        };
        match self.leases().create(&PostParams::default(), &lease).await {
            Ok(_) => Ok(()),
            Err(Error::Api(status)) if status.code == 409 => Ok(()),
            Err(err) => Err(WriteError::of(&err)),
        }
    }

    async fn delete_lease(&self, uid: &str) -> Result<(), WriteError> {
        let name = lease_name(uid, &self.node);
        match self.leases().delete(&name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(Error::Api(status)) if status.code == 404 => Ok(()),
            Err(err) => Err(WriteError::of(&err)),
        }
    }

    async fn create_template(
        &self,
        template: &ResourceClaimTemplate,
    ) -> Result<Created, WriteError> {
        let namespace = template.metadata.namespace.clone().unwrap_or_default();
        let name = template.metadata.name.clone().unwrap_or_default();
        let api: Api<ResourceClaimTemplate> = Api::namespaced(self.client.clone(), &namespace);
        match api.create(&PostParams::default(), template).await {
            Ok(_) => Ok(Created::Made),
            Err(Error::Api(status)) if status.code == 409 => match api.get_opt(&name).await {
                Ok(found) => Ok(Created::Exists(found.map(Box::new))),
                Err(err) => Err(WriteError::of(&err)),
            },
            Err(err) => Err(WriteError::of(&err)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Readiness, removal_patch};

    #[test]
    fn gone_entries_are_tested_by_name_and_removed_from_the_highest_position() {
        let gone = [(1, "node-2".to_owned()), (3, "node-4".to_owned())];
        let patch = removal_patch(&gone, Readiness::NotReady);
        assert_eq!(
            patch,
            json!([
                {"op": "test", "path": "/status/nodes/3/name", "value": "node-4"},
                {"op": "remove", "path": "/status/nodes/3"},
                {"op": "test", "path": "/status/nodes/1/name", "value": "node-2"},
                {"op": "remove", "path": "/status/nodes/1"},
                {"op": "add", "path": "/status/status", "value": "NotReady"},
            ])
        );
    }
}
