//! Extended resources backed by DRA (KEP-5004) through the real plugin: an
//! unchanged pod written for NVIDIA's device plugin (`nvidia.com/gpu: 1`, or
//! `nvidia.com/mig-1g.10gb: 1`) makes the scheduler create a ResourceClaim
//! for it; the kubelet prepares that claim like any other. This test serves
//! claims in exactly that shape, allocated as the scheduler allocates them
//! from the packaged DeviceClasses (packaging/deviceclasses/extended-resources),
//! and checks that they prepare, that the CDI spec holds the right device
//! nodes, and that unprepare leaves nothing behind.
//!
//! The claim's shape is the scheduler's, read in kubernetes/kubernetes at
//! 16913111deb1a4c4ff76f4ba7ffd9ebef397a303,
//! pkg/scheduler/framework/plugins/dynamicresources/extendeddynamicresources.go:
//! `generateName: <pod>-extended-resources-`, the pod as controlling owner,
//! annotation `resource.kubernetes.io/extended-resource-claim: "true"`, one
//! request per container and resource named `container-<i>-request-<j>`
//! (`i` the container's index in initContainers + containers, `j` the
//! resource's index among the container's requests sorted by name), each
//! `exactly` the class with allocationMode ExactCount and count = the
//! quantity; the results name those requests ([`crate::extended_claim`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::extended_claim::{claim_schema_errors, pod, scheduler_claim};
use crate::fake_apiserver::{FakeApiServer, State};
use crate::gpusliced::Daemon;
use crate::peers::{Shim, read};
use crate::{BOUND, NODE, NODE_UID, kubelet_claim, kubelet_in_temp_dir};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The packaged classes that map an extended resource: name -> (class, CEL).
fn mapped_classes() -> BTreeMap<String, (String, String)> {
    let dir = repo().join("packaging/deviceclasses/extended-resources");
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).expect("extended-resources folder") {
        let text = read(&entry.expect("entry").path());
        for doc in serde_norway::Deserializer::from_str(&text) {
            let class = Value::deserialize(doc).expect("a YAML DeviceClass");
            let resource = class["spec"]["extendedResourceName"]
                .as_str()
                .expect("mapped");
            let cel = class["spec"]["selectors"][0]["cel"]["expression"].as_str();
            let name = class["metadata"]["name"].as_str().expect("name");
            out.insert(
                resource.to_owned(),
                (name.to_owned(), cel.expect("one CEL selector").to_owned()),
            );
        }
    }
    out
}

/// Whether a published device meets a packaged selector. The classes use one
/// form only, `device.driver == '…' && device.attributes['gpu.nvidia.com'].K == '…'`
/// clauses; anything else fails the test rather than match by accident.
fn selects(cel: &str, device: &Value) -> bool {
    cel.split(" && ").all(|clause| {
        let (lhs, rhs) = clause.split_once(" == ").expect("an equality clause");
        let want = rhs.trim_matches('\'');
        if lhs == "device.driver" {
            return want == "gpu.nvidia.com";
        }
        let key = lhs
            .strip_prefix("device.attributes['gpu.nvidia.com'].")
            .unwrap_or_else(|| panic!("a clause this test cannot evaluate: {clause}"));
        device["attributes"][key]["string"] == want
    })
}

/// Every published device, by name.
fn published_devices(state: &State) -> BTreeMap<String, Value> {
    (state.slices.values())
        .flat_map(|s| s["spec"]["devices"].as_array().cloned().unwrap_or_default())
        .filter_map(|d| Some((d["name"].as_str()?.to_owned(), d)))
        .collect()
}

/// The host paths of every device node in a claim's CDI spec.
fn device_nodes(spec: &Value) -> Vec<String> {
    let mut edits = vec![&spec["containerEdits"]];
    edits.extend(
        spec["devices"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| &d["containerEdits"]),
    );
    edits
        .iter()
        .flat_map(|e| e["deviceNodes"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n["path"].as_str().map(str::to_owned))
        .collect()
}

/// `mig-minors` of the sim root: minor -> what it grants ("gpu1/gi3/access").
fn mig_minors(root: &Path) -> BTreeMap<String, String> {
    read(&root.join("proc/driver/nvidia-caps/mig-minors"))
        .lines()
        .filter_map(|l| {
            l.split_once(' ')
                .map(|(what, minor)| (minor.to_owned(), what.to_owned()))
        })
        .collect()
}

/// The simulated GPU instances' ids, per GPU (the sim's hardware state).
fn gpu_instances(daemon_dir: &Path) -> Vec<Vec<u64>> {
    let text = read(&daemon_dir.join("sim-hardware.json"));
    let hardware: Value = serde_json::from_str(&text).expect("sim hardware state");
    (hardware["state"].as_array().expect("state per GPU").iter())
        .map(|gpu| {
            (gpu["gpu_instances"].as_array().expect("instances").iter())
                .map(|gi| gi["id"].as_u64().expect("GI id"))
                .collect()
        })
        .collect()
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn device_plugin_pods_get_a_gpu_and_a_mig_slice_through_the_schedulers_claims() {
    let Some((dir, kubelet)) = kubelet_in_temp_dir() else {
        return;
    };
    let api = FakeApiServer::start(NODE, NODE_UID);
    let daemon_dir = dir.path().join("daemon");
    let root = repo().join("examples/sim-root");
    let daemon = Daemon::start_with_config(
        &daemon_dir,
        &format!(
            "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
             driver_root = \"{}\"\n[backend]\nkind = \"sim\"\n[backend.sim]\n\
             gpus = [\"H100-80GB\", \"H100-80GB\"]\n[mig]\nadvertise = \"partitionable\"\n\
             create = \"on-prepare\"\n[[mig.gpu]]\nindex = 1\n",
            root.display()
        ),
    );
    let shim_dir = dir.path().join("shim");
    let shim = Shim::start(&shim_dir, &api.url, &daemon.socket);
    kubelet.call(&shim.registration_socket(), "getinfo", &json!({}));
    kubelet.call(
        &shim.registration_socket(),
        "notify",
        &json!({"registered": true}),
    );

    // The scheduler allocates from the published devices the class selects.
    let classes = mapped_classes();
    let pick = |resource: &str, devices: &BTreeMap<String, Value>| -> Option<String> {
        let (_, cel) = &classes[resource];
        devices
            .iter()
            .find(|(_, d)| selects(cel, d))
            .map(|(n, _)| n.clone())
    };
    let ready = |s: &State| {
        let devices = published_devices(s);
        pick("nvidia.com/gpu", &devices).is_some()
            && pick("nvidia.com/mig-1g.10gb", &devices).is_some()
    };
    assert!(
        api.wait_for(BOUND, ready),
        "no GPU and 1g.10gb slice published; violations {:?}; shim log:\n{}",
        api.state().violations,
        shim.log()
    );
    let devices = published_devices(&api.state());
    let gpu = pick("nvidia.com/gpu", &devices).expect("a whole GPU");
    let slice = pick("nvidia.com/mig-1g.10gb", &devices).expect("a 1g.10gb slice");
    assert_eq!(gpu, "gpu-0", "gpu-1 is in MIG mode");
    assert!(slice.starts_with("gpu-1-mig-1g10gb-"), "{slice}");

    let train = pod(
        "train-0",
        "7d1c0a4e-0000-4000-8000-000000000001",
        &json!([
        {"name": "train", "resources": {"limits": {"cpu": "2", "nvidia.com/gpu": "1"}}}]),
    );
    let infer = pod(
        "infer-0",
        "7d1c0a4e-0000-4000-8000-000000000002",
        &json!([
        {"name": "log", "resources": {}},
        {"name": "infer", "resources": {"limits": {"memory": "4Gi", "nvidia.com/mig-1g.10gb": "1"}}}]),
    );
    let (a, b) = (crate::uid(21), crate::uid(22));
    let claims = [
        (
            scheduler_claim(
                &train,
                "nvidia.com/gpu",
                &classes["nvidia.com/gpu"].0,
                &[&gpu],
                &a,
            ),
            &a,
            &gpu,
            "container-0-request-1",
        ),
        (
            scheduler_claim(
                &infer,
                "nvidia.com/mig-1g.10gb",
                &classes["nvidia.com/mig-1g.10gb"].0,
                &[&slice],
                &b,
            ),
            &b,
            &slice,
            "container-1-request-1",
        ),
    ];
    let mut asked = Vec::new();
    for (claim, uid, _, _) in &claims {
        assert_eq!(claim_schema_errors(claim), Vec::<String>::new(), "{claim}");
        api.put_claim(claim.clone());
        asked.push(kubelet_claim(
            claim["metadata"]["name"].as_str().expect("name"),
            uid,
        ));
    }
    assert_eq!(
        gpu_instances(&daemon_dir),
        [Vec::<u64>::new(), vec![]],
        "no slice before a claim"
    );
    let reply = kubelet.call(&shim.dra_socket(), "prepare-v1", &json!({"claims": asked}));
    let minors = mig_minors(&root);
    for (_, uid, device, request) in &claims {
        let entry = &reply["claims"][uid.as_str()];
        assert_eq!(entry["error"], "", "{reply}");
        assert_eq!(
            entry["devices"][0]["device_name"],
            device.as_str(),
            "{reply}"
        );
        assert_eq!(entry["devices"][0]["pool_name"], NODE);
        assert_eq!(
            entry["devices"][0]["request_names"],
            json!([request]),
            "{reply}"
        );
        let spec_path = daemon
            .cdi_dir
            .join(format!("k8s.gpuslice.dev-claim_{uid}.json"));
        let spec: Value = serde_json::from_str(&read(&spec_path)).expect("the claim's CDI spec");
        let nodes = device_nodes(&spec);
        let caps: Vec<&String> = nodes
            .iter()
            .filter(|n| n.starts_with("/dev/nvidia-caps/"))
            .collect();
        if device.as_str() == gpu {
            assert!(nodes.contains(&"/dev/nvidia0".to_owned()), "{nodes:?}");
            assert!(!nodes.contains(&"/dev/nvidia1".to_owned()), "{nodes:?}");
            assert!(caps.is_empty(), "{nodes:?}");
        } else {
            assert!(
                nodes.contains(&"/dev/nvidia1".to_owned()),
                "the parent: {nodes:?}"
            );
            assert!(!nodes.contains(&"/dev/nvidia0".to_owned()), "{nodes:?}");
            let mut granted: Vec<String> = caps
                .iter()
                .map(|n| {
                    let minor = n.trim_start_matches("/dev/nvidia-caps/nvidia-cap");
                    minors
                        .get(minor)
                        .cloned()
                        .unwrap_or_else(|| panic!("{n} is no MIG minor"))
                })
                .collect();
            granted.sort();
            let gi = granted[0].trim_end_matches("/access").to_owned();
            assert!(gi.starts_with("gpu1/gi"), "{granted:?}");
            assert_eq!(
                granted,
                [format!("{gi}/access"), format!("{gi}/ci0/access")],
                "GI and its CI"
            );
            let id = gi
                .trim_start_matches("gpu1/gi")
                .parse::<u64>()
                .expect("GI id");
            assert_eq!(
                gpu_instances(&daemon_dir),
                [vec![], vec![id]],
                "made at prepare"
            );
        }
    }

    let gone = kubelet.call(
        &shim.dra_socket(),
        "unprepare-v1",
        &json!({"claims": asked}),
    );
    for (_, uid, _, _) in &claims {
        assert_eq!(gone["claims"][uid.as_str()]["error"], "", "{gone}");
    }
    let left: Vec<_> = std::fs::read_dir(&daemon.cdi_dir)
        .expect("cdi dir")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "CDI specs left: {left:?}");
    let records: Vec<_> = std::fs::read_dir(daemon_dir.join("state/claims"))
        .expect("records")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(records.is_empty(), "claim records left: {records:?}");
    assert_eq!(
        gpu_instances(&daemon_dir),
        [Vec::<u64>::new(), vec![]],
        "the slice is destroyed"
    );
}
