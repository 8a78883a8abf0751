use super::{ConfigRequest, DeviceRequest, PrepareRequest, validate_uid};
use crate::claims::ClaimError;
use crate::claims::tests::fixture_inventory;

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
        }],
        configs: vec![],
    }
}

fn config(json: &str) -> ConfigRequest {
    ConfigRequest {
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
        ("not json", "not a valid config object"),
        ("[1]", "not a valid config object"),
        (r#"{"apiVersion":"v1","kind":"GpuConfig"}"#, "apiVersion"),
        (
            r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"Nope"}"#,
            "kind \"Nope\"",
        ),
        (
            r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig"}"#,
            "MIG",
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
        assert!(
            matches!(err, ClaimError::BadConfig { index: 0, .. }),
            "{json}: {err}"
        );
        assert!(err.to_string().contains(want), "{json}: {err}");
    }
}

#[test]
fn sharing_is_refused_until_it_is_built() {
    let mut r = request();
    r.configs.push(config(
        r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS"}}"#,
    ));
    let err = r.validate(&fixture_inventory(1)).unwrap_err();
    assert!(
        matches!(err, ClaimError::SharingUnavailable { .. }),
        "{err}"
    );
}

#[test]
fn oversized_config_is_refused() {
    let mut r = request();
    r.configs
        .push(config(&format!("{{\"pad\":\"{}\"}}", "x".repeat(20_000))));
    let err = r.validate(&fixture_inventory(1)).unwrap_err();
    assert!(err.to_string().contains("at most 10240"), "{err}");
}
