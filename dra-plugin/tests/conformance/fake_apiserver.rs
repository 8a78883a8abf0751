//! A small API server over plain HTTP/1.1 on 127.0.0.1: serves the Node and
//! ResourceClaims the test puts in, and keeps ResourceSlices the way the real
//! one does for the calls the shim makes (list and watch by field selector,
//! create with generateName, replace with a resourceVersion precondition,
//! delete with uid/resourceVersion preconditions). Every write is checked
//! against the resource.k8s.io/v1 rules ([`check_slice`]); a bad write is
//! refused with 422 and recorded, so the test can assert none happened.
//! Like the real one it drops the fields of a feature gate that is off, on
//! create (dry run included) and on update unless the stored slice uses
//! them: with [`State::partitionable`] false (DRAPartitionableDevices off),
//! `sharedCounters` and every device's `consumesCounters` vanish from what
//! is stored and answered. `dryRun=All` creates are checked and answered
//! but not stored ([`State::dry_runs`]); discovery of resource.k8s.io/v1
//! lists resourceslices.
//! Claim status applies follow [`crate::claim_status_rules`]. In its fault
//! mode ([`State::faults`], [`crate::fake_faults`]) it fails a scripted or
//! seeded share of writes with transient errors before serving them.
//! Every change is kept in an event log for watches ([`crate::fake_watch`]),
//! which the test can compact and whose open watches it can close. Tests
//! wait on the state through a condition variable, never by sleeping.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::net::TcpStream;

use serde_json::{Value, json};

pub use crate::http::percent_decode;
use crate::http::{Served, Shared, read_request, respond};
use crate::slice_rules::check_slice;

/// What the server holds.
#[derive(Debug, Default)]
pub struct State {
    pub node: (String, String),
    pub claims: BTreeMap<(String, String), Value>,
    pub slices: BTreeMap<String, Value>,
    pub next_version: u64,
    /// Field selectors of every slice list.
    pub list_selectors: Vec<String>,
    /// Slice lists a watcher made (they ask for pages: `limit=`).
    pub watcher_lists: usize,
    /// Field selectors of every slice watch.
    pub watch_selectors: Vec<String>,
    /// Watches open now, and opened so far.
    pub watches_open: usize,
    pub watches_opened: usize,
    /// Every change of a slice, in order: (resourceVersion, type, object).
    pub events: Vec<(u64, &'static str, Value)>,
    /// Events up to this resourceVersion are gone (etcd compaction): a watch
    /// from an older version is answered 410 Gone.
    pub compacted_to: u64,
    /// Bumped to end every open watch.
    pub watch_epoch: u64,
    /// Bumped to send every open watch a bookmark.
    pub bookmark_epoch: u64,
    /// Bookmarks written to watches.
    pub bookmarks_sent: usize,
    /// The resourceVersion every watch started from.
    pub watch_versions: Vec<u64>,
    /// "METHOD path" of every slice write.
    pub writes: Vec<String>,
    /// Writes refused for breaking a rule, with why.
    pub violations: Vec<String>,
    /// DRAPartitionableDevices: when false, counter fields are dropped.
    pub partitionable: bool,
    /// The spec of every dry-run create, as answered.
    pub dry_runs: Vec<Value>,
    /// Claim status writes: the switches ([`crate::claim_status_rules`]).
    pub claim_status: crate::claim_status_rules::ClaimStatusSwitches,
    /// Claim status writes: what happened.
    pub claim_status_log: crate::claim_status_rules::ClaimStatusLog,
    /// Writes failed before they are served ([`crate::fake_faults`]).
    pub faults: crate::fake_faults::Faults,
}

/// The server (its state, read, changed and waited for: [`Served`]).
pub type FakeApiServer = Served<State>;

impl Served<State> {
    /// A server for the Node `node`, DRAPartitionableDevices on.
    pub fn start(node: &str, node_uid: &str) -> Self {
        Self::start_with_gate(node, node_uid, true)
    }

    /// A server with DRAPartitionableDevices on or off.
    pub fn start_with_gate(node: &str, node_uid: &str, partitionable: bool) -> Self {
        let state = State {
            node: (node.to_owned(), node_uid.to_owned()),
            next_version: 100,
            partitionable,
            ..State::default()
        };
        Self::serve(state, serve_connection)
    }

    /// Runs `body` with a kube client of this server (kube's own retries
    /// on) on a runtime of its own.
    pub fn with_client<T>(&self, body: impl AsyncFnOnce(kube::Client) -> T) -> T {
        self.with_client_config(|_| {}, body)
    }

    /// [`Self::with_client`], the client's own retries off.
    pub fn with_client_no_retries<T>(&self, body: impl AsyncFnOnce(kube::Client) -> T) -> T {
        self.with_client_config(|config| config.default_retry = false, body)
    }

    /// Runs `body` with a kube client of this server, its config changed by
    /// `adjust`, on a runtime of its own.
    fn with_client_config<T>(
        &self,
        adjust: impl FnOnce(&mut kube::Config),
        body: impl AsyncFnOnce(kube::Client) -> T,
    ) -> T {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let mut config = kube::Config::new(self.url.parse().expect("server url"));
            adjust(&mut config);
            let client = kube::Client::try_from(config).expect("client");
            body(client).await
        })
    }

    pub fn put_claim(&self, claim: Value) {
        let ns = claim["metadata"]["namespace"]
            .as_str()
            .expect("ns")
            .to_owned();
        let name = claim["metadata"]["name"].as_str().expect("name").to_owned();
        self.state().claims.insert((ns, name), claim);
    }

    /// Removes every slice (what the kubelet does when it restarts).
    pub fn delete_all_slices(&self) {
        self.mutate(State::delete_all_slices);
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared<State>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut writer = stream;
    while let Some(request) = read_request(&mut reader) {
        let target = request.target.as_str();
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        if request.method == "GET"
            && path == SLICES
            && query.split('&').any(|kv| kv == "watch=true")
        {
            crate::fake_watch::serve(writer, shared, query);
            return;
        }
        let (status, reply) = {
            let mut state = shared.0.lock().expect("state lock");
            let answer = match state.faults.answer(&request.method, target) {
                Some(fault) => fault,
                None => route(&mut state, &request.method, target, &request.body),
            };
            shared.1.notify_all();
            answer
        };
        if !respond(&mut writer, status, &reply) {
            return;
        }
    }
}

pub const SLICES: &str = "/apis/resource.k8s.io/v1/resourceslices";

fn route(state: &mut State, method: &str, target: &str, body: &[u8]) -> (u16, Value) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("GET", ["api", "v1", "nodes", name]) if *name == state.node.0 => (
            200,
            json!({"apiVersion": "v1", "kind": "Node",
                   "metadata": {"name": state.node.0, "uid": state.node.1}}),
        ),
        (
            "GET",
            [
                "apis",
                "resource.k8s.io",
                "v1",
                "namespaces",
                ns,
                "resourceclaims",
                name,
            ],
        ) => match state.claims.get(&((*ns).to_owned(), (*name).to_owned())) {
            Some(claim) => (200, claim.clone()),
            None => not_found(&format!("resourceclaims {name}")),
        },
        (
            "PATCH",
            [
                "apis",
                "resource.k8s.io",
                "v1",
                "namespaces",
                ns,
                "resourceclaims",
                name,
                "status",
            ],
        ) => crate::claim_status_rules::patch_status(state, ns, name, query, body),
        ("POST", ["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"]) => {
            crate::claim_status_rules::self_subject_review(state)
        }
        ("GET", ["apis", "resource.k8s.io", "v1"]) => (
            200,
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "resource.k8s.io/v1",
                   "resources": [
                       {"name": "resourceclaims", "singularName": "resourceclaim", "namespaced": true,
                        "kind": "ResourceClaim", "verbs": ["get", "list", "watch"]},
                       {"name": "resourceclaims/status", "singularName": "", "namespaced": true,
                        "kind": "ResourceClaim", "verbs": ["get", "patch", "update"]},
                       {"name": "resourceslices", "singularName": "resourceslice", "namespaced": false,
                        "kind": "ResourceSlice", "verbs": ["create", "delete", "get", "list", "update", "watch"]}]}),
        ),
        ("GET", ["apis", "resource.k8s.io", "v1", "resourceclaims"]) => (
            200,
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimList",
                   "metadata": {"resourceVersion": state.next_version.to_string()},
                   "items": state.claims.values().cloned().collect::<Vec<_>>()}),
        ),
        ("GET", _) if path == SLICES => list_slices(state, query),
        ("POST", _) if path == SLICES && query_value(query, "dryRun").as_deref() == Some("All") => {
            crate::fake_gate::dry_run_create(state, body)
        }
        ("POST", _) if path == SLICES => create_slice(state, body),
        ("PUT", ["apis", "resource.k8s.io", "v1", "resourceslices", name]) => {
            replace_slice(state, name, body)
        }
        ("DELETE", ["apis", "resource.k8s.io", "v1", "resourceslices", name]) => {
            delete_slice(state, name, body)
        }
        _ => not_found(target),
    }
}

fn list_slices(state: &mut State, query: &str) -> (u16, Value) {
    let selector = query_value(query, "fieldSelector").unwrap_or_default();
    state.list_selectors.push(selector.clone());
    if query_value(query, "limit").is_some() {
        state.watcher_lists += 1;
    }
    let items: Vec<Value> = state
        .slices
        .values()
        .filter(|s| selects(&selector, s))
        .cloned()
        .collect();
    (
        200,
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSliceList",
               "metadata": {"resourceVersion": state.next_version.to_string()}, "items": items}),
    )
}

/// The decoded value of `key` in a query string.
pub fn query_value(query: &str, key: &str) -> Option<String> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .map(percent_decode)
}

/// Whether `slice` matches a field selector on spec.nodeName and spec.driver.
pub fn selects(selector: &str, slice: &Value) -> bool {
    selector
        .split(',')
        .filter_map(|t| t.split_once('='))
        .all(|(key, wanted)| {
            let have = match key {
                "spec.nodeName" => slice["spec"]["nodeName"].as_str(),
                "spec.driver" => slice["spec"]["driver"].as_str(),
                _ => None,
            };
            have == Some(wanted)
        })
}

impl State {
    /// A new resourceVersion, with the event that made it.
    fn record(&mut self, kind: &'static str, object: &Value) -> u64 {
        self.next_version += 1;
        let version = self.next_version;
        let mut object = object.clone();
        object["metadata"]["resourceVersion"] = json!(version.to_string());
        self.events.push((version, kind, object));
        version
    }

    /// Removes every slice, each a DELETED event.
    pub fn delete_all_slices(&mut self) {
        for (_, slice) in std::mem::take(&mut self.slices) {
            self.record("DELETED", &slice);
        }
    }

    /// Puts a slice in as another client would (ADDED or MODIFIED).
    pub fn put_slice(&mut self, mut slice: Value) {
        let name = slice["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let kind = if self.slices.contains_key(&name) {
            "MODIFIED"
        } else {
            "ADDED"
        };
        if slice["metadata"]["uid"].is_null() {
            slice["metadata"]["uid"] = json!(format!("uid-{name}"));
        }
        let version = self.record(kind, &slice);
        slice["metadata"]["resourceVersion"] = json!(version.to_string());
        self.slices.insert(name, slice);
    }

    /// Another node's slice made and deleted: the resourceVersion moves on
    /// with nothing a watch of our node's slices is sent.
    pub fn other_node_churn(&mut self) {
        let other = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-2-gpu.nvidia.com-x", "uid": "uid-other"},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-2",
                     "pool": {"name": "node-2", "generation": 1, "resourceSliceCount": 1}}});
        self.record("ADDED", &other);
        self.record("DELETED", &other);
    }

    /// Forgets the event history (as etcd compaction does) and ends every
    /// open watch: a watcher that resumes from before now gets 410 Gone.
    pub fn compact_and_close_watches(&mut self) {
        self.watch_epoch += 1;
        self.compacted_to = self.next_version;
        self.events.clear();
    }
}

fn create_slice(state: &mut State, body: &[u8]) -> (u16, Value) {
    let mut slice: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    crate::fake_gate::drop_disabled(state, &mut slice, None);
    let prefix = slice["metadata"]["generateName"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let name = format!("{prefix}{:05x}", state.next_version + 1);
    state.writes.push(format!("POST {name}"));
    if let Err(why) = check_slice(&slice, &name, &state.node) {
        state.violations.push(format!("create {name}: {why}"));
        return invalid(&why);
    }
    slice["metadata"]["name"] = json!(name);
    slice["metadata"]["uid"] = json!(format!("uid-{}", state.next_version + 1));
    let version = state.record("ADDED", &slice);
    slice["metadata"]["resourceVersion"] = json!(version.to_string());
    state.slices.insert(name, slice.clone());
    (201, slice)
}

fn replace_slice(state: &mut State, name: &str, body: &[u8]) -> (u16, Value) {
    let mut slice: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    state.writes.push(format!("PUT {name}"));
    let Some(old) = state.slices.get(name).cloned() else {
        return not_found(name);
    };
    crate::fake_gate::drop_disabled(state, &mut slice, Some(&old));
    if slice["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"] {
        return (
            409,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409, "message": "resourceVersion changed"}),
        );
    }
    if let Err(why) = check_slice(&slice, name, &state.node) {
        state.violations.push(format!("update {name}: {why}"));
        return invalid(&why);
    }
    slice["metadata"]["uid"] = old["metadata"]["uid"].clone();
    let version = state.record("MODIFIED", &slice);
    slice["metadata"]["resourceVersion"] = json!(version.to_string());
    state.slices.insert(name.to_owned(), slice.clone());
    (200, slice)
}

fn delete_slice(state: &mut State, name: &str, body: &[u8]) -> (u16, Value) {
    let params: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    state.writes.push(format!("DELETE {name}"));
    let Some(old) = state.slices.get(name) else {
        return not_found(name);
    };
    let pre = &params["preconditions"];
    for key in ["uid", "resourceVersion"] {
        if !pre[key].is_null() && pre[key] != old["metadata"][key] {
            return (
                409,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409, "message": "precondition failed"}),
            );
        }
    }
    let old = state.slices.remove(name).unwrap_or(Value::Null);
    state.record("DELETED", &old);
    (200, old)
}

fn not_found(what: &str) -> (u16, Value) {
    (
        404,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": format!("{what} not found")}),
    )
}

pub fn invalid(why: &str) -> (u16, Value) {
    (
        422,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Invalid", "code": 422, "message": why}),
    )
}
