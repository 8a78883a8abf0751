//! The CDI spec model, field names as in the CDI JSON schema (`specs-go`).
//!
//! Only the fields that exist up to CDI 0.5.0 are modelled: everything newer
//! (annotations, intelRdt, additionalGids, netDevices) would make runtimes
//! that read at most 0.5.0 (podman 4.3, containerd 1.7) reject the whole file.

use serde::{Deserialize, Serialize};

/// A CDI spec file: one vendor/class, one or more devices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The CDI version the file declares.
    #[serde(rename = "cdiVersion")]
    pub cdi_version: String,
    /// "vendor/class", e.g. "k8s.gpuslice.dev/claim".
    pub kind: String,
    /// At least one device.
    pub devices: Vec<Device>,
    /// Edits applied once when any device of this spec is injected.
    #[serde(
        rename = "containerEdits",
        default,
        skip_serializing_if = "ContainerEdits::is_empty"
    )]
    pub container_edits: ContainerEdits,
}

/// One injectable device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    /// The device name (after the `=` of a fully qualified name).
    pub name: String,
    /// Edits for this device; must not be empty.
    #[serde(rename = "containerEdits")]
    pub container_edits: ContainerEdits,
}

/// Changes made to the OCI spec of a container.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContainerEdits {
    /// "KEY=VALUE" entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Device nodes to create in the container.
    #[serde(rename = "deviceNodes", default, skip_serializing_if = "Vec::is_empty")]
    pub device_nodes: Vec<DeviceNode>,
    /// OCI hooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<Hook>,
    /// Mounts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
}

impl ContainerEdits {
    /// True when the edits change nothing.
    pub fn is_empty(&self) -> bool {
        self.env.is_empty()
            && self.device_nodes.is_empty()
            && self.hooks.is_empty()
            && self.mounts.is_empty()
    }
}

/// A device node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceNode {
    /// Path in the container.
    pub path: String,
    /// Path on the host, when it differs from `path` (needs CDI 0.5.0).
    #[serde(rename = "hostPath", default, skip_serializing_if = "Option::is_none")]
    pub host_path: Option<String>,
    /// "c", "b", "u" or "p"; filled in by the runtime from the host node when absent.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub node_type: Option<String>,
    /// Major number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub major: Option<i64>,
    /// Minor number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minor: Option<i64>,
    /// File mode bits.
    #[serde(rename = "fileMode", default, skip_serializing_if = "Option::is_none")]
    pub file_mode: Option<u32>,
    /// Cgroup permissions, a subset of "rwm".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<String>,
    /// Owner uid in the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<u32>,
    /// Owner gid in the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gid: Option<u32>,
}

/// A mount.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    /// Source on the host.
    #[serde(rename = "hostPath")]
    pub host_path: String,
    /// Destination in the container.
    #[serde(rename = "containerPath")]
    pub container_path: String,
    /// OCI mount options, e.g. ["ro", "nosuid", "nodev", "bind"].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Filesystem type (needs CDI 0.4.0).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub mount_type: Option<String>,
}

/// An OCI hook.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hook {
    /// "createContainer", "startContainer", "poststop", ...
    #[serde(rename = "hookName")]
    pub hook_name: String,
    /// Absolute path of the executable on the host.
    pub path: String,
    /// argv, `argv[0]` included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// "KEY=VALUE" entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn minimal() -> Spec {
        Spec {
            cdi_version: "0.3.0".to_owned(),
            kind: "example.com/gpu".to_owned(),
            devices: vec![Device {
                name: "dev0".to_owned(),
                container_edits: ContainerEdits {
                    env: vec!["A=1".to_owned()],
                    ..ContainerEdits::default()
                },
            }],
            container_edits: ContainerEdits::default(),
        }
    }

    fn full() -> Spec {
        let mut spec = minimal();
        spec.cdi_version = "0.5.0".to_owned();
        spec.container_edits.hooks.push(Hook {
            hook_name: "createContainer".to_owned(),
            path: "/bin/hook".to_owned(),
            args: vec!["hook".to_owned(), "-v".to_owned()],
            env: vec!["B=2".to_owned()],
            timeout: Some(10),
        });
        let edits = &mut spec.devices[0].container_edits;
        edits.device_nodes.push(DeviceNode {
            path: "/dev/nvidia0".to_owned(),
            host_path: Some("/dev/nvidia3".to_owned()),
            node_type: Some("c".to_owned()),
            major: Some(195),
            minor: Some(3),
            file_mode: Some(0o666),
            permissions: Some("rw".to_owned()),
            uid: Some(0),
            gid: Some(44),
        });
        edits.mounts.push(Mount {
            host_path: "/run/mps".to_owned(),
            container_path: "/run/mps".to_owned(),
            options: vec!["rw".to_owned(), "bind".to_owned()],
            mount_type: Some("bind".to_owned()),
        });
        spec
    }

    #[test]
    fn minimal_spec_has_exactly_the_required_keys() {
        let value = serde_json::to_value(minimal()).unwrap();
        assert_eq!(
            value,
            json!({
                "cdiVersion": "0.3.0",
                "kind": "example.com/gpu",
                "devices": [{"name": "dev0", "containerEdits": {"env": ["A=1"]}}]
            })
        );
    }

    #[test]
    fn empty_fields_are_omitted() {
        let node = serde_json::to_value(DeviceNode {
            path: "/dev/x".to_owned(),
            ..DeviceNode::default()
        })
        .unwrap();
        assert_eq!(node, json!({"path": "/dev/x"}));
        let mount = serde_json::to_value(Mount {
            host_path: "/a".to_owned(),
            container_path: "/b".to_owned(),
            ..Mount::default()
        })
        .unwrap();
        assert_eq!(mount, json!({"hostPath": "/a", "containerPath": "/b"}));
        let hook = serde_json::to_value(Hook {
            hook_name: "poststop".to_owned(),
            path: "/h".to_owned(),
            ..Hook::default()
        })
        .unwrap();
        assert_eq!(hook, json!({"hookName": "poststop", "path": "/h"}));
        assert_eq!(
            serde_json::to_value(ContainerEdits::default()).unwrap(),
            json!({})
        );
    }

    #[test]
    fn field_names_match_the_schema() {
        let value = serde_json::to_value(full()).unwrap();
        let node = &value["devices"][0]["containerEdits"]["deviceNodes"][0];
        for key in ["path", "hostPath", "type", "major", "minor", "fileMode"] {
            assert!(node.get(key).is_some(), "deviceNodes[0].{key}");
        }
        for key in ["permissions", "uid", "gid"] {
            assert!(node.get(key).is_some(), "deviceNodes[0].{key}");
        }
        let mount = &value["devices"][0]["containerEdits"]["mounts"][0];
        assert_eq!(mount["type"], "bind");
        assert_eq!(mount["containerPath"], "/run/mps");
        let hook = &value["containerEdits"]["hooks"][0];
        assert_eq!(hook["hookName"], "createContainer");
        assert_eq!(hook["timeout"], 10);
    }

    #[test]
    fn json_round_trip() {
        for spec in [minimal(), full()] {
            let text = serde_json::to_string_pretty(&spec).unwrap();
            let back: Spec = serde_json::from_str(&text).unwrap();
            assert_eq!(back, spec);
        }
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let mut value = serde_json::to_value(minimal()).unwrap();
        value["annotations"] = json!({"a": "b"});
        let err = serde_json::from_value::<Spec>(value).unwrap_err();
        assert!(err.to_string().contains("annotations"), "{err}");
        let device: Value = json!({"name": "d", "containerEdits": {"additionalGids": [1]}});
        let err = serde_json::from_value::<Device>(device).unwrap_err();
        assert!(err.to_string().contains("additionalGids"), "{err}");
    }
}
