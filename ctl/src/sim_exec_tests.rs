//! `sim exec`: the CDI environment a command gets, and its exit codes.

use std::path::PathBuf;

use gpuslice_sim_files::SimProcessFile;

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

/// `sim exec`'s options on their own.
#[derive(Debug, clap::Parser)]
struct Exec {
    #[command(flatten)]
    args: super::SimExecArgs,
}

/// `--memory TEXT` as clap reads it: the bytes, or the error's words.
fn memory(text: &str) -> Result<u64, String> {
    use clap::Parser;
    let memory = format!("--memory={text}");
    Exec::try_parse_from(["exec", "--claim", "u", &memory, "--", "true"])
        .map(|exec| exec.args.memory)
        .map_err(|err| err.to_string())
}

#[test]
fn memory_is_a_kubernetes_quantity() {
    assert_eq!(memory("4G"), Ok(4_000_000_000));
    assert_eq!(memory("4Gi"), Ok(4 << 30));
    assert_eq!(memory("512M"), Ok(512_000_000));
    assert_eq!(memory("512Mi"), Ok(512 << 20));
    assert_eq!(memory("1.5Gi"), Ok(3 << 29));
    assert_eq!(memory("1073741824"), Ok(1 << 30));
    use clap::Parser;
    let default = Exec::try_parse_from(["exec", "--claim", "u", "--", "true"]).expect("parses");
    assert_eq!(default.args.memory, 1 << 30, "the default is 1Gi");
}

#[test]
fn memory_in_another_spelling_is_refused_saying_what_to_write() {
    let refused = memory("4GiB").expect_err("4GiB is no quantity");
    assert!(
        refused.contains("\"4GiB\" is not a Kubernetes quantity: write 4Gi"),
        "{refused}"
    );
    let refused = memory("4GB").expect_err("4GB is no quantity");
    assert!(
        refused.contains("write 4G (G is 10^9) or 4Gi (Gi is 2^30)"),
        "{refused}"
    );
    let refused = memory("-1Gi").expect_err("negative");
    assert!(refused.contains("is negative"), "{refused}");
}
