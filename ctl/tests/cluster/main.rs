//! `gpuslicectl claims --cluster` at its real boundary: the built binary,
//! a kubeconfig, and a local API server ([`server`]) listing
//! resource.k8s.io/v1 ResourceClaims in two pages, each claim checked
//! against the vendored Kubernetes schemas ([`schema`]) first. The entries'
//! `data` is DeviceUsage v1alpha1 as gpuslice-dra-plugin writes it. Times
//! are relative to now. The block of docs/activity.md marked as run here
//! is run against the same server and its shown output compared.

mod schema;
mod server;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Output};

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::server::ListServer;

const GIB: u64 = 1 << 30;

/// Ages in the middle of what the table shows ("3d", "1d2h", "1d5h": spans
/// to the hour), so a slow run prints the same.
const TRAIN_IDLE: i64 = 3 * 86_400 + 1_800;
const NOTEBOOK_IDLE: i64 = 86_400 + 2 * 3_600 + 1_800;
const INFER_OVER: i64 = 86_400 + 5 * 3_600 + 1_800;

/// `seconds` ago, to the second, as the plugin writes times.
fn ago(seconds: i64) -> String {
    Timestamp::from_second(Timestamp::now().as_second() - seconds)
        .expect("a time")
        .to_string()
}

fn condition(type_: &str, status: &str, reason: &str, since: i64) -> Value {
    json!({ "type": type_, "status": status, "reason": reason,
            "lastTransitionTime": ago(since), "message": format!("{type_} {status}") })
}

fn data(node: &str, sharing: &str, extra: Value) -> Value {
    let mut data = json!({ "apiVersion": "gpuslice.dev/v1alpha1", "kind": "DeviceUsage",
                           "node": node, "sharing": sharing, "sampledAt": ago(5),
                           "windowSeconds": 300 });
    if let (Some(data), Value::Object(extra)) = (data.as_object_mut(), extra) {
        data.extend(extra);
    }
    data
}

/// A claim allocated on `node`: `device` of `driver` with its status entry.
fn claim(ns: &str, name: &str, node: &str, driver: &str, device: &str, entry: Value) -> Value {
    let mut entry = entry;
    entry["driver"] = json!(driver);
    entry["pool"] = json!(node);
    entry["device"] = json!(device);
    let claim = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": { "namespace": ns, "name": name, "uid": format!("uid-{ns}-{name}"),
                      "resourceVersion": "42", "creationTimestamp": ago(86_400) },
        "spec": { "devices": { "requests": [
            { "name": "gpu", "exactly": { "deviceClassName": "gpu.nvidia.com" } } ] } },
        "status": {
            "allocation": {
                "devices": { "results": [ { "request": "gpu", "driver": driver, "pool": node,
                                            "device": device } ] },
                "nodeSelector": { "nodeSelectorTerms": [ { "matchFields": [
                    { "key": "metadata.name", "operator": "In", "values": [node] } ] } ] } },
            "devices": [entry] }
    });
    assert_eq!(schema::errors(&claim), Vec::<String>::new(), "{ns}/{name}");
    claim
}

fn ours(
    ns: &str,
    name: &str,
    node: &str,
    device: &str,
    conditions: Vec<Value>,
    data: Value,
) -> Value {
    let entry = json!({ "conditions": conditions, "data": data });
    claim(ns, name, node, "gpu.nvidia.com", device, entry)
}

fn ready() -> Value {
    condition("Ready", "True", "Prepared", 86_000)
}

/// Two pages: an idle whole GPU, a NIC of another driver, an MPS share over
/// its memory share; an idle MIG slice never active, a time-slice within
/// its share, an entry of a newer data version, a claim not allocated yet.
fn pages() -> Vec<Vec<Value>> {
    let idle = |since| condition("Idle", "True", "NoGpuActivity", since);
    let active = condition("Idle", "False", "Active", 3_600);
    let first = vec![
        ours(
            "ml",
            "train",
            "node-1",
            "gpu-0",
            vec![ready(), idle(TRAIN_IDLE + 600)],
            data(
                "node-1",
                "exclusive",
                json!({
            "lastActive": ago(TRAIN_IDLE),
            "memory": { "usedBytes": 0, "peakBytes": 0, "totalBytes": 80 * GIB },
            "advice": { "form": "giveBack", "observedSeconds": 86_400, "reason": "no activity" } }),
            ),
        ),
        claim(
            "net",
            "nic",
            "node-1",
            "dra.net",
            "eth1",
            json!({ "conditions": [ready()] }),
        ),
        ours(
            "ml",
            "infer",
            "node-1",
            "gpu-1",
            vec![
                ready(),
                active.clone(),
                condition("OverShare", "True", "OverMemoryShare", INFER_OVER),
            ],
            data(
                "node-1",
                "mps",
                json!({
                "lastActive": ago(60),
                "memory": { "usedBytes": 22 * GIB, "shareBytes": 20 * GIB, "totalBytes": 80 * GIB },
                "share": { "threadPercentage": 50 },
                "advice": { "form": "mig", "migProfile": "3g.40gb", "observedSeconds": 7_200,
                            "reason": "fits" } }),
            ),
        ),
    ];
    let mut pending = claim(
        "ml",
        "pending",
        "node-2",
        "gpu.nvidia.com",
        "gpu-3",
        json!({}),
    );
    if let Some(object) = pending.as_object_mut() {
        object.remove("status");
    }
    let second = vec![
        ours(
            "dev",
            "notebook",
            "node-2",
            "gpu-0-mig-1",
            vec![ready(), idle(NOTEBOOK_IDLE)],
            data(
                "node-2",
                "mig",
                json!({ "memory": { "usedBytes": 512 << 20, "totalBytes": 10 * GIB } }),
            ),
        ),
        ours(
            "ml",
            "batch",
            "node-2",
            "gpu-1",
            vec![
                ready(),
                active,
                condition("OverShare", "False", "WithinShare", 3_600),
            ],
            data(
                "node-2",
                "timeslicing",
                json!({ "memory": { "usedBytes": 4 * GIB, "shareBytes": 40 * GIB } }),
            ),
        ),
        ours(
            "ml",
            "newer",
            "node-3",
            "gpu-0",
            vec![ready()],
            json!({ "apiVersion": "gpuslice.dev/v1alpha2", "kind": "DeviceUsage", "node": "node-3" }),
        ),
        pending,
    ];
    vec![first, second]
}

/// A kubeconfig with the context `test` at a server, in a folder of its own.
struct Kubeconfig {
    /// Its path, for `--kubeconfig`.
    path: String,
    /// Holds the folder while the kubeconfig is used.
    _dir: tempfile::TempDir,
}

impl Kubeconfig {
    /// The kubeconfig of the API server at `server`.
    fn of(server: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {server}\n\
             users:\n- name: viewer\n  user:\n    token: not-checked\ncontexts:\n- name: test\n  \
             context:\n    cluster: fake\n    user: viewer\ncurrent-context: test\n"
        );
        gpuslice_cdi::atomic::write_atomic(dir.path(), "kubeconfig", text.as_bytes(), 0o600)
            .expect("write the kubeconfig");
        let path = dir.path().join("kubeconfig");
        let path = path.to_str().expect("utf-8 path").to_owned();
        Self { path, _dir: dir }
    }

    /// `gpuslicectl claims --cluster ARGS --kubeconfig` this one.
    fn claims_cluster(&self, args: &[&str]) -> Output {
        let mut words = vec!["claims", "--cluster"];
        words.extend(args);
        words.extend(["--kubeconfig", &self.path]);
        gpuslicectl(&words)
    }
}

fn gpuslicectl(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpuslicectl"));
    for proxy in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "ALL_PROXY",
        "all_proxy",
    ] {
        command.env_remove(proxy);
    }
    command.args(args).output().expect("run gpuslicectl")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `got` equals `want` line by line, cells split on two spaces or more.
fn assert_table(got: &str, want: &[&[&str]]) {
    let rows: Vec<Vec<&str>> = got
        .lines()
        .map(|line| {
            line.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), want.len(), "{got}");
    for (row, want) in rows.iter().zip(want) {
        assert_eq!(row.len(), want.len(), "{got}");
        for (cell, want) in row.iter().zip(*want) {
            assert_eq!(cell, want, "in\n{got}");
        }
    }
}

const SKIPPED: &str = "skipped 1 entry of gpu.nvidia.com: ml/newer gpu-0: data is \
                       gpuslice.dev/v1alpha2 DeviceUsage, unknown to this gpuslicectl";

#[test]
fn idle_lists_the_idle_devices_of_every_node_over_both_pages() {
    let server = ListServer::start(pages());
    let kubeconfig = Kubeconfig::of(&server.url);
    let out = kubeconfig.claims_cluster(&["--idle", "1s"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let (table, footer) = stdout.rsplit_once("skipped").expect("a footer");
    assert_table(
        table,
        &[
            &[
                "NAMESPACE/NAME",
                "NODE",
                "DEVICE",
                "SHARING",
                "IDLE FOR",
                "MEMORY",
                "ADVICE",
            ],
            &[
                "dev/notebook",
                "node-2",
                "gpu-0-mig-1",
                "mig",
                "1d2h",
                "512 MiB / 10.0 GiB",
                "-",
            ],
            &[
                "ml/train",
                "node-1",
                "gpu-0",
                "exclusive",
                "3d",
                "0 / 80.0 GiB",
                "give back",
            ],
        ],
    );
    assert_eq!(format!("skipped{footer}"), format!("{SKIPPED}\n"));
    let queries = server.queries();
    assert_eq!(queries.len(), 2, "{queries:?}");
    assert!(
        queries[0].split('&').any(|kv| kv == "limit=500"),
        "{queries:?}"
    );
    assert!(!queries[0].contains("continue="), "{queries:?}");
    let second: Vec<&str> = queries[1].split('&').collect();
    assert!(
        second.contains(&"limit=500") && second.contains(&"continue=page-1"),
        "{queries:?}"
    );
}

#[test]
fn overshare_lists_the_devices_over_their_share_with_used_of_share() {
    let server = ListServer::start(pages());
    let kubeconfig = Kubeconfig::of(&server.url);
    let out = kubeconfig.claims_cluster(&["--overshare", "--context", "test"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let (table, _) = stdout.rsplit_once("skipped").expect("a footer");
    assert_table(
        table,
        &[
            &[
                "NAMESPACE/NAME",
                "NODE",
                "DEVICE",
                "SHARING",
                "IDLE FOR",
                "USED / SHARE",
                "OVER FOR",
                "ADVICE",
            ],
            &[
                "ml/infer",
                "node-1",
                "gpu-1",
                "mps",
                "active",
                "22.0 GiB / 20.0 GiB",
                "1d5h",
                "mig 3g.40gb",
            ],
        ],
    );
    let json = kubeconfig.claims_cluster(&["--idle", "90m", "--output", "json"]);
    assert_eq!(json.status.code(), Some(0), "{}", text(&json.stderr));
    let doc: Value = serde_json::from_slice(&json.stdout).expect("one JSON document");
    assert_eq!(doc["claims"], 7);
    let names: Vec<&str> = doc["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| d["name"].as_str())
        .collect();
    assert_eq!(names, ["notebook", "train"]);
    assert_eq!(doc["skipped"][0]["claim"], "ml/newer");
}

#[test]
fn an_unreachable_api_server_exits_2_naming_the_kubeconfig_and_context() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let kubeconfig = Kubeconfig::of(&format!("http://127.0.0.1:{port}"));
    let config = kubeconfig.path.as_str();
    let out = kubeconfig.claims_cluster(&["--idle", "2h"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(text(&out.stdout), "");
    let head = format!(
        "gpuslicectl claims --cluster: cannot list ResourceClaims from the API server \
         http://127.0.0.1:{port}/ (kubeconfig {config}, current context test): "
    );
    assert!(stderr.starts_with(&head), "{stderr}");
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(
        stderr.ends_with(
            "; check that the server is up and reachable from here and that this user may list \
             resourceclaims, or pick another with --kubeconfig PATH and --context NAME\n"
        ),
        "{stderr}"
    );
}

#[test]
fn a_refusal_of_the_api_server_exits_2_with_its_message() {
    let message = "resourceclaims.resource.k8s.io is forbidden: User \"viewer\" cannot list \
                   resource \"resourceclaims\" in API group \"resource.k8s.io\" at the cluster scope";
    let server = ListServer::refusing(403, message);
    let kubeconfig = Kubeconfig::of(&server.url);
    let config = kubeconfig.path.as_str();
    let out = kubeconfig.claims_cluster(&["--context", "test"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(text(&out.stdout), "");
    let head = format!(
        "gpuslicectl claims --cluster: cannot list ResourceClaims from the API server {}/ \
         (kubeconfig {config}, context test): ",
        server.url
    );
    assert!(stderr.starts_with(&head), "{stderr}");
    assert!(
        stderr[head.len()..].starts_with(&format!("it answered 403 Forbidden: {message}; check")),
        "{stderr}"
    );
    assert_eq!(server.queries().len(), 1);
}

#[test]
fn socket_does_not_apply_to_cluster() {
    for words in [
        &["--socket", "/run/x.sock", "claims", "--cluster"][..],
        &["claims", "--cluster", "--socket", "/run/x.sock"],
    ] {
        let out = gpuslicectl(words);
        assert_eq!(out.status.code(), Some(2), "{words:?}");
        assert_eq!(
            text(&out.stderr),
            "gpuslicectl claims --cluster: --socket does not apply: --cluster reads the API \
             server (--kubeconfig, --context), not gpusliced; leave --socket out\n"
        );
    }
}

/// The doc and the block in it that this test runs.
const DOC: &str = "docs/activity.md";
const MARKER: &str = "<!-- run by ctl/tests/cluster/main.rs -->";

/// The console block after [`MARKER`] in [`DOC`]: each command with the
/// output it shows.
fn shown() -> Vec<(String, String)> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(DOC);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {DOC}: {e}"));
    let (_, after) = text
        .split_once(MARKER)
        .unwrap_or_else(|| panic!("{DOC} has no {MARKER}"));
    let block = after
        .trim_start()
        .strip_prefix("```console\n")
        .and_then(|b| b.split_once("```").map(|(b, _)| b))
        .unwrap_or_else(|| panic!("no console block after the marker in {DOC}"));
    let mut runs: Vec<(String, String)> = Vec::new();
    for line in block.lines() {
        match (line.strip_prefix("$ "), runs.last_mut()) {
            (Some(command), _) => runs.push((command.to_owned(), String::new())),
            (None, Some((_, output))) => output.push_str(&format!("{line}\n")),
            (None, None) => panic!("{DOC}: output before a command: {line}"),
        }
    }
    runs
}

#[test]
fn the_docs_commands_print_what_the_doc_shows() {
    let server = ListServer::start(pages());
    let kubeconfig = Kubeconfig::of(&server.url);
    let config = kubeconfig.path.as_str();
    let runs = shown();
    assert!(runs.len() >= 2, "{runs:?}");
    for (command, want) in runs {
        let mut words = command.split_whitespace();
        assert_eq!(words.next(), Some("gpuslicectl"), "{command}");
        let mut args: Vec<&str> = words.collect();
        args.extend(["--kubeconfig", config]);
        let out = gpuslicectl(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{command}: {}",
            text(&out.stderr)
        );
        assert_eq!(text(&out.stdout), want, "{DOC}: {command}");
    }
}
