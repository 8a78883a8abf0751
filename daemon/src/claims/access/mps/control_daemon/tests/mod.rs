//! The MPS module's tests, against the stand-in control program
//! (tests/tools/fake-mps-control): the manager and child supervisor (this
//! file), slots that never hold up other keys ([`slots`]) and daemons
//! adopted by their marker ([`adopted`]). Built only under `cargo test`.

mod adopted;
mod limits;
mod slots;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::child::PID_FILE;
use super::*;

pub(super) const GPU_A: &str = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
pub(super) const GPU_B: &str = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
pub(super) const BOUND: Duration = Duration::from_secs(30);

pub(super) struct Fixture {
    pub(super) dir: tempfile::TempDir,
    pub(super) manager: MpsManager,
}

impl Fixture {
    pub(super) fn new() -> Option<Self> {
        if python3_missing() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let fake =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/tools/fake-mps-control");
        let body = format!(
            "#!/bin/sh\nFAKE_MPS_RECORD={} exec {} \"$@\"\n",
            dir.path().join("record").display(),
            fake.display()
        );
        gpuslice_cdi::write_atomic(dir.path(), "mps-control", body.as_bytes(), 0o755).unwrap();
        let manager = manager(dir.path());
        Some(Self { dir, manager })
    }

    pub(super) fn record(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("record"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    pub(super) fn mps_dir(&self) -> PathBuf {
        self.dir.path().join("run/mps")
    }
}

fn manager(dir: &Path) -> MpsManager {
    MpsManager::new(
        MpsSettings {
            control_program: dir.join("mps-control"),
            mps_dir: dir.join("run/mps"),
            ready_bound: BOUND,
            bind_shm: false,
        },
        Arc::new(ChildSupervisor::default()),
        Arc::new(control::ControlProgram::new(&dir.join("mps-control"))),
        Arc::new(NoShmMount),
    )
}

pub(super) fn key(uuids: &[&str]) -> MpsKey {
    MpsKey::new(uuids.iter().copied())
}

fn limits(atp: u8, gib: u64) -> MpsLimits {
    MpsLimits {
        active_thread_percentage: Some(atp),
        pinned_memory_limits: BTreeMap::from([(GPU_A.to_owned(), gib * 1024 * 1024 * 1024)]),
    }
}

#[test]
fn keys_are_sorted_and_hash_stably() {
    let k = key(&[GPU_B, GPU_A, GPU_B]);
    assert_eq!(k.uuids(), [GPU_A, GPU_B]);
    assert_eq!(k.visible_devices(), format!("{GPU_A},{GPU_B}"));
    assert_eq!(k.hash(), key(&[GPU_A, GPU_B]).hash());
    assert_eq!(k.hash().len(), 16);
    assert_ne!(k.hash(), key(&[GPU_A]).hash());
    assert!(key(&[GPU_A]).overlaps(&k));
    assert!(!k.overlaps(&k));
}

#[test]
fn limits_become_commands_checks_and_client_env() {
    let l = limits(50, 10);
    let k = key(&[GPU_A]);
    assert_eq!(
        l.commands(&k).unwrap(),
        [
            "set_default_active_thread_percentage 50".to_owned(),
            "set_default_device_pinned_mem_limit 0 10240M".to_owned(),
        ]
    );
    let checks = l.checks(&k).unwrap();
    assert!(checks[0].1.matches("50.0") && checks[0].1.matches("50") && !checks[0].1.matches("5"));
    assert!(
        checks[1].1.matches("10240M") && checks[1].1.matches("10G") && !checks[1].1.matches("0")
    );
    assert_eq!(
        l.daemon_env(),
        [
            (
                "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE".to_owned(),
                "50".to_owned()
            ),
            (
                "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT".to_owned(),
                format!("{GPU_A}=10240M")
            ),
        ],
        "a restarted daemon has its percentage before anyone re-applies it; its servers \
         inherit the memory list"
    );
    let share = BTreeMap::from([(GPU_A.to_owned(), 20 * 1024 * 1024 * 1024)]);
    assert_eq!(
        client_memory_env(&share),
        Some(format!("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={GPU_A}=20480M"))
    );
    assert_eq!(client_memory_env(&BTreeMap::new()), None);
}

#[test]
fn sim_limits_reach_the_control_program_before_ready_and_quit_ends_it() {
    let Some(f) = Fixture::new() else { return };
    let k = key(&[GPU_A]);
    let daemon = f.manager.acquire("claim-1", &k, &limits(50, 10)).unwrap();
    assert_eq!(daemon.status.state, DaemonState::Running);
    assert!(
        daemon.pipe_dir().join("control").exists(),
        "ready means the socket answers"
    );
    assert_eq!(
        f.record(),
        [
            format!("start CUDA_VISIBLE_DEVICES={GPU_A} ATP=50"),
            "get_server_list".to_owned(),
            "set_default_active_thread_percentage 50".to_owned(),
            "set_default_device_pinned_mem_limit 0 10240M".to_owned(),
            "get_default_active_thread_percentage".to_owned(),
            "get_default_device_pinned_mem_limit 0".to_owned(),
        ]
    );
    let edits = daemon.cdi_edits(&BTreeMap::new());
    let pipe = daemon.pipe_dir().display().to_string();
    assert_eq!(edits.env, [format!("CUDA_MPS_PIPE_DIRECTORY={pipe}")]);
    assert_eq!(edits.mounts[0].host_path, pipe);
    assert_eq!(edits.mounts[0].container_path, pipe);
    assert_eq!(edits.mounts.len(), 1, "no shared shm without the bind");
    let with_shm = daemon.folders.cdi_edits(None, true);
    assert_eq!(with_shm.mounts[1].container_path, "/dev/shm");
    assert_eq!(
        with_shm.mounts[1].host_path,
        daemon.shm_dir().display().to_string()
    );
    assert_eq!(f.manager.release("claim-1", &k).unwrap(), Released::Stopped);
    assert_eq!(f.record().last().map(String::as_str), Some("quit"));
    assert!(!daemon.folders.root().exists(), "the folder is removed");
}

#[test]
fn sim_two_claims_on_one_key_share_one_daemon_and_other_keys_get_their_own() {
    let Some(f) = Fixture::new() else { return };
    let ka = key(&[GPU_A]);
    let kb = key(&[GPU_B]);
    let first = f.manager.acquire("claim-1", &ka, &limits(50, 10)).unwrap();
    let second = f.manager.acquire("claim-2", &ka, &limits(50, 10)).unwrap();
    assert_eq!(first.pipe_dir(), second.pipe_dir());
    assert_eq!(second.claims, ["claim-1", "claim-2"]);
    f.manager.acquire("claim-2", &ka, &limits(50, 10)).unwrap();
    let other = f
        .manager
        .acquire("claim-3", &kb, &MpsLimits::default())
        .unwrap();
    assert_ne!(other.pipe_dir(), first.pipe_dir());
    let starts = f
        .record()
        .iter()
        .filter(|l| l.starts_with("start "))
        .count();
    assert_eq!(starts, 2, "one daemon per key");
    assert_eq!(f.manager.daemons().len(), 2);
    assert_eq!(
        f.manager.release("claim-1", &ka).unwrap(),
        Released::StillUsed(1)
    );
    assert!(
        !f.record().contains(&"quit".to_owned()),
        "a daemon in use is not stopped"
    );
    assert_eq!(
        f.manager.release("claim-1", &ka).unwrap(),
        Released::NotHeld
    );
    assert_eq!(
        f.manager.release("claim-2", &ka).unwrap(),
        Released::Stopped
    );
    assert_eq!(
        f.manager.release("claim-3", &kb).unwrap(),
        Released::Stopped
    );
    assert_eq!(f.record().iter().filter(|l| *l == "quit").count(), 2);
}

#[test]
fn sim_conflicting_limits_and_overlapping_keys_are_refused() {
    let Some(f) = Fixture::new() else { return };
    let ka = key(&[GPU_A]);
    f.manager.acquire("claim-1", &ka, &limits(50, 10)).unwrap();
    let err = f
        .manager
        .acquire("claim-2", &ka, &limits(25, 10))
        .unwrap_err();
    assert!(matches!(err, MpsError::LimitsConflict { .. }), "{err}");
    assert!(err.to_string().contains("claim-1"), "{err}");
    let err = f
        .manager
        .acquire("claim-3", &key(&[GPU_A, GPU_B]), &MpsLimits::default())
        .unwrap_err();
    assert!(matches!(err, MpsError::Overlap { .. }), "{err}");
    assert!(err.to_string().contains("claim-1"), "{err}");
    f.manager.release("claim-1", &ka).unwrap();
}

#[test]
fn sim_a_killed_daemon_is_restarted_with_its_limits() {
    let Some(f) = Fixture::new() else { return };
    let k = key(&[GPU_A]);
    let daemon = f.manager.acquire("claim-1", &k, &limits(50, 10)).unwrap();
    let pid = daemon.status.pid.unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let status = f.manager.wait_for_restarts(&k, 1, BOUND).unwrap();
    assert_eq!((status.state, status.restarts), (DaemonState::Running, 1));
    assert_ne!(status.pid, Some(pid));
    let record = f.record();
    let starts = record.iter().filter(|l| l.starts_with("start ")).count();
    assert_eq!(starts, 2);
    let after = record
        .iter()
        .rposition(|l| l.starts_with("start "))
        .unwrap();
    assert!(
        record[after..].contains(&"set_default_active_thread_percentage 50".to_owned()),
        "{record:?}"
    );
    assert_eq!(f.manager.daemons()[0].status.restarts, 1);
    f.manager.release("claim-1", &k).unwrap();
}

#[test]
fn sim_a_daemon_that_cannot_start_fails_the_acquire_and_leaves_nothing() {
    let Some(f) = Fixture::new() else { return };
    let body = format!(
        "#!/bin/sh\nFAKE_MPS_FAIL_START=1 exec {} \"$@\"\n",
        f.dir.path().join("mps-control").display()
    );
    gpuslice_cdi::write_atomic(f.dir.path(), "failing", body.as_bytes(), 0o755).unwrap();
    let manager = MpsManager::new(
        MpsSettings {
            control_program: f.dir.path().join("failing"),
            mps_dir: f.mps_dir(),
            ready_bound: BOUND,
            bind_shm: false,
        },
        Arc::new(ChildSupervisor::default()),
        Arc::new(control::ControlProgram::new(&f.dir.path().join("failing"))),
        Arc::new(NoShmMount),
    );
    let k = key(&[GPU_A]);
    let err = manager
        .acquire("claim-1", &k, &MpsLimits::default())
        .unwrap_err();
    assert!(
        matches!(
            err,
            MpsError::DiedDuringStart { .. } | MpsError::NotReady { .. }
        ),
        "{err}"
    );
    assert!(!DaemonFolders::new(&f.mps_dir(), &k).root().exists());
    // The failed start left no slot behind to block a key sharing its GPU.
    let err = manager
        .acquire("claim-2", &key(&[GPU_A, GPU_B]), &MpsLimits::default())
        .unwrap_err();
    assert!(!matches!(err, MpsError::Overlap { .. }), "{err}");
    assert!(manager.daemons().is_empty());
}

/// A daemon a previous gpusliced left: started with `-d`, nobody's child.
fn leftover(f: &Fixture, k: &MpsKey) -> DaemonFolders {
    let folders = DaemonFolders::new(&f.mps_dir(), k);
    folders.create(k).unwrap();
    start_detached(f, k, &folders);
    control::ControlProgram::new(&f.dir.path().join("mps-control"))
        .wait_until_answering(&folders, "get_server_list", BOUND, &|| true)
        .unwrap();
    folders
}

/// Starts the stand-in as `-d` (it forks, nobody's child) for `folders`,
/// marked as gpusliced marks its daemons.
fn start_detached(f: &Fixture, k: &MpsKey, folders: &DaemonFolders) {
    let status = std::process::Command::new(f.dir.path().join("mps-control"))
        .arg("-d")
        .env("CUDA_VISIBLE_DEVICES", k.visible_devices())
        .env("CUDA_MPS_PIPE_DIRECTORY", folders.pipe_dir())
        .env("CUDA_MPS_LOG_DIRECTORY", folders.log_dir())
        .env(supervisor::DAEMON_MARKER, folders.root())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Whether the stand-in control program's interpreter is missing (said
/// once, as the skip's reason).
pub(super) fn python3_missing() -> bool {
    let missing = std::process::Command::new("python3")
        .args(["-c", "pass"])
        .status()
        .is_err();
    if missing {
        eprintln!("skipping: python3 (the stand-in control program's interpreter) is missing");
    }
    missing
}

/// The folders of GPU A's daemon with what a SIGKILLed daemon leaves: its
/// socket file, refusing connections.
fn folders_with_a_left_socket(f: &Fixture) -> (MpsKey, DaemonFolders) {
    let k = key(&[GPU_A]);
    let folders = DaemonFolders::new(&f.mps_dir(), &k);
    folders.create(&k).unwrap();
    drop(std::os::unix::net::UnixListener::bind(folders.pipe_dir().join("control")).unwrap());
    (k, folders)
}

#[test]
fn sim_a_socket_left_by_a_killed_daemon_is_not_taken_for_readiness() {
    let Some(f) = Fixture::new() else { return };
    let (k, folders) = folders_with_a_left_socket(&f);
    let client = control::ControlProgram::new(&f.dir.path().join("mps-control"));
    assert!(
        client.send(&folders, "get_server_list").is_err(),
        "the left socket refuses"
    );
    // The restarted daemon comes up only once the wait has seen the left socket refuse.
    let started = std::cell::Cell::new(false);
    let answer = client.wait_until_answering(&folders, "get_server_list", BOUND, &|| {
        if !started.replace(true) {
            start_detached(&f, &k, &folders);
        }
        true
    });
    assert_eq!(answer.unwrap(), "");
    assert!(started.get());
    client.send(&folders, "quit").unwrap();
}

#[test]
fn sim_a_daemon_that_never_answers_is_not_ready_and_says_why() {
    let Some(f) = Fixture::new() else { return };
    let (_, folders) = folders_with_a_left_socket(&f);
    let client = control::ControlProgram::new(&f.dir.path().join("mps-control"));
    let err = client
        .wait_until_answering(
            &folders,
            "get_server_list",
            Duration::from_millis(300),
            &|| true,
        )
        .unwrap_err();
    assert!(matches!(err, MpsError::NotReady { .. }), "{err}");
    assert!(
        err.to_string().contains("Cannot find MPS control daemon"),
        "{err}"
    );
}

#[test]
fn sim_restart_of_gpusliced_keeps_live_daemons_and_stops_orphans() {
    let Some(f) = Fixture::new() else { return };
    let live = key(&[GPU_A]);
    let orphan = key(&[GPU_B]);
    let kept = leftover(&f, &live);
    let gone = leftover(&f, &orphan);
    let kept_pid = std::fs::read_to_string(kept.pipe_dir().join(PID_FILE)).unwrap();
    let stray = f.mps_dir().join("0123456789abcdef");
    std::fs::create_dir_all(stray.join("pipe")).unwrap();
    let mut expected = vec!["0123456789abcdef".to_owned(), orphan.hash()];
    expected.sort();
    let stopped = f
        .manager
        .cleanup_stale(std::slice::from_ref(&live))
        .unwrap();
    assert_eq!(
        stopped.iter().map(|d| d.hash.clone()).collect::<Vec<_>>(),
        expected
    );
    let devices = |hash: &str| {
        stopped
            .iter()
            .find(|d| d.hash == hash)
            .map(|d| d.devices.clone())
    };
    assert_eq!(devices(&orphan.hash()), Some(vec![GPU_B.to_owned()]));
    assert_eq!(devices("0123456789abcdef"), Some(vec![]), "no key file");
    assert!(!gone.root().exists() && !stray.exists());
    assert!(
        f.record().contains(&"quit".to_owned()),
        "the orphan was asked to quit"
    );
    assert!(
        kept.pipe_dir().join("control").exists(),
        "the live daemon keeps running"
    );
    let starts_before = f
        .record()
        .iter()
        .filter(|l| l.starts_with("start "))
        .count();
    let adopted = f
        .manager
        .acquire("claim-1", &live, &limits(50, 10))
        .unwrap();
    assert_eq!(
        adopted.status.pid.map(|p| p.to_string()),
        Some(kept_pid.trim().to_owned()),
        "taken over, not restarted"
    );
    assert_eq!(
        f.record()
            .iter()
            .filter(|l| l.starts_with("start "))
            .count(),
        starts_before
    );
    assert_eq!(
        f.manager.release("claim-1", &live).unwrap(),
        Released::Stopped
    );
    assert!(!kept.root().exists());
}
