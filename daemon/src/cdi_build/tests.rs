use std::path::{Path, PathBuf};

use super::{ClaimDevice, cdi_device_id, claim_spec, claim_uid_of_spec_file, spec_file_name};
use crate::driver::{DriverFiles, HostPath, MigCaps};

const UID: &str = "0d5f2a1c-3b4e-4f60-8a9b-1c2d3e4f5a6b";

fn hp(container: &str, host: &str) -> HostPath {
    HostPath {
        container: container.to_owned(),
        host: PathBuf::from(host),
    }
}

fn driver(root: &str) -> DriverFiles {
    DriverFiles {
        control_nodes: vec![hp("/dev/nvidiactl", &format!("{root}/dev/nvidiactl"))],
        mounts: vec![hp(
            "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
            &format!("{root}/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
        )],
        library_dirs: vec!["/usr/lib/x86_64-linux-gnu".to_owned()],
        problems: vec![],
        mig_caps: MigCaps::default(),
    }
}

fn gpu(root: &str, n: u32) -> ClaimDevice {
    ClaimDevice {
        name: format!("gpu-{n}"),
        nodes: vec![hp(
            &format!("/dev/nvidia{n}"),
            &format!("{root}/dev/nvidia{n}"),
        )],
        edits: gpuslice_cdi::ContainerEdits::default(),
    }
}

#[test]
fn names_carry_the_claim_uid() {
    assert_eq!(
        cdi_device_id(UID, "gpu-0"),
        format!("k8s.gpuslice.dev/claim={UID}-gpu-0")
    );
    assert_eq!(
        spec_file_name(UID),
        format!("k8s.gpuslice.dev-claim_{UID}.json")
    );
    assert_eq!(claim_uid_of_spec_file(&spec_file_name(UID)), Some(UID));
    assert_eq!(claim_uid_of_spec_file("nvidia.com-gpu.json"), None);
    assert_eq!(
        claim_uid_of_spec_file("k8s.gpuslice.dev-claim_x.yaml"),
        None
    );
}

#[test]
fn one_cdi_device_per_claim_device() {
    let spec = claim_spec(UID, &[gpu("", 0), gpu("", 3)], &driver(""), None);
    assert_eq!(spec.kind, "k8s.gpuslice.dev/claim");
    let names: Vec<_> = spec.devices.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, vec![format!("{UID}-gpu-0"), format!("{UID}-gpu-3")]);
    assert_eq!(
        spec.devices[1].container_edits.device_nodes[0].path,
        "/dev/nvidia3"
    );
}

#[test]
fn host_root_gives_no_host_paths() {
    let spec = claim_spec(UID, &[gpu("", 0)], &driver(""), None);
    let node = &spec.devices[0].container_edits.device_nodes[0];
    assert_eq!(node.host_path, None);
    assert_eq!(spec.container_edits.device_nodes[0].host_path, None);
}

#[test]
fn a_driver_root_elsewhere_sets_host_paths_and_cdi_0_5_0() {
    let spec = claim_spec(
        UID,
        &[gpu("/run/nvidia/driver", 0)],
        &driver("/run/nvidia/driver"),
        None,
    );
    let node = &spec.devices[0].container_edits.device_nodes[0];
    assert_eq!(node.path, "/dev/nvidia0");
    assert_eq!(
        node.host_path.as_deref(),
        Some("/run/nvidia/driver/dev/nvidia0")
    );
    assert_eq!(spec.cdi_version, "0.5.0");
}

#[test]
fn common_edits_mount_driver_files_read_only_and_void_nvidia_runtime() {
    let spec = claim_spec(UID, &[gpu("", 0)], &driver(""), None);
    let edits = &spec.container_edits;
    assert_eq!(
        edits.env,
        vec![
            "NVIDIA_VISIBLE_DEVICES=void".to_owned(),
            format!("GPUSLICE_CLAIM_{}={UID}", UID.replace('-', "_")),
        ]
    );
    assert_eq!(
        edits.mounts[0].container_path,
        "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
    );
    assert!(edits.mounts[0].options.contains(&"ro".to_owned()));
    assert!(edits.mounts[0].options.contains(&"bind".to_owned()));
    assert!(edits.hooks.is_empty());
}

#[test]
fn a_configured_hook_updates_the_ldcache() {
    let spec = claim_spec(
        UID,
        &[gpu("", 0)],
        &driver(""),
        Some(Path::new("/usr/bin/nvidia-cdi-hook")),
    );
    let hook = &spec.container_edits.hooks[0];
    assert_eq!(hook.hook_name, "createContainer");
    assert_eq!(hook.path, "/usr/bin/nvidia-cdi-hook");
    assert_eq!(
        hook.args,
        vec![
            "nvidia-cdi-hook",
            "update-ldcache",
            "--folder",
            "/usr/lib/x86_64-linux-gnu"
        ]
    );
}

#[test]
fn every_device_of_the_claim_brings_the_claim_marker_and_the_spec_validates() {
    let spec = claim_spec(UID, &[gpu("", 0), gpu("", 1)], &driver(""), None);
    let marker =
        "GPUSLICE_CLAIM_0d5f2a1c_3b4e_4f60_8a9b_1c2d3e4f5a6b=0d5f2a1c-3b4e-4f60-8a9b-1c2d3e4f5a6b";
    assert!(spec.container_edits.env.iter().any(|e| e == marker));
    assert!(
        spec.devices.iter().all(|d| !d
            .container_edits
            .env
            .iter()
            .any(|e| e.starts_with("GPUSLICE_CLAIM_"))),
        "spec level only: a device edit would repeat it"
    );
    gpuslice_cdi::validate(&spec).expect("valid spec");
}
