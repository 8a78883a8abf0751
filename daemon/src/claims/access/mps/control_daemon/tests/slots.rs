//! A daemon that is starting or stopping holds up only its own key: the
//! list of daemons (ListClaims, GetSharing, metrics, a re-prepare on another
//! GPU) answers at once. Found by the load test, where a slow start of one
//! daemon stalled every ListClaims and GetSharing for seconds.
//!
//! The stand-in's start is held at a gate (two FIFOs) so the test knows the
//! start is under way, with no sleep.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use crate::claims::mps_daemon::*;

const GPU_A: &str = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
const BOUND: Duration = Duration::from_secs(30);

/// A control program whose daemon (`-f`) says "started" on one FIFO, then
/// waits for a line on another before it runs the stand-in.
fn gated_program(dir: &Path) -> PathBuf {
    let fake = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/tools/fake-mps-control");
    for fifo in ["started", "gate"] {
        nix::unistd::mkfifo(&dir.join(fifo), nix::sys::stat::Mode::S_IRWXU).unwrap();
    }
    let body = format!(
        "#!/bin/sh\nif [ \"$1\" = \"-f\" ]; then echo started > {d}/started; read go < {d}/gate; fi\n\
         exec {fake} \"$@\"\n",
        d = dir.display(),
        fake = fake.display()
    );
    gpuslice_cdi::write_atomic(dir, "mps-control", body.as_bytes(), 0o755).unwrap();
    dir.join("mps-control")
}

#[test]
fn sim_listing_daemons_does_not_wait_for_one_that_is_starting() {
    if super::python3_missing() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let program = gated_program(dir.path());
    let manager = Arc::new(MpsManager::new(
        MpsSettings {
            control_program: program.clone(),
            mps_dir: dir.path().join("run/mps"),
            ready_bound: BOUND,
            bind_shm: false,
        },
        Arc::new(ChildSupervisor::default()),
        Arc::new(ControlProgram::new(&program)),
        Arc::new(NoShmMount),
    ));
    let key = MpsKey::new([GPU_A]);
    let starting = {
        let (manager, key) = (manager.clone(), key.clone());
        std::thread::spawn(move || manager.acquire("claim-1", &key, &MpsLimits::default()))
    };
    // The daemon's start is under way once it says so.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("started")).unwrap(),
        "started\n"
    );
    let (tx, rx) = mpsc::channel();
    {
        let manager = manager.clone();
        std::thread::spawn(move || tx.send(manager.daemons().len()));
    }
    let listed = rx.recv_timeout(BOUND);
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("gate"))
        .and_then(|mut gate| std::io::Write::write_all(&mut gate, b"go\n"))
        .unwrap();
    let daemon = starting.join().unwrap().unwrap();
    assert_eq!(
        listed,
        Ok(0),
        "the list answered while the start was under way"
    );
    assert_eq!(daemon.claims, ["claim-1"]);
    assert_eq!(manager.daemons().len(), 1, "listed once ready");
    assert_eq!(manager.release("claim-1", &key).unwrap(), Released::Stopped);
    assert!(manager.daemons().is_empty());
}
