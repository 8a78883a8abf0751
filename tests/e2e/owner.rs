//! One owner per node: a gpusliced locks its state dir before it touches a
//! GPU or a record, so a second one (on the same socket or another) exits
//! non-zero naming the state dir and the holder's PID while the first keeps
//! serving; the kernel drops the lock when its holder dies, so a restart
//! after `kill -9` needs no cleaning up.

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;

use crate::common::claims::Claims;
use crate::common::ctl::run_ctl;
use crate::harness::{Daemon, gpusliced_binary, prepare_request, write_config};

/// How long a refused daemon may take to exit (a bound, not a sleep): one
/// that is not refused would serve forever, and the test fails instead of
/// hanging.
const REFUSE_TIMEOUT: Duration = Duration::from_secs(60);

const A: &str = "4a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";
const B: &str = "5a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d";

/// A second config in `dir/<sub>` on one simulated H100, with its own CDI
/// dir and sim hardware (next to its socket, the default), and the socket
/// and state dir given (relative to `dir/<sub>`).
fn second_config(dir: &Path, sub: &str, socket: &str, state_dir: &str) -> std::path::PathBuf {
    let folder = dir.join(sub);
    std::fs::create_dir_all(&folder).expect("second config folder");
    let text = format!(
        "socket = \"{socket}\"\nstate_dir = \"{state_dir}\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"../root\"\n[backend]\nkind = \"sim\"\n[backend.sim]\n\
         gpus = [\"H100-80GB\"]\n"
    );
    gpuslice_cdi::atomic::write_atomic(&folder, "gpuslice.toml", text.as_bytes(), 0o644)
        .expect("write the second config");
    folder.join("gpuslice.toml")
}

/// Runs gpusliced on `config` and waits for it to exit, at most
/// [`REFUSE_TIMEOUT`]; returns its status and stderr. One still running then
/// is killed and the test fails: it was not refused.
fn run_refused(config: &Path) -> (ExitStatus, String) {
    let err_file = tempfile::NamedTempFile::new().expect("stderr file");
    let mut child = Command::new(gpusliced_binary())
        .arg("--config")
        .arg(config)
        .env_remove("NOTIFY_SOCKET")
        .stdout(Stdio::null())
        .stderr(err_file.reopen().expect("reopen the stderr file"))
        .spawn()
        .expect("spawn gpusliced");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let status = match rx.recv_timeout(REFUSE_TIMEOUT) {
        Ok(status) => status.expect("wait for gpusliced"),
        Err(_) => {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid fits"));
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = rx.recv();
            panic!(
                "a second gpusliced on {} was not refused: {}",
                config.display(),
                std::fs::read_to_string(err_file.path()).unwrap_or_default()
            );
        }
    };
    (
        status,
        std::fs::read_to_string(err_file.path()).expect("read the refused daemon's stderr"),
    )
}

/// The message a refused second daemon prints.
fn in_use(state_dir: &Path, pid: u32) -> String {
    format!(
        "gpusliced: state dir {} is in use by another gpusliced (pid {pid}); stop it first \
         (systemctl stop gpusliced) or give this one its own state_dir",
        state_dir.display()
    )
}

/// `gpuslicectl --socket <socket> status`, which must answer.
fn ctl_status(socket: &Path) -> String {
    run_ctl(socket, &["status"]).answered()
}

async fn claim_uids(daemon: &Daemon) -> Vec<String> {
    let claims = (daemon.client().await)
        .list_claims(pb::ListClaimsRequest {})
        .await
        .expect("claims")
        .into_inner();
    let mut uids: Vec<String> = claims
        .claims
        .into_iter()
        .filter_map(|c| c.claim.map(|r| r.uid))
        .collect();
    uids.sort();
    uids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_second_daemon_on_another_socket_and_the_same_state_dir_is_refused() {
    let daemon = Daemon::start(1);
    daemon.client().await.prepare_whole(A, &["gpu-0"]).await;
    let config = second_config(daemon.dir.path(), "second", "gpusliced.sock", "../state");
    let (status, stderr) = run_refused(&config);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&in_use(&daemon.state_dir, daemon.pid())),
        "{stderr}"
    );
    // Said once: not as an ERROR log line and again as a last line.
    assert_eq!(
        stderr.matches("is in use by another gpusliced").count(),
        1,
        "{stderr}"
    );
    let second = daemon.dir.path().join("second");
    assert!(!second.join("gpusliced.sock").exists(), "it never served");
    assert!(
        !second.join("sim-hardware.json").exists(),
        "it stopped before its backend opened a GPU"
    );
    assert!(!second.join("cdi").exists(), "it wrote no CDI spec");
    // The first keeps serving, its claim intact.
    let status = ctl_status(&daemon.socket);
    assert!(status.contains("sim"), "{status}");
    assert_eq!(claim_uids(&daemon).await, vec![A.to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_second_daemon_on_the_same_socket_is_refused() {
    let daemon = Daemon::start(1);
    // Same config: the state dir lock refuses it first.
    let (status, stderr) = run_refused(&daemon.dir.path().join("gpuslice.toml"));
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&in_use(&daemon.state_dir, daemon.pid())),
        "{stderr}"
    );
    // Its own state dir but the same socket: the socket check refuses it.
    let config = second_config(daemon.dir.path(), "own-state", "../gpusliced.sock", "state");
    let (status, stderr) = run_refused(&config);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("already serving"), "{stderr}");
    // The first daemon still answers.
    ctl_status(&daemon.socket);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_restart_after_kill_9_keeps_the_claims() {
    let daemon = Daemon::start(2);
    let first = daemon.client().await.prepare_whole(A, &["gpu-1"]).await;
    let old_pid = daemon.pid();
    let lock = daemon.state_dir.join("gpusliced.lock");
    let dir = daemon.kill9();
    // The dead daemon's PID stays in the file; only the lock was released.
    assert_eq!(
        std::fs::read_to_string(&lock).unwrap(),
        format!("{old_pid}\n")
    );
    let daemon = Daemon::start_in(dir);
    assert_eq!(
        std::fs::read_to_string(&lock).unwrap(),
        format!("{}\n", daemon.pid())
    );
    assert_eq!(
        daemon.cdi_files(),
        vec![format!("k8s.gpuslice.dev-claim_{A}.json")]
    );
    assert_eq!(claim_uids(&daemon).await, vec![A.to_owned()]);
    let mut client = daemon.client().await;
    let again = client.prepare_whole(A, &["gpu-1"]).await;
    assert!(again.already_prepared);
    assert_eq!(first.devices, again.devices);
    let err = client
        .prepare(prepare_request(B, &["gpu-1"]))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition, "{err}");
    // And the restarted daemon is the owner now: a third one is refused.
    let (status, stderr) = run_refused(&daemon.dir.path().join("gpuslice.toml"));
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&in_use(&daemon.state_dir, daemon.pid())),
        "{stderr}"
    );
}

#[test]
fn sim_an_unwritable_state_dir_is_named() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path(), 1, "");
    // A file where the state dir should be: no lock, no start.
    gpuslice_cdi::atomic::write_atomic(dir.path(), "state", b"", 0o644).unwrap();
    let (status, stderr) = run_refused(&dir.path().join("gpuslice.toml"));
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("state dir {}", dir.path().join("state").display())),
        "{stderr}"
    );
    assert!(!dir.path().join("gpusliced.sock").exists());
}
