//! `sim exec`: the CDI environment a command gets, and its exit codes.

use super::{cdi_env, exit_code};
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
