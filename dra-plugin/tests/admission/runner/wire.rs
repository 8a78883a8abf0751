//! The JSON lines the admission tool reads and answers
//! (tests/tools/admission/main.go), as Rust types. Objects are
//! `serde_json::Value`s as the API server would hand them to admission, so
//! a fake API server passes what it stores.
//!
//! Owns: the field names on both sides. Must not run anything.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The ServiceAccount of the ComputeDomain identity
/// (packaging/rbac/compute-domains.yaml), as namespace and name.
pub const COMPUTE_DOMAINS_ACCOUNT: (&str, &str) = ("gpuslice-system", "gpuslice-compute-domains");

/// The extra of a ServiceAccount token bound to a Node: the Node's name.
pub const NODE_NAME_EXTRA: &str = "authentication.kubernetes.io/node-name";
/// The extra of a ServiceAccount token bound to a Node: the Node's uid.
pub const NODE_UID_EXTRA: &str = "authentication.kubernetes.io/node-uid";
/// The extra of every bound ServiceAccount token: its id (`JTI=<jti>`).
pub const CREDENTIAL_ID_EXTRA: &str = "authentication.kubernetes.io/credential-id";

/// One admission request: what the API server hands its admission chain
/// for one write, and the cluster's Nodes (the params of a policy with
/// paramKind Node).
///
/// The objects are the API server's at admission time: for an
/// [`Operation::Update`] (a PUT, or any PATCH: JSON patch, merge patch,
/// server-side apply) `object` is the result of applying the write to the
/// stored object, and on a status subresource with the stored object's
/// spec and metadata put back (the status strategy runs before validating
/// admission); `old_object` the stored one. A [`Operation::Create`] has only
/// `object` (a server-side apply that creates is a CREATE), a
/// [`Operation::Delete`] only `old_object`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    pub operation: Operation,
    pub resource: Resource,
    /// "status" for a write of the status subresource, else empty.
    #[serde(rename = "subResource", skip_serializing_if = "String::is_empty")]
    pub sub_resource: String,
    /// Empty for a cluster-scoped object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    #[serde(rename = "oldObject", skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    #[serde(rename = "userInfo")]
    pub user_info: UserInfo,
    /// Every Node the cluster holds (core/v1 objects; maybe none). Each is
    /// a param of a paramKind Node policy whose binding selects it.
    pub nodes: Vec<Value>,
    #[serde(rename = "dryRun")]
    pub dry_run: bool,
}

/// The admission operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Update,
    Delete,
}

/// The resource written, as the request's URL names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resource {
    /// Empty for the core group.
    pub group: String,
    pub version: String,
    /// Plural, e.g. "computedomains".
    pub resource: String,
}

impl Resource {
    /// `resource.nvidia.com/v1beta1` `computedomains`.
    pub fn compute_domains() -> Self {
        Self::new("resource.nvidia.com", "v1beta1", "computedomains")
    }

    /// `coordination.k8s.io/v1` `leases`.
    pub fn leases() -> Self {
        Self::new("coordination.k8s.io", "v1", "leases")
    }

    /// `resource.k8s.io/v1` `resourceclaimtemplates`.
    pub fn resource_claim_templates() -> Self {
        Self::new("resource.k8s.io", "v1", "resourceclaimtemplates")
    }

    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        Self {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: resource.to_owned(),
        }
    }
}

/// Who the caller is, as the API server's authenticator made it from the
/// request's credentials (`request.userInfo` in CEL).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserInfo {
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A token of the ServiceAccount `namespace/account` bound to the Node
    /// `node` with uid `node_uid` (`kubectl create token --bound-object-kind
    /// Node`): the ServiceAccount's name and groups, and the node's name and
    /// uid and the token's id in the extra.
    pub fn node_bound(namespace: &str, account: &str, node: &str, node_uid: &str) -> Self {
        let mut user = Self::service_account(namespace, account);
        user.extra
            .insert(NODE_NAME_EXTRA.to_owned(), vec![node.to_owned()]);
        user.extra
            .insert(NODE_UID_EXTRA.to_owned(), vec![node_uid.to_owned()]);
        user
    }

    /// A token of the ServiceAccount `namespace/account` bound to no
    /// object (`kubectl create token` without `--bound-object-kind`): no
    /// node name.
    pub fn service_account(namespace: &str, account: &str) -> Self {
        Self {
            username: format!("system:serviceaccount:{namespace}:{account}"),
            uid: format!("uid-of-{namespace}-{account}"),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".to_owned(),
            ],
            extra: BTreeMap::from([(
                CREDENTIAL_ID_EXTRA.to_owned(),
                vec![format!("JTI=token-of-{account}")],
            )]),
        }
    }

    /// The ComputeDomain identity's token on the Node `node`.
    pub fn compute_domains_node(node: &str) -> Self {
        let (namespace, account) = COMPUTE_DOMAINS_ACCOUNT;
        Self::node_bound(namespace, account, node, &format!("uid-of-node-{node}"))
    }
}

/// The API server's answer to the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Admitted (the write goes on to storage).
    Allowed,
    /// Refused: what the API server answers the client.
    Refused {
        /// The HTTP status code (403 Forbidden, 422 Invalid, …).
        code: u16,
        /// The metav1.Status reason ("Forbidden", "Invalid", …).
        reason: String,
        /// The message, naming the policy and binding that refused.
        message: String,
    },
}

impl Verdict {
    /// Whether the write is admitted.
    pub fn allowed(&self) -> bool {
        matches!(self, Self::Allowed)
    }
}

/// One answer line as the tool writes it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Answer {
    pub allowed: bool,
    #[serde(default)]
    pub code: u16,
    #[serde(default)]
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub error: String,
}

/// The line the tool writes once its files are read and compiled.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ready {
    pub ready: bool,
    /// The policies' names, in file order.
    pub policies: Vec<String>,
    pub bindings: Vec<String>,
    /// The Go it was built with.
    pub go: String,
    /// The Debian version of golang-k8s-apiserver-dev it was built from.
    pub apiserver: String,
}
