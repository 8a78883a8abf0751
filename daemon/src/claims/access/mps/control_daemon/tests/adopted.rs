//! Daemons of a gpusliced that died right after starting them, found by the
//! marker in their environment before their pid file exists (found by the
//! crash-point e2e test: a second daemon was started beside the first, and
//! outlived every claim).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};

use super::{BOUND, Fixture, GPU_A, key};
use crate::claims::mps_daemon::child::{kill_pid, pid_alive, pids_with_env};
use crate::claims::mps_daemon::supervisor::DAEMON_MARKER;
use crate::claims::mps_daemon::*;

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
    let child = command.spawn().unwrap();
    // A vfork'd spawn returns once the child has begun its exec, before the
    // kernel has laid out its new environment: until then its
    // /proc/<pid>/environ reads empty, and a scan would miss the marker.
    let environ = format!("/proc/{}/environ", child.id());
    let began = std::time::Instant::now();
    while std::fs::read(&environ).is_ok_and(|e| e.is_empty()) {
        assert!(began.elapsed() < BOUND, "{environ} stays empty");
        std::thread::yield_now();
    }
    child
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
    // Asked to quit, not killed after the bound.
    let status = daemon.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
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

/// NVIDIA's daemon writes its pid file without truncating it: after a kill
/// -9 and a restart a longer stale pid leaves its tail behind (`1522699` for
/// pid 15226). A pid file that names another process, or a server the
/// daemon started (it inherits the marker), is not taken for the daemon.
#[test]
fn a_pid_file_that_names_another_process_is_not_trusted() {
    let Some(f) = Fixture::new() else { return };
    let k = key(&[GPU_A]);
    let folders = DaemonFolders::new(&f.mps_dir(), &k);
    folders.create(&k).unwrap();
    // A daemon with a "server": a marked child of the marked daemon.
    let program = f.dir.path().join("mps-control").display().to_string();
    let mut daemon = spawn_marked(
        std::path::Path::new("/bin/sh"),
        &["-c", "sleep 600 & exec \"$0\" -f", &program],
        &folders,
    );
    control::ControlProgram::new(&f.dir.path().join("mps-control"))
        .wait_until_answering(&folders, "get_server_list", BOUND, &|| true)
        .unwrap();
    let server = pids_with_env(&format!("{DAEMON_MARKER}={}", folders.root().display()))
        .into_iter()
        .find(|pid| *pid != daemon.id())
        .expect("the marked child");
    for stale in [
        format!("{}99999", daemon.id()),
        std::process::id().to_string(),
        server.to_string(),
    ] {
        gpuslice_cdi::write_atomic(
            &folders.pipe_dir(),
            child::PID_FILE,
            stale.as_bytes(),
            0o644,
        )
        .unwrap();
        // A gpusliced started again: a new manager takes the daemon over.
        let restarted = super::manager(f.dir.path());
        let adopted = restarted
            .acquire("claim-1", &k, &MpsLimits::default())
            .unwrap();
        assert_eq!(adopted.status.pid, Some(daemon.id()), "pid file {stale:?}");
    }
    kill_pid(server);
    let stopped = super::manager(f.dir.path()).cleanup_stale(&[]).unwrap();
    assert_eq!(stopped.len(), 1);
    let status = daemon.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(0),
        "asked to quit, not killed: {status}"
    );
    assert!(pid_alive(std::process::id()));
}

/// A daemon this gpusliced's predecessor started is found by the process it
/// kept in the daemon's folder (pid and start time), with no marker and no
/// pid file of NVIDIA's.
#[test]
fn a_daemon_is_found_again_by_the_process_kept_in_its_folder() {
    let Some(f) = Fixture::new() else { return };
    let k = key(&[GPU_A]);
    let folders = DaemonFolders::new(&f.mps_dir(), &k);
    folders.create(&k).unwrap();
    let program = f.dir.path().join("mps-control");
    let mut daemon = Command::new(&program)
        .arg("-f")
        .env("CUDA_MPS_PIPE_DIRECTORY", folders.pipe_dir())
        .env("CUDA_MPS_LOG_DIRECTORY", folders.log_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    control::ControlProgram::new(&program)
        .wait_until_answering(&folders, "get_server_list", BOUND, &|| true)
        .unwrap();
    std::fs::remove_file(folders.pipe_dir().join(child::PID_FILE)).unwrap();
    crate::supervise::process::ProcessId::of(daemon.id())
        .unwrap()
        .keep(folders.root(), child::KEPT_PROCESS)
        .unwrap();
    let adopted = super::manager(f.dir.path())
        .acquire("claim-1", &k, &MpsLimits::default())
        .unwrap();
    assert_eq!(adopted.status.pid, Some(daemon.id()), "taken over");
    let stopped = super::manager(f.dir.path()).cleanup_stale(&[]).unwrap();
    assert_eq!(stopped.len(), 1);
    let status = daemon.wait().unwrap();
    assert_eq!(status.code(), Some(0), "asked to quit: {status}");
}

/// A container's process may set the marker of a daemon's folder in its own
/// environment: it lives in another pid namespace, so it is neither taken
/// for the daemon nor killed when the stale daemons are stopped.
#[test]
fn a_marked_process_of_another_pid_namespace_is_left_alone() {
    let Some(f) = Fixture::new() else { return };
    if Command::new("unshare")
        .args(["--user", "--pid", "--fork", "true"])
        .status()
        .map_or(true, |s| !s.success())
    {
        eprintln!("SKIP: unshare --user --pid cannot make a pid namespace here");
        return;
    }
    let k = key(&[GPU_A]);
    let folders = DaemonFolders::new(&f.mps_dir(), &k);
    folders.create(&k).unwrap();
    let marker = format!("{DAEMON_MARKER}={}", folders.root().display());
    let mut container = Command::new("unshare")
        .args(["--user", "--pid", "--fork", "env", &marker, "sleep", "600"])
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let began = std::time::Instant::now();
    let forger = loop {
        if let Some(pid) = pids_with_env(&marker).into_iter().next() {
            break pid;
        }
        assert!(
            began.elapsed() < BOUND,
            "the forger never showed its marker"
        );
        std::thread::yield_now();
    };
    f.manager.cleanup_stale(&[]).unwrap();
    assert!(
        pid_alive(forger),
        "a container's process is not gpusliced's to kill"
    );
    kill_pid(forger);
    let _ = container.wait();
}
