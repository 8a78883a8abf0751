//! Hostile files where gpusliced keeps its own: a symlink, a FIFO or a
//! device planted at a claim's spec or record path is replaced or set
//! aside, never followed, read or written through. (Bad claim uids and
//! oversized fields are in claims.rs; callers outside root and the socket
//! group in lifecycle.rs.)

use std::os::unix::fs::symlink;
use std::path::Path;

use crate::cdi_schema::assert_all_valid;
use crate::common::claims::Claims;
use crate::common::queries::Queries;
use crate::harness::Daemon;

const A: &str = "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e";

fn spec_name() -> String {
    format!("k8s.gpuslice.dev-claim_{A}.json")
}

/// A file outside the daemon's folders that a planted link points at.
fn victim(dir: &Path) -> std::path::PathBuf {
    gpuslice_cdi::atomic::write_atomic(dir, "victim.json", b"victim: must stay as it is", 0o644)
        .expect("write victim");
    dir.join("victim.json")
}

fn dir_of(path: &Path) -> &Path {
    path.parent().expect("a file in a folder")
}

fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_symlink_planted_at_a_spec_path_is_replaced_not_followed() {
    let daemon = Daemon::start(2);
    let outside = tempfile::tempdir().unwrap();
    let victim = victim(outside.path());
    let spec = daemon.cdi_dir.join(spec_name());
    symlink(&victim, &spec).unwrap();
    daemon.client().await.prepare_whole(A, &["gpu-1"]).await;
    assert!(
        is_regular(&spec),
        "the spec path holds a regular file again"
    );
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"victim: must stay as it is"
    );
    assert_all_valid(&daemon.cdi_dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_start_up_replaces_a_spec_that_links_to_dev_zero_or_is_a_fifo() {
    // Read through, /dev/zero would fill memory and a FIFO would hang
    // start-up before READY=1: both must simply be rewritten.
    for planted in ["link to /dev/zero", "fifo"] {
        let daemon = Daemon::start(2);
        let first = daemon.client().await.prepare_whole(A, &["gpu-0"]).await;
        let (status, dir) = daemon.stop();
        assert_eq!(status.code(), Some(0));
        let spec = dir.path().join("cdi").join(spec_name());
        std::fs::remove_file(&spec).unwrap();
        if planted == "fifo" {
            let made = std::process::Command::new("mkfifo").arg(&spec).status();
            assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        } else {
            symlink("/dev/zero", &spec).unwrap();
        }
        let daemon = Daemon::start_in(dir);
        assert!(is_regular(&spec), "{planted}: spec rewritten at start-up");
        assert_all_valid(&daemon.cdi_dir);
        let again = daemon.client().await.prepare_whole(A, &["gpu-0"]).await;
        assert!(again.already_prepared, "{planted}");
        assert_eq!(again.devices, first.devices, "{planted}: same CDI ids");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_symlink_planted_at_a_record_path_is_set_aside_and_reported() {
    let daemon = Daemon::start(2);
    daemon.client().await.prepare_whole(A, &["gpu-0"]).await;
    let (status, dir) = daemon.stop();
    assert_eq!(status.code(), Some(0));
    // Move the real record out and link it back in under its own name.
    let record = dir.path().join("state/claims").join(format!("{A}.json"));
    let outside = tempfile::tempdir().unwrap();
    let moved = outside.path().join("record.json");
    std::fs::rename(&record, &moved).unwrap();
    let before = std::fs::read(&moved).unwrap();
    symlink(&moved, &record).unwrap();
    let daemon = Daemon::start_in(dir);
    assert_eq!(
        std::fs::read(&moved).unwrap(),
        before,
        "link target untouched"
    );
    assert!(!record.exists(), "the link is set aside");
    let aside = format!(".{A}.json.corrupt");
    assert_eq!(daemon.record_files(), vec![aside.clone()]);
    let aside = dir_of(&record).join(aside);
    assert!(
        std::fs::symlink_metadata(&aside).is_ok_and(|m| m.file_type().is_symlink()),
        "the link itself is moved aside"
    );
    assert!(
        daemon.cdi_files().is_empty(),
        "a spec without its record goes"
    );
    let status = daemon.client().await.status().await;
    assert!(
        status.problems.iter().any(|p| p.contains("symbolic link")),
        "{:?}",
        status.problems
    );
}
