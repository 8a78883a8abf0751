//! [`SpecError`], one variant per validation rule, each naming the device
//! (or the spec-level edits) and the field at fault.

use std::fmt;

use crate::name::NameError;
use crate::version::CdiVersion;

/// Whose container edits an error is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EditsOwner {
    /// The spec-level `containerEdits`.
    Spec,
    /// The `containerEdits` of the named device.
    Device(String),
}

impl fmt::Display for EditsOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Spec => f.write_str("spec containerEdits"),
            Self::Device(name) => write!(f, "device {name:?}"),
        }
    }
}

/// A spec the CDI library would reject, or that could not be serialised.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// `cdiVersion` is not one of 0.1.0 to 0.5.0.
    #[error("unknown cdiVersion {declared:?}: this crate knows 0.1.0 to 0.5.0")]
    UnknownVersion {
        /// The declared version.
        declared: String,
    },
    /// `cdiVersion` is lower than the spec's fields need.
    #[error("cdiVersion {declared} is too low: the spec's fields need at least {required}")]
    VersionTooLow {
        /// The declared version.
        declared: CdiVersion,
        /// The minimum the fields need.
        required: CdiVersion,
    },
    /// `cdiVersion` is higher than needed; [`crate::version::finalize`] fixes it.
    #[error("cdiVersion {declared} is higher than the {minimum} the spec needs: finalize it first")]
    NotMinimal {
        /// The declared version.
        declared: CdiVersion,
        /// The minimum the fields need.
        minimum: CdiVersion,
    },
    /// `kind` is not a valid "vendor/class".
    #[error("invalid kind {kind:?}: {error}")]
    Kind {
        /// The declared kind.
        kind: String,
        /// What is wrong with it.
        error: NameError,
    },
    /// `devices` is empty.
    #[error("spec has no devices")]
    NoDevices,
    /// A device name breaks the name rules.
    #[error("invalid device name {name:?}: {error}")]
    DeviceName {
        /// The device name.
        name: String,
        /// What is wrong with it.
        error: NameError,
    },
    /// Two devices share a name.
    #[error("device {name:?} appears more than once")]
    DuplicateDevice {
        /// The repeated name.
        name: String,
    },
    /// A device's `containerEdits` change nothing.
    #[error("device {name:?} has empty containerEdits")]
    EmptyDeviceEdits {
        /// The device name.
        name: String,
    },
    /// An env entry (edits or hook) is not `KEY=VALUE` with a non-empty key.
    #[error("{owner}: invalid env entry {entry:?} in {field}: expected KEY=VALUE")]
    Env {
        /// Whose edits.
        owner: EditsOwner,
        /// "env" or "hooks[].env".
        field: &'static str,
        /// The entry.
        entry: String,
    },
    /// A device node path is empty or relative.
    #[error("{owner}: device node path {path:?} must be absolute")]
    DeviceNodePath {
        /// Whose edits.
        owner: EditsOwner,
        /// The path.
        path: String,
    },
    /// A device node type outside {"", b, c, u, p}.
    #[error("{owner}: device node {path:?} has type {node_type:?}: allowed are b, c, u, p")]
    DeviceNodeType {
        /// Whose edits.
        owner: EditsOwner,
        /// The node path.
        path: String,
        /// The type.
        node_type: String,
    },
    /// Device node permissions with a character outside "rwm".
    #[error(
        "{owner}: device node {path:?} has permissions {permissions:?}: only r, w and m are allowed"
    )]
    Permissions {
        /// Whose edits.
        owner: EditsOwner,
        /// The node path.
        path: String,
        /// The permissions.
        permissions: String,
    },
    /// A mount with an empty `hostPath` or `containerPath`.
    #[error("{owner}: mount has an empty {field}")]
    MountPath {
        /// Whose edits.
        owner: EditsOwner,
        /// "hostPath" or "containerPath".
        field: &'static str,
    },
    /// A hook name outside [`super::HOOK_NAMES`].
    #[error("{owner}: unknown hook name {hook_name:?}")]
    HookName {
        /// Whose edits.
        owner: EditsOwner,
        /// The name.
        hook_name: String,
    },
    /// A hook path that is empty or relative.
    #[error("{owner}: {hook_name} hook path {path:?} must be absolute")]
    HookPath {
        /// Whose edits.
        owner: EditsOwner,
        /// The hook name.
        hook_name: String,
        /// The path.
        path: String,
    },
    /// A hook timeout of zero or less.
    #[error("{owner}: {hook_name} hook timeout {timeout} must be positive")]
    HookTimeout {
        /// Whose edits.
        owner: EditsOwner,
        /// The hook name.
        hook_name: String,
        /// The timeout in seconds.
        timeout: i64,
    },
    /// serde_json failed to serialise the spec.
    #[error("serialise spec: {error}")]
    Serialize {
        /// The serde_json error.
        error: serde_json::Error,
    },
}
