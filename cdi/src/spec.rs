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
    /// argv, argv[0] included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// "KEY=VALUE" entries.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
}
