//! Minimum cdiVersion (interim: replaced by the cdi work item).

use crate::Spec;

/// A CDI version this crate can emit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CdiVersion {
    /// 0.3.0
    V0_3_0,
    /// 0.4.0
    V0_4_0,
    /// 0.5.0
    V0_5_0,
}

impl CdiVersion {
    /// "0.3.0" etc.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_3_0 => "0.3.0",
            Self::V0_4_0 => "0.4.0",
            Self::V0_5_0 => "0.5.0",
        }
    }
}

/// The lowest version whose fields cover `spec`.
pub fn minimum_version(spec: &Spec) -> CdiVersion {
    let all_edits = std::iter::once(&spec.container_edits)
        .chain(spec.devices.iter().map(|d| &d.container_edits));
    let mut v = CdiVersion::V0_3_0;
    for edits in all_edits {
        if edits.device_nodes.iter().any(|n| n.host_path.is_some()) {
            v = v.max(CdiVersion::V0_5_0);
        }
        if edits.mounts.iter().any(|m| m.mount_type.is_some()) {
            v = v.max(CdiVersion::V0_4_0);
        }
    }
    if spec
        .devices
        .iter()
        .any(|d| d.name.starts_with(|c: char| c.is_ascii_digit()))
    {
        v = v.max(CdiVersion::V0_5_0);
    }
    v
}
