//! A GPU that cannot be read does not take the node down: with the
//! simulator's `device_info` of GPU 1 failing (`GPUSLICE_SIM_FAULTS`), the
//! real gpusliced starts, serves the other GPUs, leaves gpu-1 out of the
//! inventory and reports it (status problems, the health view, gpuslicectl,
//! the systemd status line); a claim prepared on it before stays recorded,
//! cannot be prepared again (UNAVAILABLE) but can be unprepared; a reload
//! keeps serving; once the GPU answers again it is offered again.

use gpuslice_proto::gpuslice::v1 as pb;

use crate::harness::{Daemon, prepare_request, unprepare_request, write_config};

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000d1";
const B: &str = "bbbbbbbb-0000-4000-8000-0000000000d2";
const C: &str = "cccccccc-0000-4000-8000-0000000000d3";
const GPU_1_LOST: (&str, &str) = ("GPUSLICE_SIM_FAULTS", "device_info:fail_gpu=1@gpu_lost");

fn ctl(daemon: &Daemon, args: &[&str]) -> String {
    let out = std::process::Command::new(crate::binaries::gpuslicectl())
        .arg("--socket")
        .arg(&daemon.socket)
        .args(args)
        .output()
        .expect("run gpuslicectl");
    assert!(
        crate::harness::answered(&out.status),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn names(daemon: &Daemon) -> Vec<String> {
    let reply = (daemon.client().await)
        .get_inventory(pb::GetInventoryRequest {})
        .await
        .expect("inventory")
        .into_inner();
    reply.devices.into_iter().map(|d| d.name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_a_gpu_that_cannot_be_read_is_left_out_and_reported() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_config(dir.path(), 3, "");
    let daemon = Daemon::start_in(dir);
    let mut client = daemon.client().await;
    client
        .prepare(prepare_request(A, &["gpu-1"]))
        .await
        .expect("prepare on gpu-1");
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
    let status = client
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status")
        .into_inner();
    assert_eq!(status.gpu_count, 2);
    let problems = status.problems.join("\n");
    assert!(
        problems.contains("gpu-1 (index 1) cannot be read (device info: ")
            && problems.contains("GPU is lost"),
        "{problems}"
    );
    let health = client
        .get_health(pb::GetHealthRequest {})
        .await
        .expect("health")
        .into_inner();
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
    client
        .prepare(prepare_request(B, &["gpu-2"]))
        .await
        .expect("gpu-2 serves");
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
    let gone = client
        .unprepare(unprepare_request(A))
        .await
        .expect("unprepare");
    assert!(gone.into_inner().was_prepared);

    // A reload with the GPU still lost keeps serving without it.
    daemon.reload();
    assert_eq!(names(&daemon).await, ["gpu-0", "gpu-2"]);
    let (status, dir) = daemon.stop();
    assert!(status.success(), "{status:?}");

    // It answers again: offered, nothing about it reported.
    let daemon = Daemon::start_in(dir);
    assert_eq!(names(&daemon).await, ["gpu-0", "gpu-1", "gpu-2"]);
    let mut client = daemon.client().await;
    let status = client
        .get_status(pb::GetStatusRequest {})
        .await
        .expect("status")
        .into_inner();
    let problems = status.problems.join("\n");
    assert!(!problems.contains("cannot be read"), "{problems}");
    assert!(!problems.contains("no longer on this node"), "{problems}");
}
