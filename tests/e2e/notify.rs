//! A service manager that stops reading its notify socket (queue full)
//! never stalls gpusliced: claims are still served, and SIGTERM still ends
//! it, with a warning that says why a notification was not sent; a STATUS=
//! line that found no room comes once there is. Found by
//! the load test, whose harness once read the socket only when it waited
//! for something: gpusliced hung in STOPPING=1 after ten STATUS= lines.

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common::claims::Claims;
use crate::harness::{connect, write_config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_notify_socket_nobody_reads_stalls_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), 2, "");
    let notify_path = dir.path().join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("daemon.log"))
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpusliced"))
        .arg("--config")
        .arg(&config)
        .env("NOTIFY_SOCKET", &notify_path)
        .env("GPUSLICE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        let n = notify.recv(&mut buf).expect("READY=1 from gpusliced");
        if String::from_utf8_lossy(&buf[..n])
            .lines()
            .any(|l| l == "READY=1")
        {
            break;
        }
    }

    // From here on the queue is full (the test fills it; the daemon's own
    // STATUS= lines would fill it too, after net.unix.max_dgram_qlen).
    fill(&notify_path);
    let client = connect(&dir.path().join("gpusliced.sock")).await;
    for i in 0..40 {
        let uid = format!("00000000-0000-4000-8000-{i:012}");
        client.prepare_whole(&uid, &["gpu-0"]).await;
        client.unprepare_claim(&uid).await;
    }
    client.prepare_whole(HELD, &["gpu-1"]).await;

    // Room again: the newest line comes without any further change.
    let status = loop {
        let n = notify.recv(&mut buf).expect("the STATUS= line sent again");
        let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
        if let Some(status) = msg.lines().find_map(|l| l.strip_prefix("STATUS=")) {
            break status.to_owned();
        }
    };
    assert!(status.contains(", 1 claims"), "{status}");

    fill(&notify_path);
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap());
    kill(pid, Signal::SIGTERM).unwrap();
    // Not a timing: wait() returns when it exits; before the fix it never did.
    let exit = child.wait().unwrap();
    let log = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap();
    assert_eq!(exit.code(), Some(0), "{log}");
    assert!(
        log.contains("not reading its notify socket") && log.contains("STOPPING=1"),
        "the unsent STOPPING=1 is explained in the log:\n{log}"
    );
}

/// A claim kept while the line is sent again.
const HELD: &str = "00000000-0000-4000-8000-00000000ffff";

/// Sends filler datagrams to the socket at `path` until its queue is full.
fn fill(path: &std::path::Path) {
    let sender = UnixDatagram::unbound().expect("a datagram socket");
    sender.set_nonblocking(true).expect("non-blocking");
    for _ in 0..100_000 {
        match sender.send_to(b"FILLER=1\n", path) {
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(err) => panic!("filling the notify queue: {err}"),
        }
    }
    panic!("the notify queue never filled");
}
