//! NVIDIA's control daemon for a MIG slice (the slice alone in its
//! `CUDA_VISIBLE_DEVICES`, so device 0 for its pinned limit), and the
//! server it starts found beside the configured control program, not on the
//! host's PATH.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{answered, env_of, node_with, real_control};
use crate::common::claims::Claims;
use crate::common::devices::slice_of_profile;
use crate::common::queries::Queries;
use crate::harness::list;
use crate::stand_ins::{alive, daemon_of, mps, shared_request};

const S: &str = "c3c3c3c3-0038-4a7b-8c9d-0e1f2a3b4c5d";
const T: &str = "d4d4d4d4-0038-4a7b-8c9d-0e1f2a3b4c5d";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_mps_daemon_on_a_mig_slice() {
    let test = "real_mps_daemon_on_a_mig_slice";
    let Some(program) = real_control(test) else {
        return;
    };
    let mig = "[mig]\n[[mig.gpu]]\nindex = 1\nlayout = [\"3g.40gb\"]\n";
    let node = node_with(&program, 2, mig);
    let mut client = node.client().await;
    let slice = slice_of_profile(&client.inventory().await, "3g.40gb");
    let config = r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":25,"defaultPinnedDeviceMemoryLimit":"8Gi"}}}"#;
    client
        .prepare(shared_request(S, &[&slice], &[config.to_owned()]))
        .await
        .unwrap_or_else(|e| panic!("prepare: {e}\n{}", node.log()));
    let daemon = daemon_of(&node.sharing().await, "gpu-1")
        .cloned()
        .expect("the slice's daemon");
    let visible = env_of(daemon.pid, "CUDA_VISIBLE_DEVICES").expect("its devices");
    assert!(
        visible.starts_with("MIG-") && !visible.contains(','),
        "{visible}"
    );
    assert_eq!(daemon.uuids, [visible]);
    let pipe = Path::new(&daemon.pipe_dir);
    assert_eq!(
        answered(&program, pipe, "get_default_active_thread_percentage"),
        "25.0"
    );
    assert_eq!(
        answered(&program, pipe, "get_default_device_pinned_mem_limit 0"),
        "8G"
    );
    client.unprepare_claim(S).await;
    assert!(!alive(daemon.pid));
    assert!(list(&node.path().join("run/mps")).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_mps_server_is_started_from_beside_the_control_program() {
    let test = "real_mps_server_is_started_from_beside_the_control_program";
    let Some(program) = real_control(test) else {
        return;
    };
    // A driver root of its own: usr/bin/nvidia-cuda-mps-control (NVIDIA's,
    // linked) and usr/sbin/nvidia-cuda-mps-server, a stand-in that says it
    // ran. Neither is on the host's PATH.
    let driver = tempfile::tempdir().expect("temp dir");
    let bin = driver.path().join("usr/bin");
    let sbin = driver.path().join("usr/sbin");
    for dir in [&bin, &sbin] {
        std::fs::create_dir_all(dir).expect("driver folders");
    }
    let control = bin.join("nvidia-cuda-mps-control");
    std::os::unix::fs::symlink(&program, &control).expect("link the control program");
    let started = driver.path().join("server-started");
    let server = format!(
        "#!/bin/sh\nenv >{}.tmp && mv {0}.tmp {0}\n",
        started.display()
    );
    gpuslice_cdi::write_atomic(&sbin, "nvidia-cuda-mps-server", server.as_bytes(), 0o755)
        .expect("the stand-in server");
    let node = node_with(&control, 1, "");
    let mut client = node.client().await;
    client
        .prepare(shared_request(T, &["gpu-0"], &[mps(50)]))
        .await
        .unwrap_or_else(|e| panic!("prepare: {e}\n{}", node.log()));
    let daemon = daemon_of(&node.sharing().await, "gpu-0")
        .cloned()
        .expect("the daemon");
    let pipe = PathBuf::from(&daemon.pipe_dir);
    answered(&program, &pipe, "start_server -uid 0");
    let ran = gpuslice::claims::mps_daemon::control::wait_on_dir(
        driver.path(),
        Duration::from_secs(30),
        &|| Ok(started.exists()),
    )
    .unwrap();
    assert!(
        ran,
        "no server started from {}:\n{}",
        sbin.display(),
        node.log()
    );
    let env = std::fs::read_to_string(&started).expect("the server's environment");
    assert!(
        env.lines()
            .any(|l| l == format!("CUDA_MPS_PIPE_DIRECTORY={}", pipe.display())),
        "the daemon's own server: {env}"
    );
    client.unprepare_claim(T).await;
    assert!(!alive(daemon.pid));
}
