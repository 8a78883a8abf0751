//! What each claim's container must see inside, against its claim's spec
//! and the node: exactly the spec's device nodes (the numbers of the host
//! nodes behind them), the claim's GPU nodes and no other GPU's, as many MIG
//! capability nodes as a slice has; the claim's marker and no other claim's;
//! the MPS pipe folder, client memory limit and the daemon's shm for the MPS
//! claim and no MPS variable elsewhere; the driver's libraries and binary,
//! read-only, with the host's contents.

use gpuslice_proto::gpuslice::v1::MpsDaemon;
use serde_json::Value;

use super::node::Kind;
use super::probe;
use crate::harness::Daemon;

/// What the container of `kind` printed, against its claim's spec.
pub fn check_container(
    daemon: &Daemon,
    kind: Kind,
    ids: &[String],
    lines: &[String],
    mps: &MpsDaemon,
) {
    let shown = lines.join("\n");
    let spec: Value = serde_json::from_slice(
        &std::fs::read(
            daemon
                .cdi_dir
                .join(format!("k8s.gpuslice.dev-claim_{}.json", kind.uid())),
        )
        .expect("read the spec"),
    )
    .expect("spec JSON");
    let nodes = probe::nodes(lines);
    assert_eq!(
        nodes,
        probe::expected_nodes(&spec, ids),
        "{kind:?}: the container's device nodes are not its claim's:\n{shown}"
    );
    let gpus: Vec<&str> = nodes
        .iter()
        .filter_map(|n| n.strip_prefix("node:")?.split_once(' '))
        .map(|(path, _)| path)
        .filter(|p| {
            p.strip_prefix("/dev/nvidia")
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .collect();
    assert_eq!(gpus, kind.gpu_nodes(), "{kind:?}:\n{shown}");
    let caps = nodes
        .iter()
        .filter(|n| n.contains("/dev/nvidia-caps/"))
        .count();
    assert_eq!(caps, kind.cap_nodes(), "{kind:?}:\n{shown}");

    let env = probe::env(lines);
    let marker = format!(
        "GPUSLICE_CLAIM_{}={}",
        kind.uid().replace('-', "_"),
        kind.uid()
    );
    let claims: Vec<&String> = env
        .iter()
        .filter(|e| e.starts_with("GPUSLICE_CLAIM_"))
        .collect();
    assert_eq!(claims, [&marker], "{kind:?}: the claim marker:\n{shown}");
    assert!(
        env.contains("NVIDIA_VISIBLE_DEVICES=void"),
        "{kind:?}:\n{shown}"
    );
    let mps_env: Vec<&String> = env.iter().filter(|e| e.starts_with("CUDA_MPS_")).collect();
    if kind == Kind::Mps {
        let uuid = mps.uuids.first().expect("the daemon's GPU");
        let pipe = format!("CUDA_MPS_PIPE_DIRECTORY={}", mps.pipe_dir);
        let limit = format!("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={uuid}=20480M");
        assert_eq!(mps_env, [&limit, &pipe], "{shown}");
        for want in [
            "mount:pipe rw",
            "pipe:control",
            "mount:/dev/shm rw",
            "shm:from the daemon's shm",
        ] {
            assert!(
                lines.iter().any(|l| l == want),
                "MPS: no {want:?}:\n{shown}"
            );
        }
    } else {
        assert!(mps_env.is_empty(), "{kind:?}:\n{shown}");
    }

    let host_lib = std::fs::read_to_string(
        daemon
            .dir
            .path()
            .join("driver/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"),
    )
    .expect("the host's stand-in library");
    for want in [
        "mount:/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 ro",
        "mount:/usr/lib/x86_64-linux-gnu/libcuda.so.1 ro",
        "mount:/usr/bin/nvidia-smi ro",
        &format!("lib:{}", host_lib.trim_end()),
    ] {
        assert!(
            lines.iter().any(|l| l == want),
            "{kind:?}: no {want:?}:\n{shown}"
        );
    }
}
