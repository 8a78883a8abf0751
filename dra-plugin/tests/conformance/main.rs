//! Conformance of gpuslice-dra-plugin with the kubelet's published protos.
//!
//! A Python client generated at test time from the kubelet protos vendored in
//! `third_party/kubelet/` (grpcio-tools) plays the kubelet over the shim's real unix sockets;
//! the shim talks to a real gpusliced (simulated backend, 130 GPUs, so the
//! pool needs two slices; the stand-in MPS control program) and to a fake API
//! server that serves the claims and checks every ResourceSlice write against
//! the resource.k8s.io/v1 rules and the ResourceSlice schema of Kubernetes
//! 1.34-1.37 ([`k8s_schema`]). The shim runs with `consumable_capacity`, so
//! whole GPUs are published shareable by memory, and two claims sharing one
//! GPU by memory go through with their consumed memory and share ids.
//! The kubelet's health watch (v1, v1alpha1) sees an XID injected into
//! gpusliced, and its recovery. The shim runs with `resync_seconds = 3600`,
//! so every republish the tests wait for comes from a watch ([`republish`]:
//! health, deletions, foreign edits, a watch that expired, gpusliced
//! restarting), never from the timer. [`advertise`]: the MIG form the
//! plugin probes the API server for, with the gate on, off, and switched off
//! under it, and through transient errors; [`probe`]: the one dry-run probe
//! against the fake API server's fault mode ([`fake_faults`]). [`claim_status`]: the claim status writer's apply and probe
//! against the server's status rules ([`claim_status_rules`]);
//! [`status_chain`]: the same through the real plugin and gpusliced, read
//! back by `gpuslicectl claims --cluster`. [`channels`]: the second driver,
//! `compute-domain.nvidia.com`, on a simulated GB200 node in an NVLink
//! clique (its registration, its 2048 IMEX channels in 16 slices, a channel
//! claim prepared and unprepared) and absent from a node without a clique.

#[path = "../admission/runner/mod.rs"]
#[allow(
    dead_code,
    unused_imports,
    reason = "the evaluator's runner; the fake API server uses part of it"
)]
mod admission;
mod advertise;
#[path = "../../../tests/e2e/binaries.rs"]
mod binaries;
mod channels;
mod claim_status;
mod claim_status_rules;
mod compute_domains;
mod compute_domains_admission;
mod compute_domains_cluster;
mod extended;
mod extended_claim;
mod fake_apiserver;
mod fake_compute_domains;
mod fake_compute_domains_access;
mod fake_compute_domains_apply;
mod fake_compute_domains_watch;
mod fake_faults;
mod fake_gate;
mod fake_watch;
mod gpusliced;
mod http;
mod k8s_schema;
mod peers;
mod probe;
mod publish_faults;
mod republish;
mod slice_rules;
mod status_chain;
mod status_rate;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use fake_apiserver::{FakeApiServer, State};
use gpusliced::Daemon;
use peers::{Kubelet, Shim};
use serde_json::{Value, json};
use slice_rules::check_slice;

/// A bound on what the shim must do by itself (publish, republish, exit).
pub const BOUND: Duration = Duration::from_secs(60);
pub const NODE: &str = "node-1";
pub const NODE_UID: &str = "6a1c1f3e-0000-4000-8000-000000000001";
const GPUS: usize = 130;

/// A test's temporary folder with the Python kubelet stand-in generated in
/// it; None (the test skips, saying why) where it cannot be.
pub(crate) fn kubelet_in_temp_dir() -> Option<(tempfile::TempDir, Kubelet)> {
    let dir = tempfile::tempdir().expect("temp dir");
    let kubelet = Kubelet::generate(dir.path())?;
    Some((dir, kubelet))
}

/// This node's API server, its gpusliced on `gpus` simulated GPUs and the
/// shim, each process in its own folder of `dir`.
pub(crate) fn start_node(dir: &Path, gpus: usize) -> (FakeApiServer, Daemon, Shim) {
    let api = FakeApiServer::start(NODE, NODE_UID);
    let daemon = Daemon::start(&dir.join("daemon"), gpus);
    let shim = Shim::start(&dir.join("shim"), &api.url, &daemon.socket);
    (api, daemon, shim)
}

pub fn uid(n: u32) -> String {
    format!("3f0b7d6e-4c1a-4e2b-9a8d-{n:012x}")
}

pub fn claim(name: &str, uid: &str, devices: &[&str], config: &Value) -> Value {
    let results: Vec<Value> = devices
        .iter()
        .map(|d| json!({"request": "gpu", "driver": "gpu.nvidia.com", "pool": NODE, "device": d}))
        .collect();
    let allocation = if devices.is_empty() {
        Value::Null
    } else {
        json!({"devices": {"results": results, "config": config},
               "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                   {"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}})
    };
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
           "metadata": {"namespace": "ml", "name": name, "uid": uid},
           "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
           "status": {"allocation": allocation}})
}

/// A claim allocated a share of `device` (DRAConsumableCapacity).
fn shared_claim(
    name: &str,
    uid: &str,
    device: &str,
    memory: &str,
    share: &str,
    config: &Value,
) -> Value {
    let mut claim = claim(name, uid, &[device], config);
    let result = &mut claim["status"]["allocation"]["devices"]["results"][0];
    result["consumedCapacity"] = json!({"memory": memory});
    result["shareID"] = json!(share);
    claim
}

pub fn kubelet_claim(name: &str, uid: &str) -> Value {
    json!({"namespace": "ml", "name": name, "uid": uid})
}

/// The published pool: one generation, the right count, every device once.
fn check_pool(state: &State) -> (i64, Vec<String>) {
    let slices: Vec<&Value> = state.slices.values().collect();
    assert!(
        state.violations.is_empty(),
        "refused writes: {:?}",
        state.violations
    );
    let generations: BTreeSet<i64> = slices
        .iter()
        .map(|s| s["spec"]["pool"]["generation"].as_i64().expect("gen"))
        .collect();
    assert_eq!(generations.len(), 1, "one generation: {generations:?}");
    for slice in &slices {
        let name = slice["metadata"]["name"].as_str().expect("name");
        check_slice(slice, name, &(NODE.to_owned(), NODE_UID.to_owned())).expect("slice shape");
        assert_eq!(
            slice["spec"]["pool"]["resourceSliceCount"],
            json!(slices.len())
        );
        assert_eq!(slice["spec"]["pool"]["name"], NODE);
    }
    let mut names: Vec<String> = slices
        .iter()
        .flat_map(|s| s["spec"]["devices"].as_array().cloned().unwrap_or_default())
        .map(|d| d["name"].as_str().expect("device name").to_owned())
        .collect();
    names.sort();
    (generations.into_iter().next().unwrap_or_default(), names)
}

/// The whole pool is there, at one generation of at least `min_generation`:
/// every device once, as many slices as each says.
fn published(state: &State, min_generation: i64) -> bool {
    let generations: BTreeSet<Option<i64>> = (state.slices.values())
        .map(|s| s["spec"]["pool"]["generation"].as_i64())
        .collect();
    let [Some(generation)] = generations.into_iter().collect::<Vec<_>>()[..] else {
        return false;
    };
    generation >= min_generation
        && state
            .slices
            .values()
            .all(|s| s["spec"]["pool"]["resourceSliceCount"] == json!(state.slices.len()))
        && state
            .slices
            .values()
            .map(|s| s["spec"]["devices"].as_array().map_or(0, Vec::len))
            .sum::<usize>()
            == GPUS
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn kubelet_conformance_against_real_gpusliced() {
    let Some((dir, kubelet)) = kubelet_in_temp_dir() else {
        return;
    };
    let (api, daemon, mut shim) = start_node(dir.path(), GPUS);

    // Registration: what the kubelet's plugin watcher reads.
    let info = kubelet.call(&shim.registration_socket(), "getinfo", &json!({}));
    assert_eq!(info["type"], "DRAPlugin");
    assert_eq!(info["name"], "gpu.nvidia.com");
    assert_eq!(info["endpoint"], json!(shim.dra_socket().to_string_lossy()));
    assert!(shim.dra_socket().is_absolute());
    assert_eq!(
        info["supported_versions"],
        json!(["v1.DRAPlugin", "v1beta1.DRAPlugin"])
    );
    kubelet.call(
        &shim.registration_socket(),
        "notify",
        &json!({"registered": true}),
    );

    // ResourceSlices: 130 devices need two slices, each within the limits.
    assert!(
        api.wait_for(BOUND, |s| published(s, 1) && s.slices.len() == 2),
        "no pool published; writes {:?}; devices per slice {:?}; violations {:?}; shim log:\n{}",
        api.state().writes,
        api.state()
            .slices
            .values()
            .map(|s| s["spec"]["devices"].as_array().map_or(0, Vec::len))
            .collect::<Vec<_>>(),
        api.state().violations,
        shim.log()
    );
    let (generation, names) = check_pool(&api.state());
    let want: BTreeSet<String> = (0..GPUS).map(|i| format!("gpu-{i}")).collect();
    assert_eq!(names.iter().cloned().collect::<BTreeSet<_>>(), want);
    assert_eq!(names.len(), GPUS, "each device once");
    {
        let state = api.state();
        for (calls, selectors) in [
            ("lists", &state.list_selectors),
            ("watches", &state.watch_selectors),
        ] {
            assert!(
                selectors.iter().all(|s| s.contains("spec.nodeName=node-1")
                    && s.contains("spec.driver=gpu.nvidia.com")),
                "{calls} use the node authorizer's field selector: {selectors:?}"
            );
        }
        let device = state
            .slices
            .values()
            .flat_map(|s| s["spec"]["devices"].as_array().cloned().unwrap_or_default())
            .find(|d| d["name"] == "gpu-0")
            .expect("gpu-0");
        assert_eq!(device["attributes"]["type"]["string"], "gpu");
        assert!(
            device["attributes"]["productName"]["string"].is_string(),
            "{device}"
        );
        // The standard topology attributes, as the simulated node places
        // GPU 0 (gpu::sim::topology), kinds as the scheduler reads them.
        let standard = |name: &str| &device["attributes"][format!("resource.kubernetes.io/{name}")];
        assert_eq!(
            standard("pcieRoot"),
            &json!({"string": "pci0000:00"}),
            "{device}"
        );
        assert_eq!(standard("numaNode"), &json!({"int": 0}), "{device}");
        assert!(
            device["capacity"]["memory"]["value"].is_string(),
            "{device}"
        );
        assert_eq!(device["allowMultipleAllocations"], true, "{device}");
        let policy = &device["capacity"]["memory"]["requestPolicy"];
        assert!(policy["default"].is_string(), "{device}");
        assert_eq!(policy["validRange"]["min"], "1Mi", "{device}");
        assert_eq!(policy["validRange"]["step"], "1Mi", "{device}");
    }

    // Prepare (v1), with a class config: CDI ids from gpusliced.
    let class_config = json!([{"source": "FromClass", "requests": [],
        "opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig"}}}]);
    let (a, b, c, d, e, f) = (uid(1), uid(2), uid(3), uid(4), uid(5), uid(6));
    api.put_claim(claim("train", &a, &["gpu-3"], &class_config));
    let first = kubelet.call(
        &shim.dra_socket(),
        "prepare-v1",
        &json!({"claims": [kubelet_claim("train", &a)]}),
    );
    let entry = &first["claims"][&a];
    assert_eq!(entry["error"], "", "{first}");
    assert_eq!(entry["devices"][0]["device_name"], "gpu-3");
    assert_eq!(entry["devices"][0]["pool_name"], NODE);
    assert_eq!(entry["devices"][0]["request_names"], json!(["gpu"]));
    let ids = entry["devices"][0]["cdi_device_ids"].clone();
    assert!(ids[0].as_str().is_some_and(|id| id.contains(&a)), "{ids}");

    // Idempotent: the same prepare returns the same CDI ids.
    let again = kubelet.call(
        &shim.dra_socket(),
        "prepare-v1",
        &json!({"claims": [kubelet_claim("train", &a)]}),
    );
    assert_eq!(again["claims"][&a]["devices"][0]["cdi_device_ids"], ids);

    // Claim status: the plugin's identity (the fake's default) has no grant
    // for our driver, so the probe is refused and `gpuslicectl status` says
    // why and where to look.
    let said = daemon.claim_status_until(BOUND, |l| l.starts_with("claim status: off: "));
    assert!(
        said.as_ref().is_ok_and(|l| l
            .starts_with("claim status: off: the API server refused the write")
            && l.ends_with("see docs/claim-status.md#access")),
        "{said:?}; shim log:\n{}",
        shim.log()
    );

    // v1beta1, one call with several claims: one entry each, errors per claim.
    api.put_claim(claim("ok", &b, &["gpu-4"], &json!([])));
    api.put_claim(claim("replaced", &uid(99), &["gpu-5"], &json!([])));
    api.put_claim(claim("pending", &d, &[], &json!([])));
    api.put_claim(claim("clash", &e, &["gpu-3"], &json!([])));
    let bad_config = json!([{"source": "FromClaim", "requests": ["gpu"],
        "opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "Nope"}}}]);
    api.put_claim(claim("badconfig", &f, &["gpu-6"], &bad_config));
    let batch = kubelet.call(&shim.dra_socket(), "prepare-v1beta1", &json!({"claims": [
        kubelet_claim("ok", &b), kubelet_claim("replaced", &c), kubelet_claim("pending", &d),
        kubelet_claim("clash", &e), kubelet_claim("badconfig", &f), kubelet_claim("missing", &uid(7)),
    ]}));
    let answers = batch["claims"].as_object().expect("claims map");
    assert_eq!(answers.len(), 6, "{batch}");
    assert_eq!(answers[&b]["error"], "", "{batch}");
    assert_eq!(answers[&b]["devices"][0]["device_name"], "gpu-4");
    let error = |u: &str| answers[u]["error"].as_str().expect("error").to_owned();
    assert!(error(&c).contains("re-created"), "{}", error(&c));
    assert!(error(&d).contains("not allocated"), "{}", error(&d));
    assert!(error(&e).contains("FailedPrecondition"), "{}", error(&e));
    assert!(error(&f).contains("InvalidArgument"), "{}", error(&f));
    assert!(
        error(&uid(7)).contains("cannot read ResourceClaim ml/missing"),
        "{}",
        error(&uid(7))
    );
    for failed in [&c, &d, &e, &f] {
        assert_eq!(
            answers[failed.as_str()]["devices"],
            json!([]),
            "no devices with an error"
        );
    }

    // DRAConsumableCapacity: two claims share gpu-7 by memory, under MPS from
    // the class; each consumed amount becomes its MPS memory limit, and each
    // share id comes back (v1 only: v1beta1 has no field for it).
    let mps_class = json!([{"source": "FromClass", "requests": [],
        "opaque": {"driver": "gpu.nvidia.com", "parameters": {"apiVersion": "resource.nvidia.com/v1beta1",
            "kind": "GpuConfig", "sharing": {"strategy": "MPS"}}}}]);
    let (s1, s2) = (uid(11), uid(12));
    let shares = [
        "0b6f2c4e-7a1d-4e8b-9c3f-5d2a1b0e9f01",
        "0b6f2c4e-7a1d-4e8b-9c3f-5d2a1b0e9f02",
    ];
    api.put_claim(shared_claim(
        "half-a", &s1, "gpu-7", "10Gi", shares[0], &mps_class,
    ));
    api.put_claim(shared_claim(
        "half-b", &s2, "gpu-7", "20Gi", shares[1], &mps_class,
    ));
    let both = kubelet.call(
        &shim.dra_socket(),
        "prepare-v1",
        &json!({"claims": [kubelet_claim("half-a", &s1), kubelet_claim("half-b", &s2)]}),
    );
    for (u, share) in [(&s1, shares[0]), (&s2, shares[1])] {
        let entry = &both["claims"][u.as_str()];
        assert_eq!(entry["error"], "", "{both}");
        assert_eq!(entry["devices"][0]["share_id"], share, "{both}");
    }
    for (u, mib) in [(&s1, "10240M"), (&s2, "20480M")] {
        let spec = peers::read(
            &daemon
                .cdi_dir
                .join(format!("k8s.gpuslice.dev-claim_{u}.json")),
        );
        assert!(
            spec.contains("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-") && spec.contains(mib),
            "{u}: {spec}"
        );
    }
    let beta = kubelet.call(
        &shim.dra_socket(),
        "prepare-v1beta1",
        &json!({"claims": [kubelet_claim("half-a", &s1)]}),
    );
    assert_eq!(beta["claims"][&s1]["error"], "", "{beta}");
    assert!(
        beta["claims"][&s1]["devices"][0].get("share_id").is_none(),
        "{beta}"
    );
    let gone = kubelet.call(
        &shim.dra_socket(),
        "unprepare-v1",
        &json!({"claims": [kubelet_claim("half-a", &s1), kubelet_claim("half-b", &s2)]}),
    );
    for u in [&s1, &s2] {
        assert_eq!(gone["claims"][u.as_str()]["error"], "", "{gone}");
    }

    // Unprepare twice, and an unknown claim: all succeed, on both versions.
    for op in ["unprepare-v1", "unprepare-v1", "unprepare-v1beta1"] {
        let reply = kubelet.call(&shim.dra_socket(), op, &json!({"claims": [kubelet_claim("train", &a), kubelet_claim("ok", &b), kubelet_claim("never", &uid(8))]}));
        for u in [&a, &b, &uid(8)] {
            assert_eq!(reply["claims"][u.as_str()]["error"], "", "{op}: {reply}");
        }
    }
    // gpu-3 is free again: the clashing claim now prepares.
    let retried = kubelet.call(
        &shim.dra_socket(),
        "prepare-v1",
        &json!({"claims": [kubelet_claim("clash", &e)]}),
    );
    assert_eq!(retried["claims"][&e]["error"], "", "{retried}");

    // The kubelet deletes the slices when it restarts: they come back, newer.
    api.delete_all_slices();
    assert!(
        api.wait_for(BOUND, |s| published(s, generation + 1)),
        "no pool republished; shim log:\n{}",
        shim.log()
    );
    let (republished, names) = check_pool(&api.state());
    assert!(republished > generation);
    assert_eq!(names.len(), GPUS);

    // Device health: the kubelet's watch streams gpusliced's health.
    let v1 = kubelet.watch_health(&shim.dra_socket(), "v1");
    let first = v1.until(BOUND, |_| true);
    let devices = first["devices"].as_array().expect("devices");
    assert_eq!(devices.len(), GPUS, "the complete list");
    assert!(
        devices
            .iter()
            .all(|d| d["health"] == "HEALTHY" && d["device"]["pool_name"] == NODE),
        "{first}"
    );
    assert_eq!(devices[0]["health_check_timeout_seconds"], "3", "{first}");
    let gpu7 = |m: &Value| -> Value {
        let list = m["devices"].as_array().cloned().unwrap_or_default();
        list.into_iter()
            .find(|d| d["device"]["device_name"] == "gpu-7")
            .unwrap_or_default()
    };
    daemon.inject_health("gpu=7 xid=79");
    let sick = v1.until(BOUND, |m| gpu7(m)["health"] == "UNHEALTHY");
    let message = gpu7(&sick)["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.starts_with("XID 79 (GPU has fallen off the bus) since "),
        "{message}"
    );
    let others = sick["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .filter(|d| d["health"] == "HEALTHY")
        .count();
    assert_eq!(others, GPUS - 1, "{sick}");
    let v1alpha1 = kubelet.watch_health(&shim.dra_socket(), "v1alpha1");
    let alpha = v1alpha1.until(BOUND, |_| true);
    assert_eq!(gpu7(&alpha)["health"], "UNHEALTHY", "{alpha}");
    assert_eq!(gpu7(&alpha)["message"], message.as_str());
    drop(v1alpha1);
    daemon.inject_health("gpu=7 recovered");
    v1.until(BOUND, |m| gpu7(m)["health"] == "HEALTHY");

    // SIGTERM with a health watch open: exit 0, both sockets removed.
    shim.terminate();
    let status = shim.wait_exit(BOUND);
    assert!(status.success(), "exit {status:?}; log:\n{}", shim.log());
    assert!(
        !shim.registration_socket().exists(),
        "registration socket left behind"
    );
    assert!(!shim.dra_socket().exists(), "DRA socket left behind");
    drop(v1);
}

#[test]
fn a_refused_registration_ends_the_shim_with_an_error() {
    let Some((dir, kubelet)) = kubelet_in_temp_dir() else {
        return;
    };
    let api = FakeApiServer::start(NODE, NODE_UID);
    // No gpusliced: the shim must still register (it connects lazily).
    let mut shim = Shim::start(dir.path(), &api.url, &dir.path().join("absent.sock"));
    let info = kubelet.call(&shim.registration_socket(), "getinfo", &json!({}));
    assert_eq!(info["name"], "gpu.nvidia.com");
    kubelet.call(
        &shim.registration_socket(),
        "notify",
        &json!({"registered": false, "error": "version not supported"}),
    );
    let status = shim.wait_exit(BOUND);
    assert_eq!(status.code(), Some(1), "log:\n{}", shim.log());
    assert!(
        shim.log().contains("version not supported"),
        "{}",
        shim.log()
    );
    assert!(!shim.registration_socket().exists());
    assert!(!shim.dra_socket().exists());
}
