//! The CDI versions this crate knows and the minimum `cdiVersion` a spec needs.
//!
//! [`minimum_version`] ports specs-go's `requiredVersion` for the fields the
//! model has: start at 0.3.0 (`vEarliest`); a mount with a non-empty `type`
//! needs 0.4.0; a device node with a non-empty `hostPath`, or a device name
//! starting with a digit, needs 0.5.0. Fields newer than 0.5.0 are not
//! modelled, so the minimum never exceeds [`CdiVersion::LATEST`].
//!
//! Invariant: after [`finalize`], a spec declares exactly its minimum version,
//! the most compatible choice (podman 4.3 and containerd 1.7 read up to 0.5.0).
//! Pure: no I/O.

use std::fmt;

use crate::spec::{ContainerEdits, Spec};

/// A CDI spec version up to 0.5.0, ordered oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CdiVersion {
    /// 0.1.0 (known, but below the 0.3.0 every spec needs).
    V0_1_0,
    /// 0.2.0 (known, but below the 0.3.0 every spec needs).
    V0_2_0,
    /// 0.3.0, the first tagged spec.
    V0_3_0,
    /// 0.4.0: `mounts[].type`.
    V0_4_0,
    /// 0.5.0: `deviceNodes[].hostPath`, device names starting with a digit.
    V0_5_0,
}

impl CdiVersion {
    /// Every known version, oldest first.
    pub const ALL: [Self; 5] = [
        Self::V0_1_0,
        Self::V0_2_0,
        Self::V0_3_0,
        Self::V0_4_0,
        Self::V0_5_0,
    ];
    /// The lowest version the minimum computation returns (`vEarliest`).
    pub const EARLIEST: Self = Self::V0_3_0;
    /// The newest version this crate writes.
    pub const LATEST: Self = Self::V0_5_0;

    /// "0.3.0" and so on, as written in `cdiVersion`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_1_0 => "0.1.0",
            Self::V0_2_0 => "0.2.0",
            Self::V0_3_0 => "0.3.0",
            Self::V0_4_0 => "0.4.0",
            Self::V0_5_0 => "0.5.0",
        }
    }

    /// Parses a declared `cdiVersion`; a leading `v` is tolerated, as in Go.
    /// `None` for anything unknown, newer versions included.
    pub fn parse(declared: &str) -> Option<Self> {
        let bare = declared.strip_prefix('v').unwrap_or(declared);
        Self::ALL.into_iter().find(|v| v.as_str() == bare)
    }
}

impl fmt::Display for CdiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn all_edits(spec: &Spec) -> impl Iterator<Item = &ContainerEdits> {
    std::iter::once(&spec.container_edits).chain(spec.devices.iter().map(|d| &d.container_edits))
}

fn requires_v0_4_0(spec: &Spec) -> bool {
    all_edits(spec).any(|edits| {
        edits
            .mounts
            .iter()
            .any(|m| m.mount_type.as_deref().is_some_and(|t| !t.is_empty()))
    })
}

fn requires_v0_5_0(spec: &Spec) -> bool {
    let host_path = all_edits(spec).any(|edits| {
        edits
            .device_nodes
            .iter()
            .any(|n| n.host_path.as_deref().is_some_and(|p| !p.is_empty()))
    });
    let digit_first = spec
        .devices
        .iter()
        .any(|d| d.name.starts_with(|c: char| c.is_ascii_digit()));
    host_path || digit_first
}

/// The lowest `cdiVersion` that can express `spec`'s fields.
pub fn minimum_version(spec: &Spec) -> CdiVersion {
    if requires_v0_5_0(spec) {
        CdiVersion::V0_5_0
    } else if requires_v0_4_0(spec) {
        CdiVersion::V0_4_0
    } else {
        CdiVersion::EARLIEST
    }
}

/// Sets `spec.cdi_version` to [`minimum_version`].
pub fn finalize(spec: &mut Spec) {
    spec.cdi_version = minimum_version(spec).as_str().to_owned();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Device, DeviceNode, Mount};

    fn spec(devices: Vec<Device>) -> Spec {
        Spec {
            cdi_version: String::new(),
            kind: "example.com/gpu".to_owned(),
            devices,
            container_edits: ContainerEdits::default(),
        }
    }

    fn device(name: &str, edits: ContainerEdits) -> Device {
        Device {
            name: name.to_owned(),
            container_edits: edits,
        }
    }

    fn env_only() -> ContainerEdits {
        ContainerEdits {
            env: vec!["A=1".to_owned()],
            ..ContainerEdits::default()
        }
    }

    fn mount(mount_type: Option<&str>) -> ContainerEdits {
        ContainerEdits {
            mounts: vec![Mount {
                host_path: "/h".to_owned(),
                container_path: "/c".to_owned(),
                options: vec!["bind".to_owned()],
                mount_type: mount_type.map(str::to_owned),
            }],
            ..ContainerEdits::default()
        }
    }

    fn node(host_path: Option<&str>) -> ContainerEdits {
        ContainerEdits {
            device_nodes: vec![DeviceNode {
                path: "/dev/x".to_owned(),
                host_path: host_path.map(str::to_owned),
                ..DeviceNode::default()
            }],
            ..ContainerEdits::default()
        }
    }

    #[test]
    fn versions_are_ordered_and_named() {
        assert!(CdiVersion::V0_3_0 < CdiVersion::V0_4_0);
        assert!(CdiVersion::V0_4_0 < CdiVersion::V0_5_0);
        assert_eq!(CdiVersion::V0_4_0.to_string(), "0.4.0");
        for v in CdiVersion::ALL {
            assert_eq!(CdiVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(CdiVersion::parse("v0.5.0"), Some(CdiVersion::V0_5_0));
        for unknown in ["0.6.0", "1.0.0", "0.5", "", "abc", "vv0.3.0", " 0.3.0"] {
            assert_eq!(CdiVersion::parse(unknown), None, "{unknown:?}");
        }
    }

    #[test]
    fn base_is_0_3_0() {
        assert_eq!(
            minimum_version(&spec(vec![device("a", env_only())])),
            CdiVersion::V0_3_0
        );
        assert_eq!(
            minimum_version(&spec(vec![device("a", mount(None))])),
            CdiVersion::V0_3_0
        );
        assert_eq!(
            minimum_version(&spec(vec![device("a", node(None))])),
            CdiVersion::V0_3_0
        );
        assert_eq!(minimum_version(&spec(Vec::new())), CdiVersion::V0_3_0);
    }

    #[test]
    fn mount_type_needs_0_4_0() {
        let s = spec(vec![device("a", mount(Some("tmpfs")))]);
        assert_eq!(minimum_version(&s), CdiVersion::V0_4_0);
        // As in Go, an empty type counts as unset.
        let s = spec(vec![device("a", mount(Some("")))]);
        assert_eq!(minimum_version(&s), CdiVersion::V0_3_0);
        // Spec-level edits count too.
        let mut s = spec(vec![device("a", env_only())]);
        s.container_edits = mount(Some("bind"));
        assert_eq!(minimum_version(&s), CdiVersion::V0_4_0);
    }

    #[test]
    fn host_path_needs_0_5_0() {
        let s = spec(vec![device("a", node(Some("/dev/y")))]);
        assert_eq!(minimum_version(&s), CdiVersion::V0_5_0);
        let s = spec(vec![device("a", node(Some("")))]);
        assert_eq!(minimum_version(&s), CdiVersion::V0_3_0);
        let mut s = spec(vec![device("a", mount(Some("tmpfs")))]);
        s.container_edits = node(Some("/dev/y"));
        assert_eq!(minimum_version(&s), CdiVersion::V0_5_0);
    }

    #[test]
    fn digit_first_device_name_needs_0_5_0() {
        let s = spec(vec![device("a", env_only()), device("0", env_only())]);
        assert_eq!(minimum_version(&s), CdiVersion::V0_5_0);
        let s = spec(vec![device("a0", env_only())]);
        assert_eq!(minimum_version(&s), CdiVersion::V0_3_0);
    }

    #[test]
    fn finalize_sets_the_minimum() {
        let mut s = spec(vec![device("a", mount(Some("tmpfs")))]);
        s.cdi_version = "0.5.0".to_owned();
        finalize(&mut s);
        assert_eq!(s.cdi_version, "0.4.0");
    }
}
