//! The 2026 EKS fleet end to end: the real gpusliced on simulated instance
//! types (`[backend.sim] instance`), driven over its socket and through
//! gpuslicectl.
//!
//! - p6-b200.48xlarge: 8 B200s, two NUMA nodes, 18 NVLink links each, no
//!   clique; in partitionable mode a 1g.23gb slice prepares and goes.
//! - g6.12xlarge: 4 L4s without MIG: an MPS claim and a time-slicing claim
//!   prepare; a MIG slice is refused naming the L4 and MIG; a claim on a
//!   whole L4 with a small fake process is advised MPS or a time-slice,
//!   never MIG.
//! - p6e-gb200.36xlarge: every GPU and slice carries its clique (`cliqueID`,
//!   in the form of NVIDIA's ComputeDomain status; the attribute is
//!   gpuslice's own) and its cluster (`clusterUUID`), from
//!   `[backend.sim.fabric]`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use tonic::Code;

use crate::activity::processes::Processes;
use crate::common::claims::Claims;
use crate::common::ctl::run_ctl;
use crate::common::devices::text_attr;
use crate::common::files::{write_gpuslice_toml, write_text};
use crate::common::queries::Queries;
use crate::harness::{Daemon, prepare_request};
use crate::stand_ins::{SharedDaemon, mps, sections, shared_request, timeslicing};

const A: &str = "f1f1f1f1-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
const B: &str = "f2f2f2f2-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
const C: &str = "f3f3f3f3-5e6f-4a7b-8c9d-0e1f2a3b4c5d";

/// The simulated driver root: device nodes and MIG capability minors of 8
/// GPUs.
fn sim_root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root")
}

/// A config for `instance` in `dir`, with `extra` sections.
fn write_instance(dir: &Path, instance: &str, extra: &str) {
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"{}\"\n{extra}\n[backend]\nkind = \"sim\"\n[backend.sim]\n\
         instance = \"{instance}\"\n",
        sim_root().display()
    );
    write_gpuslice_toml(dir, &text);
}

/// `gpuslicectl --output json ARGS` against the socket: the document.
fn ctl_json(socket: &Path, args: &[&str]) -> Value {
    let stdout = run_ctl(socket, &[&["--output", "json"], args].concat()).ok();
    serde_json::from_str(&stdout).expect("gpuslicectl prints JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_p6_b200_has_eight_b200s_and_a_1g23gb_slice_prepares() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mig = "[mig]\nadvertise = \"partitionable\"\ncreate = \"on-prepare\"\n\
               [[mig.gpu]]\nindex = 0\n";
    write_instance(dir.path(), "p6-b200.48xlarge", mig);
    let daemon = Daemon::start_in(dir);
    let gpus = ctl_json(&daemon.socket, &["gpus"]);
    let gpus = gpus["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 8);
    for gpu in gpus {
        assert_eq!(gpu["product"], "NVIDIA B200", "{gpu}");
        assert_eq!(gpu["architecture"], "Blackwell", "{gpu}");
        assert_eq!(gpu["nvlink_links"], 18, "{gpu}");
        assert_eq!(gpu["clique"], "", "an NVSwitch node has no clique: {gpu}");
        assert_eq!(
            gpu["mig_profiles"].as_array().map(Vec::len),
            Some(7),
            "{gpu}"
        );
    }
    let inventory = daemon.client().await.inventory().await;
    let numa = |name: &str| {
        let device = inventory
            .devices
            .iter()
            .find(|d| d.name == name)
            .expect(name);
        device.attributes["resource.kubernetes.io/numaNode"]
            .value
            .clone()
    };
    assert_ne!(numa("gpu-0"), numa("gpu-7"), "two sockets");
    let slice = "gpu-0-mig-1g23gb-0";
    assert!(inventory.devices.iter().any(|d| d.name == slice));
    let prepared = daemon
        .client()
        .await
        .prepare(prepare_request(A, &[slice]))
        .await
        .unwrap_or_else(|e| panic!("prepare {slice}: {e}\n{}", daemon.log()))
        .into_inner();
    assert_eq!(prepared.devices.len(), 1);
    let layout = ctl_json(&daemon.socket, &["mig"]);
    let instances = &layout["gpus"][0]["instances"];
    assert_eq!(instances[0]["profile"], "1g.23gb", "{layout}");
    daemon.client().await.unprepare_claim(A).await;
    assert!(daemon.cdi_files().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_g6_l4s_share_with_mps_and_time_slices_and_refuse_mig() {
    if crate::tools::which("python3").is_none() {
        let test = "sim_g6_l4s_share_with_mps_and_time_slices_and_refuse_mig";
        crate::tools::skip(
            test,
            "python3 (the stand-in MPS control program's interpreter) is missing",
        );
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    write_instance(dir.path(), "g6.12xlarge", &sections(dir.path()));
    let node = SharedDaemon::start_in(dir);
    let mut client = node.client().await;
    client
        .prepare(shared_request(A, &["gpu-0"], &[mps(50)]))
        .await
        .unwrap_or_else(|e| panic!("MPS on an L4: {e}\n{}", node.log()));
    client
        .prepare(shared_request(B, &["gpu-1"], &[timeslicing("Long")]))
        .await
        .unwrap_or_else(|e| panic!("time-slicing on an L4: {e}\n{}", node.log()));
    let refused = client
        .prepare(prepare_request(C, &["gpu-2-mig-1g24gb-0"]))
        .await
        .expect_err("no MIG on an L4");
    assert_eq!(refused.code(), Code::FailedPrecondition);
    assert!(
        refused
            .message()
            .starts_with("gpu-2 is an NVIDIA L4, which has no MIG (NVML: MIG not supported)"),
        "{}",
        refused.message()
    );
    assert!(
        refused.message().contains("ask for the whole GPU"),
        "{}",
        refused.message()
    );
    let gpus = ctl_json(&node.socket, &["gpus"]);
    for gpu in gpus["gpus"].as_array().expect("gpus") {
        assert_eq!(gpu["product"], "NVIDIA L4");
        assert_eq!(
            (gpu["mig"].as_bool(), gpu["mps_limits"].as_bool()),
            (Some(false), Some(true))
        );
    }
    assert_eq!(gpus["gpus"][1]["timeslice_settings"], "yes");
    for uid in [A, B] {
        client.unprepare_claim(uid).await;
    }
}

/// Advice on an L4: a claim holding one whole, with a 4 GiB fake process at
/// 5% SM, is advised a share (MPS or a time-slice), never a MIG profile, and
/// without the "would fit ..." note of a GPU with MIG.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_g6_advice_never_offers_mig() {
    if crate::tools::which("python3").is_none() {
        let test = "sim_g6_advice_never_offers_mig";
        crate::tools::skip(
            test,
            "python3 (the stand-in MPS control program's interpreter) is missing",
        );
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let extra = format!(
        "{}[activity]\ninterval_s = 1\n[advice]\nmin_observed_s = 3\n",
        sections(dir.path())
    );
    write_instance(dir.path(), "g6.12xlarge", &extra);
    // gpuslicectl is built before the claim is: observed from the prepare,
    // it must not look idle while cargo builds the fake process's tool.
    crate::binaries::gpuslicectl();
    let node = SharedDaemon::start_in(dir);
    node.client().await.prepare_whole(A, &["gpu-3"]).await;
    let mut processes = Processes::default();
    processes.exec(&node, A, &["--memory", "4Gi", "--sm", "5"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    let advice = loop {
        let doc = ctl_json(&node.socket, &["advise"]);
        let form = doc["claims"][0]["devices"][0]["advice"]["form"].clone();
        if form
            .as_str()
            .is_some_and(|f| f != "abstain" && f != "give_back")
        {
            break doc;
        }
        assert!(Instant::now() < deadline, "no advice of a share: {doc}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    drop(processes);
    let device = &advice["claims"][0]["devices"][0]["advice"];
    assert_eq!(device["mig_profile"], "", "{advice}");
    assert_eq!(device["smallest_mig_fit"], "", "{advice}");
    let reason = device["reason"].as_str().unwrap_or_default();
    assert!(
        !reason.contains("would fit") && !reason.contains("MIG"),
        "{reason}"
    );
    let form = &advice["claims"][0]["devices"][0]["advice"]["form"];
    assert!(
        matches!(form.as_str(), Some("mps" | "timeslicing")),
        "{advice}"
    );
    node.client().await.unprepare_claim(A).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_p6e_gb200_devices_carry_their_clique() {
    let dir = tempfile::tempdir().expect("temp dir");
    let extra = "[mig]\nadvertise = \"partitionable\"\n[[mig.gpu]]\nindex = 3\n";
    write_instance(dir.path(), "p6e-gb200.36xlarge", extra);
    let fabric = "[backend.sim.fabric]\ncluster_uuid = \"9d2e0c4a-61f3-4b8e-a5d7-3c1f0e2b4a69\"\n\
                  clique_id = 7\n";
    let config = dir.path().join("gpuslice.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    write_text(&config, &format!("{text}{fabric}"));
    let daemon = Daemon::start_in(dir);
    let inventory = daemon.client().await.inventory().await;
    let clique = "9d2e0c4a-61f3-4b8e-a5d7-3c1f0e2b4a69.7";
    let gpus = inventory
        .devices
        .iter()
        .filter(|d| d.features.is_some())
        .count();
    assert_eq!(gpus, 4);
    assert!(
        inventory.devices.len() > 4,
        "gpu-3's slices are published too"
    );
    for device in &inventory.devices {
        assert_eq!(
            text_attr(device, "cliqueID").as_deref(),
            Some(clique),
            "{}",
            device.name
        );
        assert_eq!(
            text_attr(device, "clusterUUID").as_deref(),
            Some("9d2e0c4a-61f3-4b8e-a5d7-3c1f0e2b4a69"),
            "{}",
            device.name
        );
    }
    let gpus = ctl_json(&daemon.socket, &["gpus"]);
    assert_eq!(gpus["gpus"][0]["clique"], clique);
    assert_eq!(gpus["gpus"][0]["product"], "NVIDIA GB200");
}
