//! Start-up, restart, shutdown and who may connect.

use std::os::unix::fs::PermissionsExt;

use gpuslice_proto::gpuslice::v1 as pb;

use crate::cdi_schema::assert_all_valid;
use crate::common::claims::Claims;
use crate::common::ctl::assert_nobody_is_refused;
use crate::harness::{Daemon, prepare_request, run_to_exit, write_config};

const A: &str = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_sigterm_exits_zero_and_removes_the_socket() {
    let daemon = Daemon::start(1);
    let socket = daemon.socket.clone();
    let (status, _dir) = daemon.stop();
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(!socket.exists());
}

/// A log going to a file (or a pipe) has no terminal color codes: the load
/// test's check for logged errors greps the lines, and so do operators.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_log_file_gets_plain_lines() {
    let daemon = Daemon::start(1);
    let log = daemon.log();
    assert!(log.contains(" INFO "), "{log}");
    assert!(!log.contains('\u{1b}'), "escape codes in the log: {log:?}");
    let (status, _dir) = daemon.stop();
    assert_eq!(status.code(), Some(0), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_restart_keeps_claims_and_their_cdi_ids() {
    let daemon = Daemon::start(2);
    let first = daemon.client().await.prepare_whole(A, &["gpu-1"]).await;
    let (status, dir) = daemon.stop();
    assert_eq!(status.code(), Some(0));
    // A reboot wipes /var/run/cdi: the restarted daemon must rewrite the spec.
    std::fs::remove_dir_all(dir.path().join("cdi")).unwrap();
    let daemon = Daemon::start_in(dir);
    assert_eq!(
        daemon.cdi_files(),
        vec![format!("k8s.gpuslice.dev-claim_{A}.json")]
    );
    assert_all_valid(&daemon.cdi_dir);
    let mut client = daemon.client().await;
    let claims = client
        .list_claims(pb::ListClaimsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(claims.claims.len(), 1);
    let again = client.prepare_whole(A, &["gpu-1"]).await;
    assert!(again.already_prepared);
    assert_eq!(first.devices, again.devices);
    let err = client
        .prepare(prepare_request(
            "2a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d",
            &["gpu-1"],
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_start_up_removes_specs_without_records() {
    let daemon = Daemon::start(1);
    daemon.client().await.prepare_whole(A, &["gpu-0"]).await;
    let (_, dir) = daemon.stop();
    // As if the daemon died between writing the spec and writing the record.
    std::fs::remove_file(dir.path().join(format!("state/claims/{A}.json"))).unwrap();
    let daemon = Daemon::start_in(dir);
    assert!(daemon.cdi_files().is_empty(), "{:?}", daemon.cdi_files());
}

#[test]
fn sim_nvml_without_a_driver_exits_nonzero_naming_the_library() {
    if std::path::Path::new("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1").exists() {
        eprintln!("skipped: this machine has libnvidia-ml.so.1, so NVML loads");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), 1, "");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("kind = \"sim\"", "kind = \"nvml\"");
    gpuslice_cdi::atomic::write_atomic(dir.path(), "gpuslice.toml", text.as_bytes(), 0o644)
        .unwrap();
    let (status, stderr) = run_to_exit(&config);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("libnvidia-ml.so.1"), "{stderr}");
    assert!(
        stderr.contains("kind = \"sim\""),
        "says how to run without GPUs: {stderr}"
    );
    assert!(!dir.path().join("gpusliced.sock").exists());
}

#[test]
fn sim_a_config_typo_exits_2_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), 1, "cdi_dri = \"x\"");
    let (status, stderr) = run_to_exit(&config);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cdi_dri") && stderr.contains("line 5"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_socket_is_0660_and_other_users_are_refused() {
    let daemon = Daemon::start(1);
    let mode = std::fs::metadata(&daemon.socket)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o660);
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped the other-user half: needs root to run a client as nobody");
        return;
    }
    assert_nobody_is_refused(&daemon, &["status"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_the_systemd_status_line_follows_the_claims() {
    let daemon = Daemon::start(2);
    let mut client = daemon.client().await;
    client.prepare_whole(A, &["gpu-0"]).await;
    let line = daemon.wait_for_status(|s| s.contains(", 1 claims"));
    assert!(line.starts_with("serving 2 GPUs (sim)"), "{line}");
    client
        .unprepare(crate::harness::unprepare_request(A))
        .await
        .expect("unprepare");
    daemon.wait_for_status(|s| s.contains(", 0 claims"));
}
