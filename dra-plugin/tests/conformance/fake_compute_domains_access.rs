//! Who may do what on the ComputeDomain API server
//! ([`crate::fake_compute_domains`]), as the real one decides it:
//!
//! - **authentication**: a bearer token the test registered names its user
//!   info (a node's ComputeDomain token: the ServiceAccount
//!   `gpuslice-system/gpuslice-compute-domains` with the node's name in
//!   `authentication.kubernetes.io/node-name`); an unknown token is 401; no
//!   token is the test itself (an administrator);
//! - **authorization**: that ServiceAccount gets exactly the rules of the
//!   packaged role (packaging/rbac/compute-domains.yaml, read from the
//!   file: its ClusterRole everywhere, its Role in its namespace); anything
//!   else is 403 Forbidden, worded as the API server words it;
//! - **admission**: every write of that ServiceAccount goes through
//!   Kubernetes' own ValidatingAdmissionPolicy evaluator
//!   (tests/tools/admission, packaging/rbac/compute-domains-admission.yaml)
//!   with the caller's user info and the cluster's Nodes as params; a
//!   refusal is answered with the policy's code, reason and message.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::admission::{
    Admission, COMPUTE_DOMAINS_ACCOUNT, NODE_NAME_EXTRA, Operation, Request, Resource, UserInfo,
    Verdict, repo_root,
};
use crate::fake_compute_domains::{Domains, Kind};

/// One rule of a role.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    groups: Vec<String>,
    resources: Vec<String>,
    verbs: Vec<String>,
    /// The Role's namespace; None for the ClusterRole's.
    namespace: Option<String>,
}

/// The packaged role's rules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules(Vec<Rule>);

impl Rules {
    /// Read from packaging/rbac/compute-domains.yaml.
    pub fn packaged() -> Self {
        let path = repo_root().join("packaging/rbac/compute-domains.yaml");
        let text = std::fs::read_to_string(&path).expect("the packaged role");
        let mut rules = Vec::new();
        for document in serde_norway::Deserializer::from_str(&text) {
            let doc: Value = serde::Deserialize::deserialize(document).expect("YAML");
            let namespace = match doc["kind"].as_str() {
                Some("ClusterRole") => None,
                Some("Role") => doc["metadata"]["namespace"].as_str().map(str::to_owned),
                _ => continue,
            };
            let list = |v: &Value| -> Vec<String> {
                (v.as_array().into_iter().flatten())
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            };
            for rule in doc["rules"].as_array().into_iter().flatten() {
                rules.push(Rule {
                    groups: list(&rule["apiGroups"]),
                    resources: list(&rule["resources"]),
                    verbs: list(&rule["verbs"]),
                    namespace: namespace.clone(),
                });
            }
        }
        Self(rules)
    }

    /// Whether `verb` on `resource` (`plural` or `plural/sub`) of `group` in
    /// `namespace` is allowed.
    fn allows(&self, verb: &str, group: &str, resource: &str, namespace: Option<&str>) -> bool {
        self.0.iter().any(|rule| {
            rule.groups.iter().any(|g| g == group)
                && rule.resources.iter().any(|r| r == resource)
                && rule.verbs.iter().any(|v| v == verb)
                && rule
                    .namespace
                    .as_deref()
                    .is_none_or(|ns| namespace == Some(ns))
        })
    }
}

/// The compute-domains identity's token of `node`, as the API server
/// reads it.
pub fn node_user(node: &str) -> UserInfo {
    UserInfo::compute_domains_node(node)
}

/// Whether `user` is the compute-domains ServiceAccount.
pub fn is_compute_domains(user: &UserInfo) -> bool {
    let (namespace, account) = COMPUTE_DOMAINS_ACCOUNT;
    user.username == format!("system:serviceaccount:{namespace}:{account}")
}

/// The name requests of `user` are counted under: its node, else its user
/// name.
pub fn caller_name(user: Option<&UserInfo>) -> String {
    match user {
        None => "admin".to_owned(),
        Some(user) => (user.extra.get(NODE_NAME_EXTRA))
            .and_then(|n| n.first().cloned())
            .unwrap_or_else(|| user.username.clone()),
    }
}

/// 403 for `user` doing `verb` on `resource`, as the API server words it.
pub fn forbidden_rbac(
    user: &UserInfo,
    verb: &str,
    kind: Kind,
    resource: &str,
    name: Option<&str>,
    namespace: Option<&str>,
) -> (u16, Value) {
    let object = name.map_or_else(String::new, |n| format!(" {n:?}"));
    let place = namespace.map_or_else(
        || " at the cluster scope".to_owned(),
        |ns| format!(" in the namespace {ns:?}"),
    );
    let message = format!(
        "{}.{}{object} is forbidden: User {:?} cannot {verb} resource {resource:?} in API group \
         {:?}{place}",
        kind.resource(),
        kind.group(),
        user.username,
        kind.group()
    );
    (
        403,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": message, "reason": "Forbidden", "code": 403}),
    )
}

impl Domains {
    /// Whether the role lets `user` do `verb` on `resource`.
    pub fn authorized(
        &self,
        user: &UserInfo,
        verb: &str,
        kind: Kind,
        resource: &str,
        namespace: Option<&str>,
    ) -> bool {
        !is_compute_domains(user) || self.rules.allows(verb, kind.group(), resource, namespace)
    }

    /// The admission verdict on a write of `user`: None when admitted (or
    /// not the compute-domains identity, or no evaluator here), else the
    /// refusal as the API server answers it.
    #[expect(clippy::too_many_arguments, reason = "an admission request's fields")]
    pub fn admit(
        &mut self,
        user: Option<&UserInfo>,
        operation: Operation,
        kind: Kind,
        sub: &str,
        namespace: &str,
        name: &str,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Option<(u16, Value)> {
        let user = user.filter(|u| is_compute_domains(u))?;
        let admission: &Admission = self.admission?;
        let request = Request {
            operation,
            resource: Resource::new(kind.group(), kind.version(), kind.resource()),
            sub_resource: sub.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            object: object.cloned(),
            old_object: old.cloned(),
            user_info: user.clone(),
            nodes: self.objects(Kind::Node).values().cloned().collect(),
            dry_run: false,
        };
        let verdict = admission
            .ask(&request)
            .unwrap_or_else(|e| panic!("admission of {name}: {e}"));
        self.admitted += 1;
        match verdict {
            Verdict::Allowed => None,
            Verdict::Refused {
                code,
                reason,
                message,
            } => {
                self.refused.push(format!("{code} {reason}: {message}"));
                Some((
                    code,
                    json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Failure", "message": message, "reason": reason,
                           "code": code}),
                ))
            }
        }
    }
}

/// Every registered token's user, by token.
pub type Tokens = BTreeMap<String, UserInfo>;
