use super::{ConfigRequest, DeviceRequest, PrepareRequest, validate_uid};
use crate::claims::ClaimError;
use crate::testkit::inventory as fixture_inventory;

const UID: &str = "5b7c1e0a-9f3d-4c2b-8a61-0e4f3d2c1b0a";

fn request() -> PrepareRequest {
    PrepareRequest {
        uid: UID.to_owned(),
        namespace: "team-a".to_owned(),
        name: "train-0".to_owned(),
        devices: vec![DeviceRequest {
            device: "gpu-0".to_owned(),
            request_names: vec!["gpu".to_owned()],
            pool: "node-1".to_owned(),
            consumed_memory: None,
            share_id: String::new(),
        }],
        configs: vec![],
    }
}

fn config(json: &str) -> ConfigRequest {
    ConfigRequest {
        source: crate::opaque::ConfigSource::Claim,
        requests: vec![],
        parameters_json: json.to_owned(),
    }
}

#[test]
fn a_good_request_passes() {
    request().validate(&fixture_inventory(2)).unwrap();
}

#[test]
fn uids_must_be_canonical_uuids() {
    validate_uid(UID).unwrap();
    for bad in [
        "",
        "not-a-uuid",
        "5B7C1E0A-9F3D-4C2B-8A61-0E4F3D2C1B0A",
        "5b7c1e0a9f3d4c2b8a610e4f3d2c1b0a",
        "{5b7c1e0a-9f3d-4c2b-8a61-0e4f3d2c1b0a}",
        "../../etc/passwd",
        "5b7c1e0a-9f3d-4c2b-8a61-0e4f3d2c1b0a/x",
        "5b7c1e0a-9f3d-4c2b-8a61-0e4f3d2c1b0a\0",
    ] {
        let err = validate_uid(bad).unwrap_err();
        assert!(matches!(err, ClaimError::InvalidUid { .. }), "{bad:?}");
    }
}

#[test]
fn huge_uids_are_truncated_in_the_message() {
    let huge = "a".repeat(10 * 1024 * 1024);
    let err = validate_uid(&huge).unwrap_err();
    assert!(err.to_string().len() < 400);
}

#[test]
fn names_with_path_separators_or_nul_are_refused() {
    for (ns, name) in [("a/b", "c"), ("ns", "x\0y"), ("", "c"), ("ns", "UPPER")] {
        let mut r = request();
        r.namespace = ns.to_owned();
        r.name = name.to_owned();
        let err = r.validate(&fixture_inventory(1)).unwrap_err();
        assert!(
            matches!(err, ClaimError::InvalidField { .. }),
            "{ns:?}/{name:?}: {err}"
        );
    }
}

#[test]
fn devices_must_exist_once() {
    let inv = fixture_inventory(2);
    let mut r = request();
    r.devices.clear();
    assert!(matches!(r.validate(&inv), Err(ClaimError::NoDevices)));
    let mut r = request();
    r.devices[0].device = "gpu-9".to_owned();
    let err = r.validate(&inv).unwrap_err();
    assert!(err.to_string().contains("gpu-0, gpu-1"), "{err}");
    let mut r = request();
    r.devices.push(r.devices[0].clone());
    assert!(matches!(
        r.validate(&inv),
        Err(ClaimError::DuplicateDevice { .. })
    ));
}

#[test]
fn gpu_config_without_sharing_is_accepted() {
    let mut r = request();
    r.configs.push(config(
        r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"}"#,
    ));
    r.validate(&fixture_inventory(1)).unwrap();
}

#[test]
fn bad_configs_name_the_problem() {
    let cases = [
        ("not json", "configs[0]"),
        ("[1]", "configs[0]"),
        (
            r#"{"apiVersion":"v1","kind":"GpuConfig"}"#,
            "configs[0].apiVersion",
        ),
        (
            r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"Nope"}"#,
            "configs[0].kind",
        ),
        (
            r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig"}"#,
            "configs[0].kind: kind MigDeviceConfig cannot apply",
        ),
        (
            r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","extra":1}"#,
            "extra",
        ),
    ];
    for (json, want) in cases {
        let mut r = request();
        r.configs.push(config(json));
        let err = r.validate(&fixture_inventory(1)).unwrap_err();
        assert!(matches!(err, ClaimError::Sharing(_)), "{json}: {err}");
        assert!(err.to_string().contains(want), "{json}: {err}");
    }
}

#[test]
fn sharing_configs_resolve_per_device() {
    use crate::state::{DeviceSharing, MpsSharing};
    let mut r = request();
    r.configs.push(config(
        r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50}}}"#,
    ));
    let plan = r.validate(&fixture_inventory(1)).unwrap();
    assert_eq!(
        plan,
        vec![Some(DeviceSharing::Mps(MpsSharing {
            devices: vec!["gpu-0".to_owned()],
            active_thread_percentage: Some(50),
            pinned_memory_limits: std::collections::BTreeMap::new(),
            memory_share: None,
        }))]
    );
}

#[test]
fn consumed_memory_becomes_the_memory_share_of_an_mps_claim() {
    use crate::state::DeviceSharing;
    let mut r = request();
    r.devices[0].consumed_memory = Some(10 << 30);
    r.devices[0].share_id = "0b6f2c4e-7a1d-4e8b-9c3f-5d2a1b0e9f87".to_owned();
    r.configs.push(config(
        r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}"#,
    ));
    let plan = r.validate(&fixture_inventory(1)).unwrap();
    let Some(DeviceSharing::Mps(mps)) = &plan[0] else {
        panic!("{plan:?}");
    };
    assert_eq!(mps.memory_share, Some(10 << 30));
    // An explicit memory share wins over the consumed amount.
    r.configs.push(config(
        r#"{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":"2Gi"}"#,
    ));
    let plan = r.validate(&fixture_inventory(1)).unwrap();
    let Some(DeviceSharing::Mps(mps)) = &plan[0] else {
        panic!("{plan:?}");
    };
    assert_eq!(mps.memory_share, Some(2 << 30));
    // Without MPS the consumed amount is recorded, not enforced.
    r.configs.clear();
    assert_eq!(r.validate(&fixture_inventory(1)).unwrap(), vec![None]);
    for (bytes, want) in [(1, "less than 1Mi"), (1 << 50, "more than the device has")] {
        r.devices[0].consumed_memory = Some(bytes);
        let err = r.validate(&fixture_inventory(1)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("devices[0].consumed_memory_bytes: ") && text.contains(want),
            "{text}"
        );
    }
}

#[test]
fn a_device_in_two_requests_with_different_sharing_is_refused() {
    let mut r = request();
    r.devices[0].request_names = vec!["a".to_owned(), "b".to_owned()];
    let mut ts = config(
        r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"TimeSlicing"}}"#,
    );
    ts.requests = vec!["a".to_owned()];
    r.configs.push(ts);
    let err = r.validate(&fixture_inventory(1)).unwrap_err();
    assert!(err.to_string().contains("satisfies requests"), "{err}");
}

#[test]
fn oversized_config_is_refused() {
    let mut r = request();
    r.configs
        .push(config(&format!("{{\"pad\":\"{}\"}}", "x".repeat(20_000))));
    let err = r.validate(&fixture_inventory(1)).unwrap_err();
    assert!(err.to_string().contains("at most 10240"), "{err}");
}

/// A MIG slice asked of a GPU without MIG is refused for what it is, naming
/// the GPU and what to ask instead; a slice name of a GPU that has MIG, or
/// of no GPU, is an unknown device as before.
#[test]
fn a_slice_of_a_gpu_without_mig_names_the_gpu_and_mig() {
    use crate::config::MigConfig;
    use crate::gpu::sim::{SimBackend, SimModel};
    use crate::inventory::Inventory;
    let backend = SimBackend::new(vec![SimModel::L4_24GB, SimModel::H100_80GB], "test");
    let inventory = Inventory::from_backend(&backend, &MigConfig::default(), &|_, _| {
        crate::mig::Ownership::Foreign
    })
    .unwrap();
    let ask = |device: &str| {
        let mut req = request();
        device.clone_into(&mut req.devices[0].device);
        req.validate(&inventory).unwrap_err()
    };
    let err = ask("gpu-0-mig-1g24gb-0");
    assert!(matches!(err, ClaimError::FeatureMissing(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "gpu-0 is an NVIDIA L4, which has no MIG (NVML: MIG not supported), so \
         gpu-0-mig-1g24gb-0 cannot be had; ask for the whole GPU (DeviceClass gpu.nvidia.com), \
         or share it with MPS or time-slicing (a GpuConfig with sharing.strategy MPS or \
         TimeSlicing)"
    );
    for unknown in ["gpu-1-mig-1g10gb-0", "gpu-7-mig-1g10gb-0"] {
        assert!(
            matches!(ask(unknown), ClaimError::UnknownDevice { .. }),
            "{unknown}"
        );
    }
}
