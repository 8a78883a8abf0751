//! `sim exec`: the CDI environment a command gets, and its exit codes.

use std::path::PathBuf;

use gpuslice::gpu::sim::process_file::SimProcessFile;

use super::{Target, announcement, cdi_env, exit_code};
use gpuslice_cdi::spec::{ContainerEdits, Device, Spec};

fn edits(env: &[&str]) -> ContainerEdits {
    ContainerEdits {
        env: env.iter().map(|e| (*e).to_owned()).collect(),
        ..ContainerEdits::default()
    }
}

#[test]
fn the_spec_env_and_the_chosen_device_env_only() {
    let spec = Spec {
        cdi_version: "0.5.0".into(),
        kind: "k8s.gpuslice.dev/claim".into(),
        devices: vec![
            Device {
                name: "u1-gpu-0".into(),
                container_edits: edits(&["NVIDIA_VISIBLE_DEVICES=GPU-0"]),
            },
            Device {
                name: "u1-gpu-1".into(),
                container_edits: edits(&["NVIDIA_VISIBLE_DEVICES=GPU-1", "A=b=c"]),
            },
        ],
        container_edits: edits(&["GPUSLICE_CLAIM_u1=u1", "BROKEN"]),
    };
    let env = cdi_env(&spec, &["k8s.gpuslice.dev/claim=u1-gpu-1".to_owned()]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    assert_eq!(
        env,
        [
            ("GPUSLICE_CLAIM_u1", "u1"),
            ("NVIDIA_VISIBLE_DEVICES", "GPU-1"),
            ("A", "b=c"),
        ]
    );
}

#[test]
fn exit_codes_pass_through_and_signals_add_128() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;
    assert_eq!(exit_code(ExitStatus::from_raw(3 << 8)), 3);
    assert_eq!(exit_code(ExitStatus::from_raw(0)), 0);
    assert_eq!(exit_code(ExitStatus::from_raw(15)), 143, "SIGTERM");
}

fn target(claim: Option<&str>, device: &str) -> Target {
    Target {
        dir: PathBuf::from("/run/sim"),
        uuid: "GPU-2".into(),
        mps: false,
        env: Vec::new(),
        device: device.into(),
        claim: claim.map(str::to_owned),
    }
}

#[test]
fn the_line_once_running_names_pid_device_claim_and_figures() {
    let mut file = SimProcessFile {
        pid: 1234,
        start_time: None,
        device: "GPU-2".into(),
        memory_bytes: 12 << 30,
        sm_percent: 40,
        mps_client: true,
    };
    let claim = "ml/infer-a (7a1e0c2d-3b4f-4a5e-8c6d-9e0f1a2b3c4d)";
    assert_eq!(
        announcement(&file, &target(Some(claim), "gpu-2")),
        "sim exec: pid 1234 on gpu-2 as claim ml/infer-a \
         (7a1e0c2d-3b4f-4a5e-8c6d-9e0f1a2b3c4d), 12.0 GiB, SM 40%, MPS client"
    );
    file.mps_client = false;
    file.memory_bytes = 2 << 30;
    file.sm_percent = 20;
    assert_eq!(
        announcement(&file, &target(None, "gpu-4")),
        "sim exec: pid 1234 on gpu-4 outside any claim, 2.0 GiB, SM 20%"
    );
}
