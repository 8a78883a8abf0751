//! Every MPS path of gpusliced with NVIDIA's control daemon: a daemon for
//! two GPUs started with its limits set and read back (the pinned limits by
//! the ordinal the daemon knows each GPU by, which the test reads back
//! itself through NVIDIA's client), a second claim joining it, a second
//! daemon on its folders refused, a kill -9 and the restart with the limits
//! again, a restart of gpusliced taking it over (its pid file left with a
//! stale tail, as NVIDIA's daemon leaves it), and the last unprepare
//! leaving nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;

use super::{SERVER, answered, env_of, node_with, real_control, userspace};
use crate::common::claims::Claims;
use crate::harness::list;
use crate::stand_ins::{SharedDaemon, alive, daemon_of, gpu_config, shared_request};

const A: &str = "a1a1a1a1-0038-4a7b-8c9d-0e1f2a3b4c5d";
const B: &str = "b2b2b2b2-0038-4a7b-8c9d-0e1f2a3b4c5d";
/// Bound for a restart to be seen; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(30);

/// MPS at 50% with a pinned limit per GPU UUID.
fn config(limits: &[(&str, &str)]) -> String {
    let per_device: Vec<String> = limits
        .iter()
        .map(|(uuid, q)| format!(r#""{uuid}":"{q}""#))
        .collect();
    gpu_config(&format!(
        r#"{{"strategy":"MPS","mpsConfig":{{"defaultActiveThreadPercentage":50,"defaultPerDevicePinnedMemoryLimit":{{{}}}}}}}"#,
        per_device.join(",")
    ))
}

/// The daemon serving gpu-1 (and gpu-2).
async fn daemon(node: &SharedDaemon) -> pb::MpsDaemon {
    daemon_of(&node.sharing().await, "gpu-1")
        .cloned()
        .unwrap_or_else(|| panic!("no daemon on gpu-1:\n{}", node.log()))
}

/// The limits the daemon answers for `uuid`, by its ordinal in the daemon's
/// CUDA_VISIBLE_DEVICES, asked with NVIDIA's client.
fn limit_of(program: &Path, daemon: &pb::MpsDaemon, uuid: &str) -> String {
    let visible = env_of(daemon.pid, "CUDA_VISIBLE_DEVICES").expect("the daemon's devices");
    let ordinal = visible
        .split(',')
        .position(|u| u == uuid)
        .unwrap_or_else(|| panic!("{uuid} not in {visible}"));
    answered(
        program,
        Path::new(&daemon.pipe_dir),
        &format!("get_default_device_pinned_mem_limit {ordinal}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one daemon's life, read top to bottom"
)]
async fn real_mps_daemon_under_gpusliced_on_every_path() {
    let test = "real_mps_daemon_under_gpusliced_on_every_path";
    let Some(program) = real_control(test) else {
        return;
    };
    let node = node_with(&program, 3, "");
    let view = node.sharing().await;
    let (u1, u2) = (view.gpus[1].uuid.clone(), view.gpus[2].uuid.clone());
    // 16311 MiB reads back as "15G": the daemon rounds down to whole GiB.
    let mps = config(&[(&u1, "10Gi"), (&u2, "16311Mi")]);
    let mut client = node.client().await;
    client
        .prepare(shared_request(
            A,
            &["gpu-2", "gpu-1"],
            std::slice::from_ref(&mps),
        ))
        .await
        .unwrap_or_else(|e| panic!("prepare A: {e}\n{}", node.log()));
    let first = daemon(&node).await;
    assert_eq!(first.state, "running");
    let pipe = PathBuf::from(&first.pipe_dir);
    let mut sorted = [u1.clone(), u2.clone()];
    sorted.sort();
    assert_eq!(
        env_of(first.pid, "CUDA_VISIBLE_DEVICES"),
        Some(sorted.join(",")),
        "the daemon's devices are the key's, sorted"
    );
    let limits = |d: &pb::MpsDaemon| {
        (
            answered(
                &program,
                Path::new(&d.pipe_dir),
                "get_default_active_thread_percentage",
            ),
            limit_of(&program, d, &u1),
            limit_of(&program, d, &u2),
        )
    };
    let want = ("50.0".to_owned(), "10G".to_owned(), "15G".to_owned());
    assert_eq!(limits(&first), want);
    // Ordinals are positions in the daemon's list, not the GPUs' indices:
    // gpu-2's index holds nothing.
    assert_eq!(
        answered(&program, &pipe, "get_default_device_pinned_mem_limit 2"),
        ""
    );
    // The server is looked up on the daemon's PATH: the package's own first.
    let path = env_of(first.pid, "PATH").expect("the daemon's PATH");
    let root = userspace().join("root/usr");
    assert!(
        path.starts_with(&format!(
            "{}:{}:",
            root.join("bin").display(),
            root.join("sbin").display()
        )),
        "{path}"
    );
    assert!(userspace().join(SERVER).is_file());
    // In the foreground the daemon logs to stdout, which gpusliced keeps.
    let log_file = PathBuf::from(&first.pipe_dir).with_file_name("log/control.log");
    let log = std::fs::read_to_string(&log_file).expect("the daemon's log");
    assert!(
        log.contains(&format!(
            "Starting control daemon using socket {}/control",
            pipe.display()
        )) && log.contains("Cmd:set_default_device_pinned_mem_limit 0 "),
        "{log}"
    );

    // A second claim on the same GPUs and limits joins the daemon.
    client
        .prepare(shared_request(
            B,
            &["gpu-1", "gpu-2"],
            std::slice::from_ref(&mps),
        ))
        .await
        .unwrap_or_else(|e| panic!("prepare B: {e}\n{}", node.log()));
    let joined = daemon(&node).await;
    assert_eq!(
        (joined.pid, joined.claims.clone()),
        (first.pid, vec![A.to_owned(), B.to_owned()])
    );
    let log = std::fs::read_to_string(&log_file).expect("the daemon's log");
    assert_eq!(log.matches("Starting control daemon").count(), 1, "{log}");

    // A second daemon on its folders is refused; the first serves on.
    let second = std::process::Command::new(&program)
        .arg("-f")
        .env_clear()
        .env("CUDA_MPS_PIPE_DIRECTORY", &pipe)
        .env("CUDA_MPS_LOG_DIRECTORY", pipe.with_file_name("log"))
        .output()
        .expect("run a second daemon");
    assert_eq!(second.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&second.stdout).trim_end(),
        "An instance of this daemon is already running"
    );
    assert_eq!(limits(&first), want);

    // kill -9: the supervisor starts it again and sets the limits again.
    gpuslice::claims::mps_daemon::child::kill_pid(first.pid);
    let began = std::time::Instant::now();
    let back = loop {
        let d = daemon(&node).await;
        if d.pid != first.pid && d.state == "running" && d.restarts == 1 {
            break d;
        }
        assert!(
            began.elapsed() < BOUND,
            "the daemon not back within {BOUND:?}: {d:?}\n{}",
            node.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(limits(&back), want, "the limits again after the restart");
    let claims = client
        .list_claims(pb::ListClaimsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(
        claims.claims[0]
            .health_problems
            .join("\n")
            .contains("died and"),
        "{:?}",
        claims.claims[0].health_problems
    );

    // gpusliced restarts and takes the daemon over, whatever its pid file
    // says after the digits of its pid.
    drop(client);
    // Kills the node's daemons when the test ends, however it ends.
    let _reaper = node.reaper();
    let dir = node.stop();
    assert!(alive(back.pid), "the daemon outlives gpusliced");
    let pid_file = pipe.join("nvidia-cuda-mps-control.pid");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&pid_file)
        .and_then(|mut f| {
            std::io::Write::write_all(&mut f, format!("{}99999", back.pid).as_bytes())
        })
        .expect("leave a stale tail");
    let node = SharedDaemon::start_in(dir);
    let adopted = daemon(&node).await;
    assert_eq!(
        (adopted.pid, adopted.state.as_str()),
        (back.pid, "running"),
        "taken over, not started again:\n{}",
        node.log()
    );
    assert_eq!(limits(&adopted), want);

    // The last unprepare: the daemon quits, its folder goes.
    let client = node.client().await;
    client.unprepare_claim(A).await;
    assert!(alive(back.pid), "B still uses it");
    client.unprepare_claim(B).await;
    assert!(!alive(back.pid), "quit");
    assert!(
        list(&node.path().join("run/mps")).is_empty(),
        "nothing left"
    );
    let marker = format!(
        "{}={}",
        gpuslice::claims::mps_daemon::supervisor::DAEMON_MARKER,
        pipe.parent().expect("the daemon's folder").display()
    );
    assert!(gpuslice::claims::mps_daemon::child::pids_with_env(&marker).is_empty());
    let view = node.sharing().await;
    assert!(view.gpus.iter().all(|g| g.compute_mode == "DEFAULT"));
}
