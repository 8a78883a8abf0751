//! An API server for ComputeDomains, over plain HTTP/1.1 on 127.0.0.1,
//! holding what the nodes' plugins read and write: ComputeDomains, their
//! workload ResourceClaimTemplates, membership Leases, Nodes and the
//! ResourceClaims the plugins prepare. Like the real one:
//!
//! - lists and watches of each ([`crate::fake_compute_domains_watch`]), by
//!   namespace and label selector, from one resourceVersion sequence;
//! - a ComputeDomain's `status` written by server-side apply or JSON patch
//!   ([`crate::fake_compute_domains_apply`]: field ownership per manager, the
//!   list-map of `status.nodes`), a stale resourceVersion or a field
//!   conflict answered 409;
//! - templates created once (409 AlreadyExists after; each checked against
//!   the strict resource.k8s.io/v1 schema), read; Leases created, read,
//!   deleted; Nodes and claims read;
//! - the garbage collector: a ComputeDomain deleted takes the templates it
//!   owns, a Node deleted the Leases it owns;
//! - bearer tokens, the packaged role and the admission policies
//!   ([`crate::fake_compute_domains_access`]).
//!
//! It counts requests and watches per caller (a node's token counts under
//! the node's name), the 409s on status writes, the writes refused, and
//! keeps every status each domain had, in order. Every change wakes the
//! test's waits and the watches.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::net::TcpStream;
use std::time::Instant;

use serde_json::{Value, json};

use crate::admission::{Admission, Operation, UserInfo};
use crate::fake_compute_domains_access::{Rules, Tokens, caller_name, forbidden_rbac, node_user};
use crate::fake_compute_domains_apply::{self as ssa, FieldSet};
use crate::http::{Request, Served, Shared, percent_decode, read_request, respond};

/// The kinds the server holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Domain,
    Template,
    Lease,
    Node,
    Claim,
}

impl Kind {
    const ALL: [Self; 5] = [
        Self::Domain,
        Self::Template,
        Self::Lease,
        Self::Node,
        Self::Claim,
    ];

    pub fn group(self) -> &'static str {
        match self {
            Self::Domain => "resource.nvidia.com",
            Self::Template | Self::Claim => "resource.k8s.io",
            Self::Lease => "coordination.k8s.io",
            Self::Node => "",
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            Self::Domain => "v1beta1",
            _ => "v1",
        }
    }

    pub fn resource(self) -> &'static str {
        match self {
            Self::Domain => "computedomains",
            Self::Template => "resourceclaimtemplates",
            Self::Lease => "leases",
            Self::Node => "nodes",
            Self::Claim => "resourceclaims",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Domain => "ComputeDomain",
            Self::Template => "ResourceClaimTemplate",
            Self::Lease => "Lease",
            Self::Node => "Node",
            Self::Claim => "ResourceClaim",
        }
    }

    pub fn api_version(self) -> String {
        match self.group() {
            "" => self.version().to_owned(),
            group => format!("{group}/{}", self.version()),
        }
    }
}

/// What a request's path names.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    kind: Kind,
    namespace: Option<String>,
    name: Option<String>,
    sub: Option<String>,
}

fn target(path: &str) -> Option<Target> {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some((*ns).to_owned()), rest),
        _ => (None, rest),
    };
    let (resource, name, sub) = match rest {
        [resource] => (*resource, None, None),
        [resource, name] => (*resource, Some((*name).to_owned()), None),
        [resource, name, sub] => (*resource, Some((*name).to_owned()), Some((*sub).to_owned())),
        _ => return None,
    };
    let kind = Kind::ALL
        .into_iter()
        .find(|k| k.group() == group && k.version() == version && k.resource() == resource)?;
    Some(Target {
        kind,
        namespace,
        name,
        sub,
    })
}

/// What the server holds.
#[derive(Debug, Default)]
pub struct Domains {
    objects: BTreeMap<Kind, BTreeMap<(String, String), Value>>,
    /// Per ComputeDomain: the fields each manager owns of its status.
    managed: BTreeMap<(String, String), BTreeMap<String, FieldSet>>,
    /// Every change: (resourceVersion, kind, type, object).
    pub events: Vec<(u64, Kind, &'static str, Value)>,
    pub version: u64,
    pub tokens: Tokens,
    pub rules: Rules,
    pub admission: Option<&'static Admission>,
    /// Requests (watches apart) and watches opened, per caller.
    pub requests: BTreeMap<String, usize>,
    pub watches: BTreeMap<String, usize>,
    pub watches_open: usize,
    /// Bumped to end every open watch (none does yet).
    pub watch_epoch: u64,
    /// Status writes that landed; refused as conflicts (409); creates that
    /// found the object there (409 AlreadyExists).
    pub status_writes: usize,
    pub conflicts: usize,
    pub already_exists: usize,
    /// Writes refused (schema, role, admission), with why.
    pub refused: Vec<String>,
    /// Admission requests evaluated.
    pub admitted: usize,
    /// Every status each ComputeDomain had, in order, and when.
    pub history: BTreeMap<(String, String), Vec<(Instant, Value)>>,
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

impl Domains {
    /// The objects of `kind`, by (namespace, name).
    pub fn objects(&self, kind: Kind) -> &BTreeMap<(String, String), Value> {
        static EMPTY: BTreeMap<(String, String), Value> = BTreeMap::new();
        self.objects.get(&kind).unwrap_or(&EMPTY)
    }

    /// The object of `kind` at (namespace, name).
    pub fn object(&self, kind: Kind, namespace: &str, name: &str) -> Option<&Value> {
        self.objects(kind)
            .get(&(namespace.to_owned(), name.to_owned()))
    }

    /// Stores `object` (a new resourceVersion) with its event.
    fn store(&mut self, kind: Kind, mut object: Value) -> Value {
        self.version += 1;
        object["metadata"]["resourceVersion"] = json!(self.version.to_string());
        object["apiVersion"] = json!(kind.api_version());
        object["kind"] = json!(kind.name());
        let key = key_of(&object);
        let map = self.objects.entry(kind).or_default();
        let event = if map.contains_key(&key) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        map.insert(key, object.clone());
        self.events
            .push((self.version, kind, event, object.clone()));
        object
    }

    /// Removes the object of `kind` at `key`, with its event; then what it
    /// owned (the garbage collector).
    fn delete(&mut self, kind: Kind, key: &(String, String)) -> Option<Value> {
        let old = self.objects.get_mut(&kind)?.remove(key)?;
        self.version += 1;
        let mut gone = old.clone();
        gone["metadata"]["resourceVersion"] = json!(self.version.to_string());
        self.events.push((self.version, kind, "DELETED", gone));
        self.managed.remove(key);
        let uid = old["metadata"]["uid"].clone();
        let owned: Vec<(Kind, (String, String))> = (self.objects.iter())
            .flat_map(|(k, objects)| objects.iter().map(move |(key, o)| (*k, key, o)))
            .filter(|(_, _, o)| {
                (o["metadata"]["ownerReferences"]
                    .as_array()
                    .into_iter()
                    .flatten())
                .any(|r| r["uid"] == uid)
            })
            .map(|(k, key, _)| (k, key.clone()))
            .collect();
        for (k, key) in owned {
            self.delete(k, &key);
        }
        Some(old)
    }

    /// Puts `domain` in (as `kubectl apply` would: its namespace, `default`
    /// unless it names one, a uid and a version).
    pub fn put_domain(&mut self, mut domain: Value, uid: &str) {
        if domain["metadata"]["namespace"].is_null() {
            domain["metadata"]["namespace"] = json!("default");
        }
        domain["metadata"]["uid"] = json!(uid);
        self.store(Kind::Domain, domain);
    }

    /// Deletes a ComputeDomain (and, by the garbage collector, its
    /// templates).
    pub fn delete_domain(&mut self, namespace: &str, name: &str) {
        self.delete(Kind::Domain, &(namespace.to_owned(), name.to_owned()));
    }

    /// A Node of `name` (uid `uid-of-node-<name>`), and a token of the
    /// compute-domains identity bound to it; the token.
    pub fn put_node(&mut self, name: &str) -> String {
        let node = json!({"metadata": {"name": name, "uid": format!("uid-of-node-{name}")}});
        self.store(Kind::Node, node);
        let token = format!("token-of-{name}");
        self.tokens.insert(token.clone(), node_user(name));
        token
    }

    /// A token for `user`.
    pub fn put_token(&mut self, token: &str, user: UserInfo) {
        self.tokens.insert(token.to_owned(), user);
    }

    /// Deletes the Node `name` (and, by the garbage collector, its Leases).
    pub fn delete_node(&mut self, name: &str) {
        self.delete(Kind::Node, &(String::new(), name.to_owned()));
    }

    /// Puts a ResourceClaim in.
    pub fn put_claim(&mut self, claim: Value) {
        self.store(Kind::Claim, claim);
    }

    /// The status of the ComputeDomain `name` in `default`.
    pub fn status(&self, name: &str) -> Value {
        self.status_in("default", name)
    }

    /// The status of the ComputeDomain `namespace/name`.
    pub fn status_in(&self, namespace: &str, name: &str) -> Value {
        (self.object(Kind::Domain, namespace, name))
            .map(|d| d["status"].clone())
            .unwrap_or(Value::Null)
    }

    /// The templates there are.
    pub fn templates(&self) -> &BTreeMap<(String, String), Value> {
        self.objects(Kind::Template)
    }

    /// The Leases there are.
    pub fn leases(&self) -> &BTreeMap<(String, String), Value> {
        self.objects(Kind::Lease)
    }
}

/// The server.
pub type FakeDomainsApi = Served<Domains>;

impl Served<Domains> {
    /// Serves nothing yet; the packaged role for the compute-domains
    /// identity; its writes admitted by `admission` when given.
    pub fn start(admission: Option<&'static Admission>) -> Self {
        let state = Domains {
            rules: Rules::packaged(),
            admission,
            version: 100,
            ..Domains::default()
        };
        Self::serve(state, serve)
    }
}

fn serve(stream: TcpStream, shared: &Shared<Domains>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader) {
        let (path, query) = (request.target.split_once('?')).unwrap_or((&request.target, ""));
        let watch = request.method == "GET"
            && query
                .split('&')
                .any(|kv| kv == "watch=true" || kv == "watch=1");
        let (status, reply) = {
            let mut state = shared.0.lock().expect("state lock");
            let answer = handle(&mut state, &request, path, query, watch);
            shared.1.notify_all();
            answer
        };
        if status == 0 {
            let Some(target) = target(path) else { return };
            crate::fake_compute_domains_watch::serve(
                writer,
                shared,
                target.kind,
                target.namespace,
                query,
            );
            return;
        }
        if !respond(&mut writer, status, &reply) {
            return;
        }
    }
}

/// The decoded value of `key` in a query string.
pub fn query_value(query: &str, key: &str) -> Option<String> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .map(percent_decode)
}

pub fn failure(code: u16, reason: &str, message: &str) -> (u16, Value) {
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": message, "reason": reason, "code": code});
    (code, status)
}

/// The answer; status 0: serve a watch.
fn handle(
    state: &mut Domains,
    request: &Request,
    path: &str,
    query: &str,
    watch: bool,
) -> (u16, Value) {
    let user = match request
        .header("authorization")
        .and_then(|a| a.strip_prefix("Bearer "))
    {
        None => None,
        Some(token) => match state.tokens.get(token) {
            Some(user) => Some(user.clone()),
            None => return failure(401, "Unauthorized", "Unauthorized"),
        },
    };
    let caller = caller_name(user.as_ref());
    let counter = if watch {
        &mut state.watches
    } else {
        &mut state.requests
    };
    *counter.entry(caller).or_default() += 1;
    let Some(target) = target(path) else {
        return failure(404, "NotFound", &format!("no route for {path}"));
    };
    let verb = match (request.method.as_str(), &target.name) {
        ("GET", None) if watch => "watch",
        ("GET", None) => "list",
        ("GET", Some(_)) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", _) => "delete",
        _ => "unknown",
    };
    let resource = match &target.sub {
        Some(sub) => format!("{}/{sub}", target.kind.resource()),
        None => target.kind.resource().to_owned(),
    };
    let ns = target.namespace.as_deref();
    if let Some(user) = &user
        && !state.authorized(user, verb, target.kind, &resource, ns)
    {
        let name = target.name.as_deref();
        let answer = forbidden_rbac(user, verb, target.kind, &resource, name, ns);
        state
            .refused
            .push(format!("403 {verb} {resource}: {}", answer.1["message"]));
        return answer;
    }
    if watch {
        return (0, Value::Null);
    }
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let (ns, name) = (ns.unwrap_or_default(), target.name.as_deref());
    match (verb, name, target.sub.as_deref()) {
        ("list", None, None) => crate::fake_compute_domains_watch::list(
            state,
            target.kind,
            target.namespace.as_deref(),
            query,
        ),
        ("get", Some(name), None) => match state.object(target.kind, ns, name) {
            Some(object) => (200, object.clone()),
            None => not_found(target.kind, name),
        },
        ("create", None, None) => create(state, user.as_ref(), target.kind, ns, body),
        ("delete", Some(name), None) => delete(state, user.as_ref(), target.kind, ns, name),
        ("patch", Some(name), Some("status")) if target.kind == Kind::Domain => {
            let patch = StatusPatch {
                content: request.header("content-type").unwrap_or_default(),
                query,
                body: &body,
            };
            patch_status(state, user.as_ref(), ns, name, &patch)
        }
        _ => failure(
            405,
            "MethodNotAllowed",
            &format!("{} {path}: not served here", request.method),
        ),
    }
}

/// 404 for `name` of `kind`, as the API server words it.
fn not_found(kind: Kind, name: &str) -> (u16, Value) {
    let group = match kind.group() {
        "" => String::new(),
        group => format!(".{group}"),
    };
    failure(
        404,
        "NotFound",
        &format!("{}{group} {name:?} not found", kind.resource()),
    )
}

fn create(
    state: &mut Domains,
    user: Option<&UserInfo>,
    kind: Kind,
    ns: &str,
    mut body: Value,
) -> (u16, Value) {
    if kind == Kind::Template {
        let errors = crate::k8s_schema::errors("ResourceClaimTemplate", &body);
        if !errors.is_empty() {
            state
                .refused
                .push(format!("422 template: {}", errors.join("; ")));
            return failure(422, "Invalid", &errors.join("; "));
        }
    }
    body["metadata"]["namespace"] = json!(ns);
    let name = body["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if state.object(kind, ns, &name).is_some() {
        state.already_exists += 1;
        let group = kind.group();
        return failure(
            409,
            "AlreadyExists",
            &format!("{}.{group} {name:?} already exists", kind.resource()),
        );
    }
    if let Some(refusal) = state.admit(
        user,
        Operation::Create,
        kind,
        "",
        ns,
        &name,
        Some(&body),
        None,
    ) {
        return refusal;
    }
    body["metadata"]["uid"] = json!(format!("00000000-0000-4000-8000-{:012}", state.version + 1));
    body["metadata"]["creationTimestamp"] = json!("2026-12-05T00:00:00Z");
    (201, state.store(kind, body))
}

fn delete(
    state: &mut Domains,
    user: Option<&UserInfo>,
    kind: Kind,
    ns: &str,
    name: &str,
) -> (u16, Value) {
    let Some(old) = state.object(kind, ns, name).cloned() else {
        return not_found(kind, name);
    };
    if let Some(refusal) = state.admit(
        user,
        Operation::Delete,
        kind,
        "",
        ns,
        name,
        None,
        Some(&old),
    ) {
        return refusal;
    }
    state.delete(kind, &(ns.to_owned(), name.to_owned()));
    (
        200,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "metadata": {}}),
    )
}

/// A write of a ComputeDomain's status: server-side apply or JSON patch.
/// A write of the status subresource: how it is sent.
struct StatusPatch<'a> {
    /// Its Content-Type.
    content: &'a str,
    /// Its query string.
    query: &'a str,
    body: &'a Value,
}

fn patch_status(
    state: &mut Domains,
    user: Option<&UserInfo>,
    ns: &str,
    name: &str,
    patch: &StatusPatch<'_>,
) -> (u16, Value) {
    let StatusPatch {
        content,
        query,
        body,
    } = *patch;
    let key = (ns.to_owned(), name.to_owned());
    let Some(stored) = state.object(Kind::Domain, ns, name).cloned() else {
        return not_found(Kind::Domain, name);
    };
    let managers = state.managed.get(&key).cloned().unwrap_or_default();
    let asked = |k: &str| query_value(query, k);
    let written = if content.starts_with("application/apply-patch") {
        let Some(manager) = asked("fieldManager") else {
            return failure(422, "Invalid", "PATCH with apply requires a fieldManager");
        };
        let force = asked("force").as_deref() == Some("true");
        let version = &body["metadata"]["resourceVersion"];
        if !version.is_null() && *version != stored["metadata"]["resourceVersion"] {
            state.conflicts += 1;
            return conflict(
                "the object has been modified; please apply your changes to the latest version and try again",
            );
        }
        match ssa::apply(
            &stored["status"],
            &managers,
            &manager,
            &body["status"],
            force,
        ) {
            Ok(applied) => (applied.status, applied.managers),
            Err(conflicts) => {
                state.conflicts += 1;
                let list: Vec<String> = (conflicts.iter())
                    .map(|(m, p)| format!("conflict with {m:?}: {p}"))
                    .collect();
                return conflict(&format!(
                    "Apply failed with {} conflicts: {}",
                    list.len(),
                    list.join("; ")
                ));
            }
        }
    } else if content.starts_with("application/json-patch") {
        match ssa::json_patch(&stored, body) {
            Ok(patched) => {
                let status = patched["status"].clone();
                let kept = ssa::prune(&managers, &status);
                (status, kept)
            }
            Err(why) => {
                state.refused.push(format!("422 JSON patch: {why}"));
                return failure(422, "Invalid", &why);
            }
        }
    } else {
        return failure(
            415,
            "UnsupportedMediaType",
            &format!("{content}: not served here"),
        );
    };
    let (status, managers) = written;
    if let Some(twice) = duplicate_name(&status) {
        let why = format!(
            "ComputeDomain.resource.nvidia.com {name:?} is invalid: status.nodes[{twice}]: Duplicate value"
        );
        state.refused.push(format!("422 {why}"));
        return failure(422, "Invalid", &why);
    }
    let mut next = stored.clone();
    next["status"] = status;
    next["metadata"]["managedFields"] = ssa::managed_fields(&managers);
    if let Some(refusal) = state.admit(
        user,
        Operation::Update,
        Kind::Domain,
        "status",
        ns,
        name,
        Some(&next),
        Some(&stored),
    ) {
        return refusal;
    }
    state.managed.insert(key.clone(), managers);
    state.status_writes += 1;
    let next = state.store(Kind::Domain, next);
    let at = Instant::now();
    let history = state.history.entry(key).or_default();
    history.push((at, next["status"].clone()));
    (200, next)
}

fn conflict(message: &str) -> (u16, Value) {
    failure(409, "Conflict", message)
}

/// The name two entries of `status.nodes` share, if any.
fn duplicate_name(status: &Value) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    (status["nodes"].as_array().into_iter().flatten())
        .filter_map(|n| n["name"].as_str())
        .find(|n| !seen.insert(*n))
        .map(str::to_owned)
}
