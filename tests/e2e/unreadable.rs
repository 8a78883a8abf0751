//! A GPU that cannot be read does not take the node down: with the
//! simulator's `device_info` of GPU 1 failing (`GPUSLICE_SIM_FAULTS`), the
//! real gpusliced starts, serves the other GPUs, leaves gpu-1 out of the
//! inventory and reports it (status problems, the health view, gpuslicectl,
//! the systemd status line); a claim prepared on it before stays recorded,
//! cannot be prepared again (UNAVAILABLE) but can be unprepared; a reload
//! keeps serving; once the GPU answers again it is offered again.

use crate::common::claims::Claims;
use crate::common::ctl::run_ctl;
use crate::common::queries::Queries;
use crate::harness::{Daemon, prepare_request};

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000d1";
const B: &str = "bbbbbbbb-0000-4000-8000-0000000000d2";
const C: &str = "cccccccc-0000-4000-8000-0000000000d3";
const GPU_1_LOST: (&str, &str) = ("GPUSLICE_SIM_FAULTS", "device_info:fail_gpu=1@gpu_lost");

/// gpuslicectl's stdout, which must answer.
fn ctl(daemon: &Daemon, args: &[&str]) -> String {
    run_ctl(&daemon.socket, args).answered()
}

async fn names(daemon: &Daemon) -> Vec<String> {
    let reply = daemon.client().await.inventory().await;
    reply.devices.into_iter().map(|d| d.name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_gpu_that_cannot_be_read_is_left_out_and_reported() {
    let daemon = Daemon::start(3);
    let client = daemon.client().await;
    client.prepare_whole(A, &["gpu-1"]).await;
    let (_, dir) = daemon.stop();

    let daemon = Daemon::start_with_env(dir, &[GPU_1_LOST]);
    assert!(
        daemon.ready_status.contains("serving 2 GPUs"),
        "{}",
        daemon.ready_status
    );
    assert!(
        daemon.ready_status.contains("1 unreadable"),
        "{}",
        daemon.ready_status
    );
    assert_eq!(names(&daemon).await, ["gpu-0", "gpu-2"]);
    let mut client = daemon.client().await;
    let status = client.status().await;
    assert_eq!(status.gpu_count, 2);
    let problems = status.problems.join("\n");
    assert!(
        problems.contains("gpu-1 (index 1) cannot be read (device info: ")
            && problems.contains("GPU is lost"),
        "{problems}"
    );
    let health = client.health().await;
    let [gpu1] = health.unhealthy.as_slice() else {
        panic!("{:?}", health.unhealthy);
    };
    assert_eq!(gpu1.device, "gpu-1");
    assert_eq!(gpu1.claims, vec![A.to_owned()]);
    assert!(gpu1.reason.contains("cannot be read"), "{}", gpu1.reason);
    let shown = ctl(&daemon, &["health"]);
    assert!(shown.contains("gpu-1") && shown.contains(A), "{shown}");
    assert!(ctl(&daemon, &["status"]).contains("cannot be read"));

    // The other GPUs are served; the lost one's claim is not, but can go.
    client.prepare_whole(B, &["gpu-2"]).await;
    let again = client
        .prepare(prepare_request(A, &["gpu-1"]))
        .await
        .unwrap_err();
    assert_eq!(again.code(), tonic::Code::Unavailable, "{again:?}");
    assert!(
        again.message().contains("no longer on this node"),
        "{again:?}"
    );
    let new = client
        .prepare(prepare_request(C, &["gpu-1"]))
        .await
        .unwrap_err();
    assert_eq!(new.code(), tonic::Code::InvalidArgument, "{new:?}");
    let gone = client.unprepare_claim(A).await;
    assert!(gone.was_prepared);

    // A reload with the GPU still lost keeps serving without it.
    daemon.reload();
    assert_eq!(names(&daemon).await, ["gpu-0", "gpu-2"]);
    let (status, dir) = daemon.stop();
    assert!(status.success(), "{status:?}");

    // It answers again: offered, nothing about it reported.
    let daemon = Daemon::start_in(dir);
    assert_eq!(names(&daemon).await, ["gpu-0", "gpu-1", "gpu-2"]);
    let status = daemon.client().await.status().await;
    let problems = status.problems.join("\n");
    assert!(!problems.contains("cannot be read"), "{problems}");
    assert!(!problems.contains("no longer on this node"), "{problems}");
}
