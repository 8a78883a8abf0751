//! Device health end to end: XIDs injected into the running gpusliced through
//! the simulator's health events file; the inventory, gpuslicectl and the
//! status show the unhealthy devices and the claims on them, a new prepare
//! on one is refused UNAVAILABLE, faults survive a restart, and recovery (an
//! injected `recovered`, an operator's `gpuslicectl health clear`) lets
//! claims in again; `gpuslicectl health` and `status` exit 3 while a device
//! is unhealthy. Every wait is on the daemon's own STATUS= line.

use std::io::Write;
use std::path::{Path, PathBuf};

use gpuslice_proto::gpuslice::v1 as pb;

use crate::common::claims::Claims;
use crate::common::ctl::run_ctl;
use crate::common::files::write_gpuslice_toml;
use crate::common::queries::Queries;
use crate::harness::{ATTENTION, Daemon, prepare_request};

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000e1";
const B: &str = "bbbbbbbb-0000-4000-8000-0000000000e2";
const C: &str = "cccccccc-0000-4000-8000-0000000000e3";

fn write_config(dir: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root");
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"{}\"\n\
         [backend]\nkind = \"sim\"\n[backend.sim]\ngpus = [\"H100-80GB\", \"H100-80GB\"]\n\
         [mig]\n[[mig.gpu]]\nindex = 1\nlayout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\"]\n\
         [health]\nignore_xids = [92]\n",
        root.display()
    );
    write_gpuslice_toml(dir, &text);
}

/// Appends one line to the simulator's health events file, as a GPU raising
/// an event would.
fn inject(daemon: &Daemon, line: &str) {
    let path: PathBuf = daemon.dir.path().join("sim-health-events");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open the health events file");
    file.write_all(format!("{line}\n").as_bytes())
        .expect("append an event");
}

/// gpuslicectl against `daemon`: its exit status, stdout and stderr.
fn ctl(daemon: &Daemon, args: &[&str]) -> (Option<i32>, String, String) {
    let run = run_ctl(&daemon.socket, args);
    (run.status.code(), run.stdout, run.stderr)
}

async fn devices(daemon: &Daemon) -> (u64, Vec<pb::Device>) {
    let reply = daemon.client().await.inventory().await;
    (reply.generation, reply.devices)
}

fn named<'a>(devices: &'a [pb::Device], name: &str) -> &'a pb::Device {
    devices
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

fn profile_of(device: &pb::Device) -> Option<&str> {
    match device.attributes.get("profile")?.value.as_ref()? {
        pb::attribute_value::Value::String(s) => Some(s),
        _ => None,
    }
}

/// The GPU instance id of the slice `uid` holds on gpu-1.
async fn held_gpu_instance(daemon: &Daemon, uid: &str) -> u32 {
    let layout = daemon.client().await.mig_layout().await;
    let gpu1 = layout
        .gpus
        .iter()
        .find(|g| g.device == "gpu-1")
        .expect("gpu-1");
    gpu1.instances
        .iter()
        .find(|i| i.holder == uid)
        .expect("the claim's instance")
        .gpu_instance_id
}

async fn claim_problems(daemon: &Daemon, uid: &str) -> Vec<String> {
    let claims = (daemon.client().await)
        .list_claims(pb::ListClaimsRequest {})
        .await
        .expect("claims")
        .into_inner();
    let claim = claims
        .claims
        .into_iter()
        .find(|c| c.claim.as_ref().is_some_and(|r| r.uid == uid));
    claim.expect("the claim").health_problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
async fn sim_injected_xids_make_devices_unhealthy_until_recovered_or_cleared() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_config(dir.path());
    let daemon = Daemon::start_in(dir);
    let mut client = daemon.client().await;
    let (generation, inventory) = devices(&daemon).await;
    assert!(
        inventory
            .iter()
            .all(|d| d.healthy && d.health_reason.is_empty())
    );
    let big = inventory
        .iter()
        .find(|d| profile_of(d) == Some("3g.40gb"))
        .expect("3g.40gb")
        .name
        .clone();
    let small = inventory
        .iter()
        .find(|d| profile_of(d) == Some("1g.10gb"))
        .expect("1g.10gb")
        .name
        .clone();
    client.prepare_whole(A, &["gpu-0"]).await;
    client.prepare_whole(B, &[&big]).await;
    let (code, out, _) = ctl(&daemon, &["health"]);
    assert!(
        code == Some(0) && out.contains("every device is healthy"),
        "{out}"
    );
    assert!(
        out.contains("XIDs ignored: 13, 31, 43, 45, 68, 92, 109"),
        "{out}"
    );
    let (code, out, _) = ctl(&daemon, &["status"]);
    assert!(
        code == Some(0) && out.contains("health         ok"),
        "{code:?} {out}"
    );

    // An ignored XID changes nothing; XID 79 on GPU 0 makes it unhealthy.
    inject(&daemon, "gpu=0 xid=92");
    inject(&daemon, "gpu=0 xid=79");
    let status = daemon.wait_for_status(|s| s.contains("1 unhealthy"));
    assert!(status.contains("(gpuslicectl health)"), "{status}");
    let (later, inventory) = devices(&daemon).await;
    assert!(
        later > generation,
        "a new generation makes the DRA plugin republish"
    );
    let gpu0 = named(&inventory, "gpu-0");
    assert!(!gpu0.healthy && !gpu0.available, "{gpu0:?}");
    assert!(
        gpu0.health_reason
            .starts_with("XID 79 (GPU has fallen off the bus) since 20"),
        "{}",
        gpu0.health_reason
    );
    assert!(named(&inventory, "gpu-1").healthy);
    // For scripts and probes: 3 while a device is unhealthy, same output.
    let (code, out, _) = ctl(&daemon, &["health"]);
    assert!(
        code == Some(ATTENTION) && out.contains("gpu-0"),
        "{code:?} {out}"
    );
    let (code, out, _) = ctl(&daemon, &["status", "--output", "json"]);
    assert_eq!(code, Some(ATTENTION), "{out}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("status json");
    assert_eq!(doc["backend"], "sim", "{doc}");

    let specs = daemon.cdi_files();
    let refused = client
        .prepare(prepare_request(C, &["gpu-0"]))
        .await
        .expect_err("gpu-0 is unhealthy");
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    assert!(
        refused.message().contains("XID 79"),
        "{}",
        refused.message()
    );
    assert!(
        refused.message().contains("gpuslicectl health clear gpu-0"),
        "{}",
        refused.message()
    );
    assert_eq!(
        daemon.cdi_files(),
        specs,
        "a refused prepare writes nothing"
    );

    assert_eq!(claim_problems(&daemon, A).await.len(), 1);
    assert!(claim_problems(&daemon, B).await.is_empty());
    let problems = (client.status().await).problems;
    assert!(
        problems
            .iter()
            .any(|p| p.contains(A) && p.contains("unhealthy")),
        "{problems:?}"
    );
    let (_, table, _) = ctl(&daemon, &["inventory"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("gpu-0 "))
        .expect("gpu-0 row");
    assert!(row.trim_end().ends_with("unhealthy"), "{row}");
    let (_, json, _) = ctl(&daemon, &["--output", "json", "health"]);
    let doc: serde_json::Value = serde_json::from_str(&json).expect("health json");
    assert_eq!(doc["watching"], true);
    assert_eq!(doc["unhealthy"][0]["device"], "gpu-0");
    assert_eq!(doc["unhealthy"][0]["claims"][0], A);

    // A MIG-scoped XID on B's GPU instance: that slice and gpu-1, not the others.
    let gi = held_gpu_instance(&daemon, B).await;
    inject(&daemon, &format!("gpu=1 gi={gi} ci=0 xid=94"));
    daemon.wait_for_status(|s| s.contains("2 unhealthy"));
    let (_, inventory) = devices(&daemon).await;
    assert!(!named(&inventory, &big).healthy);
    assert!(!named(&inventory, "gpu-1").healthy);
    assert!(named(&inventory, &small).healthy);
    assert_eq!(claim_problems(&daemon, B).await.len(), 1);
    client.prepare_whole(C, &[&small]).await;

    // GPU 0 recovers; gpu-1's fault outlives a restart.
    inject(&daemon, "gpu=0 recovered");
    daemon.wait_for_status(|s| s.contains("1 unhealthy"));
    assert!(claim_problems(&daemon, A).await.is_empty());
    let (status, dir) = daemon.stop();
    assert!(status.success(), "{status}");
    let daemon = Daemon::start_in(dir);
    let (_, inventory) = devices(&daemon).await;
    assert!(named(&inventory, "gpu-0").healthy);
    assert!(
        !named(&inventory, &big).healthy,
        "faults are kept across a restart"
    );

    // The operator clears gpu-1 once the GPU is fixed.
    let (code, out, err) = ctl(&daemon, &["health", "clear", "gpu-1"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "gpu-1: cleared 1 fault(s)\n");
    let status = daemon.wait_for_status(|s| s.starts_with("serving"));
    assert!(!status.contains("unhealthy"), "{status}");
    let (_, inventory) = devices(&daemon).await;
    assert!(inventory.iter().all(|d| d.healthy), "{inventory:?}");
    assert_eq!(ctl(&daemon, &["health"]).0, Some(0), "healthy again");
    let (code, _, err) = ctl(&daemon, &["health", "clear", "gpu-7"]);
    assert!(code == Some(1) && err.contains("InvalidArgument"), "{err}");
    let (status, _) = daemon.stop();
    assert!(status.success(), "{status}");
}
