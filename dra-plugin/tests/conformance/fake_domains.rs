//! An API server for ComputeDomains, over plain HTTP/1.1 on 127.0.0.1: it
//! holds ComputeDomains (listed, read, their status replaced through the
//! `status` subresource only with the resourceVersion stored: 409 otherwise,
//! as the real one), ResourceClaimTemplates (created once: 409
//! AlreadyExists after; each checked against the strict resource.k8s.io/v1
//! schema of every vendored version; listed by label; a merge patch clearing
//! finalizers; a delete that waits for the finalizers as the real one does)
//! and Nodes (listed). Every change wakes the test's waits.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufReader;
use std::net::TcpStream;

use serde_json::{Value, json};

use crate::http::{Served, Shared, percent_decode, read_request, respond};

/// What the server holds.
#[derive(Debug, Default)]
pub struct Domains {
    /// ComputeDomains by (namespace, name).
    pub domains: BTreeMap<(String, String), Value>,
    /// ResourceClaimTemplates by (namespace, name).
    pub templates: BTreeMap<(String, String), Value>,
    /// The cluster's Nodes.
    pub nodes: BTreeSet<String>,
    /// Status writes that landed, and those refused as conflicts.
    pub status_writes: usize,
    pub conflicts: usize,
    /// Writes refused as invalid, with why.
    pub refused: Vec<String>,
    version: u64,
}

impl Domains {
    fn next_version(&mut self) -> String {
        self.version += 1;
        self.version.to_string()
    }

    /// Puts `domain` in (as `kubectl apply` would: a uid and a version).
    pub fn put_domain(&mut self, mut domain: Value, uid: &str) {
        if domain["metadata"]["namespace"].is_null() {
            domain["metadata"]["namespace"] = json!("default");
        }
        domain["metadata"]["uid"] = json!(uid);
        domain["metadata"]["resourceVersion"] = json!(self.next_version());
        let key = key_of(&domain);
        self.domains.insert(key, domain);
    }

    /// The status of the domain `name` in `default`.
    pub fn status(&self, name: &str) -> Value {
        self.domains
            .get(&("default".to_owned(), name.to_owned()))
            .map(|d| d["status"].clone())
            .unwrap_or(Value::Null)
    }
}

fn key_of(object: &Value) -> (String, String) {
    let text = |k: &str| {
        object["metadata"][k]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    (text("namespace"), text("name"))
}

/// The server.
pub type FakeDomainsApi = Served<Domains>;

impl Served<Domains> {
    /// Serves no domain, template or Node yet.
    pub fn start() -> Self {
        Self::serve(Domains::default(), serve)
    }
}

fn serve(stream: TcpStream, shared: &Shared<Domains>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader) {
        let (status, reply) = {
            let mut state = shared.0.lock().expect("state lock");
            let answer = route(&mut state, &request.method, &request.target, &request.body);
            shared.1.notify_all();
            answer
        };
        if !respond(&mut writer, status, &reply) {
            return;
        }
    }
}

fn failure(code: u16, reason: &str, message: &str) -> (u16, Value) {
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": message, "reason": reason, "code": code});
    (code, status)
}

/// 404 for the object `name` of `resource`, as the API server words it.
fn not_found(resource: &str, name: &str) -> (u16, Value) {
    failure(404, "NotFound", &format!("{resource} {name} not found"))
}

fn list(kind: &str, version: u64, items: Vec<Value>) -> (u16, Value) {
    let meta = json!({"resourceVersion": version.to_string()});
    (
        200,
        json!({"kind": kind, "apiVersion": "v1", "metadata": meta, "items": items}),
    )
}

const CD: &str = "/apis/resource.nvidia.com/v1beta1";
const RCT: &str = "/apis/resource.k8s.io/v1";

fn route(state: &mut Domains, method: &str, target: &str, body: &[u8]) -> (u16, Value) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    match (method, segments.as_slice()) {
        ("GET", ["api", "v1", "nodes"]) => {
            let items = state
                .nodes
                .iter()
                .map(|n| json!({"metadata": {"name": n}}))
                .collect();
            list("NodeList", state.version, items)
        }
        ("GET", ["apis", "resource.nvidia.com", "v1beta1", "computedomains"]) => {
            let items = state.domains.values().cloned().collect();
            list("ComputeDomainList", state.version, items)
        }
        (
            "GET",
            [
                "apis",
                "resource.nvidia.com",
                "v1beta1",
                "namespaces",
                ns,
                "computedomains",
                name,
            ],
        ) => match state.domains.get(&((*ns).to_owned(), (*name).to_owned())) {
            Some(domain) => (200, domain.clone()),
            None => not_found("computedomains", name),
        },
        (
            "PUT",
            [
                "apis",
                "resource.nvidia.com",
                "v1beta1",
                "namespaces",
                ns,
                "computedomains",
                name,
                "status",
            ],
        ) => write_status(state, ns, name, &body),
        (
            "POST",
            [
                "apis",
                "resource.k8s.io",
                "v1",
                "namespaces",
                ns,
                "resourceclaimtemplates",
            ],
        ) => create_template(state, ns, body),
        ("GET", ["apis", "resource.k8s.io", "v1", "resourceclaimtemplates"]) => {
            let label = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("labelSelector="))
                .map(percent_decode)
                .unwrap_or_default();
            let items = state
                .templates
                .values()
                .filter(|t| label.is_empty() || !t["metadata"]["labels"][&label].is_null())
                .cloned()
                .collect();
            list("ResourceClaimTemplateList", state.version, items)
        }
        (
            "PATCH",
            [
                "apis",
                "resource.k8s.io",
                "v1",
                "namespaces",
                ns,
                "resourceclaimtemplates",
                name,
            ],
        ) => patch_template(state, ns, name, &body),
        (
            "DELETE",
            [
                "apis",
                "resource.k8s.io",
                "v1",
                "namespaces",
                ns,
                "resourceclaimtemplates",
                name,
            ],
        ) => delete_template(state, ns, name),
        _ => failure(
            404,
            "NotFound",
            &format!("{method} {CD} or {RCT}: no route for {path}"),
        ),
    }
}

fn write_status(state: &mut Domains, ns: &str, name: &str, body: &Value) -> (u16, Value) {
    let key = (ns.to_owned(), name.to_owned());
    let Some(stored) = state.domains.get(&key).cloned() else {
        return not_found("computedomains", name);
    };
    if body["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"] {
        state.conflicts += 1;
        return failure(
            409,
            "Conflict",
            "the object has been modified; please apply your changes to the latest version and try again",
        );
    }
    let mut next = stored;
    next["status"] = body["status"].clone();
    next["metadata"]["resourceVersion"] = json!(state.next_version());
    state.status_writes += 1;
    state.domains.insert(key, next.clone());
    (200, next)
}

fn create_template(state: &mut Domains, ns: &str, mut body: Value) -> (u16, Value) {
    let errors = crate::k8s_schema::errors("ResourceClaimTemplate", &body);
    if !errors.is_empty() {
        state.refused.push(errors.join("; "));
        return failure(422, "Invalid", &errors.join("; "));
    }
    let name = body["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let key = (ns.to_owned(), name.clone());
    if state.templates.contains_key(&key) {
        return failure(
            409,
            "AlreadyExists",
            &format!("resourceclaimtemplates {name} already exists"),
        );
    }
    body["metadata"]["resourceVersion"] = json!(state.next_version());
    body["metadata"]["uid"] = json!(format!("00000000-0000-4000-8000-{:012}", state.version));
    state.templates.insert(key, body.clone());
    (201, body)
}

fn patch_template(state: &mut Domains, ns: &str, name: &str, patch: &Value) -> (u16, Value) {
    let key = (ns.to_owned(), name.to_owned());
    let Some(template) = state.templates.get_mut(&key) else {
        return not_found("resourceclaimtemplates", name);
    };
    let clears = patch["metadata"]
        .get("finalizers")
        .is_some_and(Value::is_null);
    if clears && let Some(meta) = template["metadata"].as_object_mut() {
        meta.remove("finalizers");
    }
    let template = template.clone();
    let gone = !template["metadata"]["deletionTimestamp"].is_null();
    if gone && template["metadata"]["finalizers"].is_null() {
        state.templates.remove(&key);
    }
    (200, template)
}

fn delete_template(state: &mut Domains, ns: &str, name: &str) -> (u16, Value) {
    let key = (ns.to_owned(), name.to_owned());
    let Some(template) = state.templates.get_mut(&key) else {
        return not_found("resourceclaimtemplates", name);
    };
    let held = template["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    if held {
        template["metadata"]["deletionTimestamp"] = json!("2026-11-29T00:00:00Z");
        return (200, template.clone());
    }
    state.templates.remove(&key);
    (
        200,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "metadata": {}}),
    )
}
