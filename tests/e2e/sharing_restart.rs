//! MPS and time-slicing across a restart of gpusliced, a crash in the middle
//! of a prepare, and a reboot (a new boot id in the records and in the
//! simulated hardware, the run and CDI dirs wiped, every daemon gone).

use std::path::Path;

use crate::cdi_schema::assert_all_valid;
use crate::common::claims::Claims;
use crate::common::queries::Queries;
use crate::harness::list;
use crate::stand_ins::{SharedDaemon, alive, daemon_of, mps, shared_request, timeslicing};

const A: &str = "a1a1a1a1-0000-4a7b-8c9d-0e1f2a3b4c5d";
const B: &str = "b2b2b2b2-0000-4a7b-8c9d-0e1f2a3b4c5d";
const T: &str = "d4d4d4d4-0000-4a7b-8c9d-0e1f2a3b4c5d";

/// Rewrites one JSON file with `edit`.
fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON");
    edit(&mut value);
    std::fs::OpenOptions::new()
        .truncate(true)
        .write(true)
        .open(path)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, &serde_json::to_vec(&value).expect("encode"))
        })
        .expect("write");
}

fn record_path(dir: &Path, uid: &str) -> std::path::PathBuf {
    dir.join(format!("state/claims/{uid}.json"))
}

fn quits(node: &SharedDaemon) -> usize {
    node.mps_lines().iter().filter(|l| *l == "quit").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_restart_keeps_daemons_of_live_claims_and_stops_orphans() {
    let test = "sim_restart_keeps_daemons_of_live_claims_and_stops_orphans";
    let Some(node) = SharedDaemon::start(test, 2, "") else {
        return;
    };
    let mut client = node.client().await;
    client
        .prepare(shared_request(A, &["gpu-0"], &[mps(50)]))
        .await
        .unwrap();
    client
        .prepare(shared_request(B, &["gpu-1"], &[mps(50)]))
        .await
        .unwrap();
    let before = node.sharing().await;
    let kept = daemon_of(&before, "gpu-0").cloned().expect("A's daemon");
    let orphan = daemon_of(&before, "gpu-1").cloned().expect("B's daemon");
    drop(client);
    let _reaper = node.reaper();
    let dir = node.stop();
    assert!(
        alive(kept.pid) && alive(orphan.pid),
        "daemons outlive gpusliced"
    );
    // B's claim is gone (its record lost); its daemon is an orphan.
    std::fs::remove_file(record_path(dir.path(), B)).unwrap();
    let node = SharedDaemon::start_in(dir);
    let after = node.sharing().await;
    let adopted = daemon_of(&after, "gpu-0").expect("A's daemon after the restart");
    assert_eq!(adopted.pid, kept.pid, "adopted, not restarted");
    assert_eq!(adopted.pipe_dir, kept.pipe_dir);
    assert_eq!(adopted.state, "running");
    assert!(daemon_of(&after, "gpu-1").is_none());
    assert_eq!(
        after.gpus[1].compute_mode, "DEFAULT",
        "the orphan's GPU is back to DEFAULT"
    );
    assert_eq!(after.gpus[0].compute_mode, "EXCLUSIVE_PROCESS");
    assert_eq!(quits(&node), 1, "the orphan was asked to quit");
    assert!(!alive(orphan.pid));
    assert!(!Path::new(&orphan.pipe_dir).exists(), "its folder is gone");
    let starts = node
        .mps_lines()
        .iter()
        .filter(|l| l.starts_with("start "))
        .count();
    assert_eq!(starts, 2, "nothing started again");
    let mut client = node.client().await;
    let again = client
        .prepare(shared_request(A, &["gpu-0"], &[mps(50)]))
        .await
        .unwrap()
        .into_inner();
    assert!(again.already_prepared);
    client.unprepare_claim(A).await;
    assert!(!alive(kept.pid));
    assert!(list(&node.path().join("run/mps")).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_crash_between_the_daemon_and_the_spec_is_rolled_back() {
    let test = "sim_a_crash_between_the_daemon_and_the_spec_is_rolled_back";
    let Some(node) = SharedDaemon::start(test, 1, "") else {
        return;
    };
    node.client()
        .await
        .prepare(shared_request(A, &["gpu-0"], &[mps(50)]))
        .await
        .unwrap();
    let daemon = daemon_of(&node.sharing().await, "gpu-0")
        .cloned()
        .expect("daemon");
    let _reaper = node.reaper();
    let dir = node.stop();
    // As the prepare left it if gpusliced died after the daemon was ready
    // and before the spec: a `preparing` record, a daemon, no spec.
    edit_json(&record_path(dir.path(), A), |r| {
        r["phase"] = "preparing".into()
    });
    for spec in list(&dir.path().join("cdi")) {
        std::fs::remove_file(dir.path().join("cdi").join(spec)).unwrap();
    }
    let node = SharedDaemon::start_in(dir);
    assert!(node.record_files().is_empty(), "{:?}", node.record_files());
    assert!(node.cdi_files().is_empty());
    assert_eq!(quits(&node), 1);
    assert!(!alive(daemon.pid), "no daemon left");
    assert!(
        list(&node.path().join("run/mps")).is_empty(),
        "no folder left"
    );
    let view = node.sharing().await;
    assert_eq!(view.gpus[0].mode, "none");
    assert_eq!(view.gpus[0].compute_mode, "DEFAULT", "compute mode reset");
    let status = node.client().await.status().await;
    assert_eq!(status.claim_count, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_reboot_brings_daemons_and_time_slices_back_with_the_same_cdi_ids() {
    let test = "sim_a_reboot_brings_daemons_and_time_slices_back_with_the_same_cdi_ids";
    let Some(node) = SharedDaemon::start(test, 2, "") else {
        return;
    };
    let mut client = node.client().await;
    let first = client
        .prepare(shared_request(A, &["gpu-0"], &[mps(50)]))
        .await
        .unwrap()
        .into_inner();
    client
        .prepare(shared_request(T, &["gpu-1"], &[timeslicing("Long")]))
        .await
        .unwrap();
    let spec_name = format!("k8s.gpuslice.dev-claim_{A}.json");
    let spec_before = std::fs::read(node.cdi_dir.join(&spec_name)).unwrap();
    let daemon = daemon_of(&node.sharing().await, "gpu-0")
        .cloned()
        .expect("daemon");
    drop(client);
    let reaper = node.reaper();
    let dir = node.stop();
    // The reboot: every process gone, /run and /var/run/cdi wiped, the GPUs'
    // compute modes and time-slices back to their defaults.
    drop(reaper);
    for wiped in ["run", "cdi"] {
        std::fs::remove_dir_all(dir.path().join(wiped)).unwrap();
    }
    for uid in [A, T] {
        edit_json(&record_path(dir.path(), uid), |r| {
            r["boot_id"] = "an-earlier-boot".into();
        });
    }
    edit_json(&dir.path().join("sim-hardware.json"), |h| {
        h["boot_id"] = "an-earlier-boot".into();
    });
    let node = SharedDaemon::start_in(dir);
    let view = node.sharing().await;
    let back = daemon_of(&view, "gpu-0").expect("A's daemon after the reboot");
    assert_ne!(back.pid, daemon.pid);
    assert_eq!(back.pipe_dir, daemon.pipe_dir, "same key, same pipe dir");
    assert_eq!(back.state, "running");
    assert_eq!(view.gpus[0].compute_mode, "EXCLUSIVE_PROCESS", "set again");
    assert_eq!(view.gpus[1].interval, "Long");
    assert_eq!(view.gpus[1].interval_state, "applied");
    let sets = node
        .smi_lines()
        .iter()
        .filter(|l| l.ends_with("--set-timeslice=3"))
        .count();
    assert_eq!(sets, 2, "set at prepare and again after the reboot");
    assert_eq!(
        std::fs::read(node.cdi_dir.join(&spec_name)).unwrap(),
        spec_before,
        "the same spec: same CDI ids, same pipe dir"
    );
    assert_all_valid(&node.cdi_dir);
    let mut client = node.client().await;
    let again = client
        .prepare(shared_request(A, &["gpu-0"], &[mps(50)]))
        .await
        .unwrap()
        .into_inner();
    assert!(again.already_prepared);
    assert_eq!(again.devices, first.devices);
    for uid in [A, T] {
        client.unprepare_claim(uid).await;
    }
}
