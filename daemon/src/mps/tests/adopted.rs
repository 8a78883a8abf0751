//! Daemons of a gpusliced that died right after starting them, found by the
//! marker in their environment before their pid file exists (found by the
//! crash-point e2e test: a second daemon was started beside the first, and
//! outlived every claim).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};

use super::{BOUND, Fixture, GPU_A, key};
use crate::mps::supervisor::DAEMON_MARKER;
use crate::mps::*;

/// Starts `program` as the daemon of `folders` would run, marker included.
fn spawn_marked(program: &std::path::Path, args: &[&str], folders: &DaemonFolders) -> Child {
    let mut command = Command::new(program);
    command
        .args(args)
        .env("CUDA_MPS_PIPE_DIRECTORY", folders.pipe_dir())
        .env("CUDA_MPS_LOG_DIRECTORY", folders.log_dir())
        .env(DAEMON_MARKER, folders.root())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    command.spawn().unwrap()
}

#[test]
fn a_daemon_without_its_pid_file_is_found_by_its_marker_and_taken_over() {
    let Some(f) = Fixture::new() else { return };
    let k = key(&[GPU_A]);
    let folders = DaemonFolders::new(&f.mps_dir(), &k);
    folders.create(&k).unwrap();
    let mut daemon = spawn_marked(&f.dir.path().join("mps-control"), &["-f"], &folders);
    control::ControlProgram::new(&f.dir.path().join("mps-control"))
        .wait_until_answering(&folders, "get_server_list", BOUND, &|| true)
        .unwrap();
    // As the gpusliced that started it last saw it: no pid file yet.
    std::fs::remove_file(folders.pipe_dir().join(child::PID_FILE)).unwrap();
    let starts = |f: &Fixture| {
        f.record()
            .iter()
            .filter(|l| l.starts_with("start "))
            .count()
    };
    assert_eq!(starts(&f), 1);

    let adopted = f
        .manager
        .acquire("claim-1", &k, &MpsLimits::default())
        .unwrap();
    assert_eq!(adopted.status.pid, Some(daemon.id()), "taken over");
    assert_eq!(starts(&f), 1, "no second daemon beside it");
    assert_eq!(
        f.manager.release("claim-1", &k).unwrap(),
        manager::Released::Stopped
    );
    // The stand-in exits 1 on quit here (its pid file is gone), but it
    // exits: asked to quit, not killed after the bound.
    let status = daemon.wait().unwrap();
    assert!(status.code().is_some(), "{status}");
}

#[test]
fn a_stale_daemon_that_never_opened_its_socket_is_killed() {
    let Some(f) = Fixture::new() else { return };
    let k = key(&[GPU_A]);
    let folders = DaemonFolders::new(&f.mps_dir(), &k);
    folders.create(&k).unwrap();
    // A daemon still starting when gpusliced died: no socket, no pid file.
    let mut starting = spawn_marked(std::path::Path::new("sleep"), &["600"], &folders);
    let stopped = f.manager.cleanup_stale(&[]).unwrap();
    assert_eq!(
        stopped.iter().map(|s| s.hash.clone()).collect::<Vec<_>>(),
        vec![k.hash()]
    );
    let status = starting
        .try_wait()
        .unwrap()
        .expect("stopped before cleanup_stale returned");
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert!(!folders.root().exists());
}
