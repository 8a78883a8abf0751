use super::*;
use crate::spec::Device;
use crate::version::finalize;

fn valid() -> Spec {
    Spec {
        cdi_version: "0.3.0".to_owned(),
        kind: "k8s.gpuslice.dev/claim".to_owned(),
        devices: vec![Device {
            name: "gpu0".to_owned(),
            container_edits: ContainerEdits {
                env: vec!["NVIDIA_VISIBLE_DEVICES=0".to_owned()],
                device_nodes: vec![DeviceNode {
                    path: "/dev/nvidia0".to_owned(),
                    node_type: Some("c".to_owned()),
                    permissions: Some("rw".to_owned()),
                    ..DeviceNode::default()
                }],
                hooks: vec![Hook {
                    hook_name: "createContainer".to_owned(),
                    path: "/usr/bin/hook".to_owned(),
                    args: vec!["hook".to_owned()],
                    env: vec!["X=1".to_owned()],
                    timeout: Some(5),
                }],
                mounts: vec![Mount {
                    host_path: "/run/x".to_owned(),
                    container_path: "/run/x".to_owned(),
                    options: vec!["ro".to_owned(), "bind".to_owned()],
                    mount_type: None,
                }],
            },
        }],
        container_edits: ContainerEdits::default(),
    }
}

/// The edits of [`valid`]'s one device.
fn edits(spec: &mut Spec) -> &mut ContainerEdits {
    &mut spec.devices[0].container_edits
}

/// [`valid`] with `change` made to it, validated.
fn validate_changed(change: impl FnOnce(&mut Spec)) -> Result<(), SpecError> {
    let mut spec = valid();
    change(&mut spec);
    validate(&spec)
}

#[test]
fn valid_spec_passes() {
    validate(&valid()).unwrap();
    validate_changed(|spec| spec.cdi_version = "v0.5.0".to_owned()).unwrap();
}

#[test]
fn unknown_version() {
    for declared in ["0.6.0", "1.0.0", "", "abc"] {
        let err = validate_changed(|spec| spec.cdi_version = declared.to_owned()).unwrap_err();
        assert!(matches!(err, SpecError::UnknownVersion { .. }), "{err}");
    }
}

#[test]
fn version_below_minimum() {
    let mut spec = valid();
    edits(&mut spec).device_nodes[0].host_path = Some("/dev/nvidia1".to_owned());
    let err = validate(&spec).unwrap_err();
    assert!(matches!(
        err,
        SpecError::VersionTooLow {
            declared: CdiVersion::V0_3_0,
            required: CdiVersion::V0_5_0
        }
    ));
    assert_eq!(
        err.to_string(),
        "cdiVersion 0.3.0 is too low: the spec's fields need at least 0.5.0"
    );
    spec.cdi_version = "0.1.0".to_owned();
    edits(&mut spec).device_nodes[0].host_path = None;
    assert!(matches!(
        validate(&spec),
        Err(SpecError::VersionTooLow { .. })
    ));
}

#[test]
fn bad_kind() {
    for kind in [
        "",
        "gpu",
        "/gpu",
        "example.com/",
        "1x.com/gpu",
        "example.com/g.pu",
    ] {
        let err = validate_changed(|spec| spec.kind = kind.to_owned()).unwrap_err();
        assert!(matches!(err, SpecError::Kind { .. }), "{kind:?}: {err}");
    }
}

#[test]
fn no_devices() {
    assert!(matches!(
        validate_changed(|spec| spec.devices.clear()),
        Err(SpecError::NoDevices)
    ));
}

#[test]
fn bad_device_name() {
    let err = validate_changed(|spec| spec.devices[0].name = "gpu/0".to_owned()).unwrap_err();
    assert!(matches!(err, SpecError::DeviceName { .. }));
    assert!(err.to_string().contains("'/' at index 3"), "{err}");
}

#[test]
fn duplicate_device() {
    let err = validate_changed(|spec| spec.devices.push(spec.devices[0].clone())).unwrap_err();
    assert_eq!(err.to_string(), "device \"gpu0\" appears more than once");
}

#[test]
fn empty_device_edits() {
    let err = validate_changed(|spec| spec.devices[0].container_edits = ContainerEdits::default())
        .unwrap_err();
    assert_eq!(err.to_string(), "device \"gpu0\" has empty containerEdits");
}

#[test]
fn bad_env() {
    for entry in ["FOO", "=bar", ""] {
        let err = validate_changed(|spec| edits(spec).env.push(entry.to_owned())).unwrap_err();
        assert!(
            matches!(&err, SpecError::Env { field: "env", entry: e, .. } if e == entry),
            "{err}"
        );
    }
    let mut spec = valid();
    spec.container_edits.env.push("FOO".to_owned());
    let err = validate(&spec).unwrap_err();
    assert_eq!(
        err.to_string(),
        "spec containerEdits: invalid env entry \"FOO\" in env: expected KEY=VALUE"
    );
}

#[test]
fn device_node_path_must_be_absolute() {
    for path in ["", "dev/nvidia0"] {
        let err = validate_changed(|spec| edits(spec).device_nodes[0].path = path.to_owned())
            .unwrap_err();
        assert!(matches!(err, SpecError::DeviceNodePath { .. }), "{err}");
    }
}

#[test]
fn device_node_type() {
    for ok in ["", "b", "c", "u", "p"] {
        validate_changed(|spec| edits(spec).device_nodes[0].node_type = Some(ok.to_owned()))
            .unwrap();
    }
    let err = validate_changed(|spec| edits(spec).device_nodes[0].node_type = Some("q".to_owned()))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "device \"gpu0\": device node \"/dev/nvidia0\" has type \"q\": allowed are b, c, u, p"
    );
}

#[test]
fn device_node_permissions() {
    for ok in ["", "r", "rwm", "mwr"] {
        validate_changed(|spec| edits(spec).device_nodes[0].permissions = Some(ok.to_owned()))
            .unwrap();
    }
    for bad in ["rwx", "none", "RW"] {
        let err =
            validate_changed(|spec| edits(spec).device_nodes[0].permissions = Some(bad.to_owned()))
                .unwrap_err();
        assert!(
            matches!(err, SpecError::Permissions { .. }),
            "{bad:?}: {err}"
        );
    }
}

#[test]
fn mount_paths_must_be_set() {
    let err = validate_changed(|spec| edits(spec).mounts[0].host_path.clear()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "device \"gpu0\": mount has an empty hostPath"
    );
    let err = validate_changed(|spec| edits(spec).mounts[0].container_path.clear()).unwrap_err();
    assert!(matches!(
        err,
        SpecError::MountPath {
            field: "containerPath",
            ..
        }
    ));
    // Relative mount paths are accepted, as by the Go library.
    validate_changed(|spec| edits(spec).mounts[0].host_path = "relative".to_owned()).unwrap();
}

#[test]
fn hook_names() {
    for name in HOOK_NAMES {
        validate_changed(|spec| edits(spec).hooks[0].hook_name = name.to_owned()).unwrap();
    }
    for name in ["", "preStart", "bogus"] {
        let err =
            validate_changed(|spec| edits(spec).hooks[0].hook_name = name.to_owned()).unwrap_err();
        assert!(matches!(err, SpecError::HookName { .. }), "{name:?}: {err}");
    }
}

#[test]
fn hook_path_must_be_absolute() {
    for path in ["", "bin/hook"] {
        let err = validate_changed(|spec| edits(spec).hooks[0].path = path.to_owned()).unwrap_err();
        assert!(matches!(err, SpecError::HookPath { .. }), "{err}");
    }
}

#[test]
fn hook_timeout_and_env() {
    let err = validate_changed(|spec| edits(spec).hooks[0].timeout = Some(0)).unwrap_err();
    assert!(matches!(err, SpecError::HookTimeout { timeout: 0, .. }));
    let err = validate_changed(|spec| edits(spec).hooks[0].env = vec!["NOEQUALS".to_owned()])
        .unwrap_err();
    assert!(matches!(
        err,
        SpecError::Env {
            field: "hooks[].env",
            ..
        }
    ));
}

#[test]
fn to_json_validates_and_ends_with_newline() {
    let bytes = to_json(&valid()).unwrap();
    assert_eq!(bytes.last(), Some(&b'\n'));
    let back: Spec = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(back, valid());

    let mut spec = valid();
    spec.devices.clear();
    assert!(matches!(to_json(&spec), Err(SpecError::NoDevices)));
}

#[test]
fn to_json_requires_the_minimum_version() {
    let mut spec = valid();
    spec.cdi_version = "0.5.0".to_owned();
    validate(&spec).unwrap();
    let err = to_json(&spec).unwrap_err();
    assert!(matches!(
        err,
        SpecError::NotMinimal {
            declared: CdiVersion::V0_5_0,
            minimum: CdiVersion::V0_3_0
        }
    ));
    finalize(&mut spec);
    to_json(&spec).unwrap();
}
