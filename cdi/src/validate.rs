//! Spec validation: what the CDI Go library (podman 4.3's v0.5.2 up to
//! HEAD) rejects, for the fields the model has, plus [`to_json`], the only
//! way this crate turns a spec into bytes to write.
//!
//! Rules: a known `cdiVersion` no lower than [`minimum_version`]; a valid
//! kind; at least one device; device names valid and unique; each device's
//! edits non-empty; env entries `KEY=VALUE` with a non-empty key; device node
//! paths absolute, types in {"", b, c, u, p}, permissions a subset of "rwm";
//! mounts with both paths set; hook names known, hook paths absolute, hook
//! timeouts positive. Two rules are stricter than Go (absolute device node
//! path, positive hook timeout): runtimes fail on those later anyway.
//!
//! Invariant: [`to_json`] only returns bytes for a spec that passes
//! [`validate`] and declares exactly its minimum version. Pure: no I/O.

use std::collections::HashSet;

use crate::name::{Kind, validate_device_name};
use crate::spec::{ContainerEdits, DeviceNode, Hook, Mount, Spec};
use crate::version::{CdiVersion, minimum_version};

mod error;

pub use error::{EditsOwner, SpecError};

/// Hook names the Go library accepts (`prestart` is deprecated but accepted).
pub const HOOK_NAMES: [&str; 6] = [
    "prestart",
    "createRuntime",
    "createContainer",
    "startContainer",
    "poststart",
    "poststop",
];

/// Device node types the Go library accepts ("" means: take it from the host).
pub const NODE_TYPES: [&str; 5] = ["", "b", "c", "u", "p"];

/// Checks `spec` as the CDI library would when loading it.
pub fn validate(spec: &Spec) -> Result<(), SpecError> {
    let declared = declared_version(spec)?;
    let required = minimum_version(spec);
    if declared < required {
        return Err(SpecError::VersionTooLow { declared, required });
    }
    if let Err(error) = spec.kind.parse::<Kind>() {
        let kind = spec.kind.clone();
        return Err(SpecError::Kind { kind, error });
    }
    if spec.devices.is_empty() {
        return Err(SpecError::NoDevices);
    }
    validate_edits(&spec.container_edits, &EditsOwner::Spec)?;
    let mut seen = HashSet::new();
    for device in &spec.devices {
        let name = &device.name;
        validate_device_name(name).map_err(|error| SpecError::DeviceName {
            name: name.clone(),
            error,
        })?;
        if !seen.insert(name.as_str()) {
            return Err(SpecError::DuplicateDevice { name: name.clone() });
        }
        if device.container_edits.is_empty() {
            return Err(SpecError::EmptyDeviceEdits { name: name.clone() });
        }
        validate_edits(&device.container_edits, &EditsOwner::Device(name.clone()))?;
    }
    Ok(())
}

/// Validates `spec`, checks it declares exactly its minimum version, and
/// returns it as pretty JSON with a trailing newline, ready to write.
pub fn to_json(spec: &Spec) -> Result<Vec<u8>, SpecError> {
    validate(spec)?;
    let declared = declared_version(spec)?;
    let minimum = minimum_version(spec);
    if declared != minimum {
        return Err(SpecError::NotMinimal { declared, minimum });
    }
    let mut bytes =
        serde_json::to_vec_pretty(spec).map_err(|error| SpecError::Serialize { error })?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn declared_version(spec: &Spec) -> Result<CdiVersion, SpecError> {
    CdiVersion::parse(&spec.cdi_version).ok_or_else(|| SpecError::UnknownVersion {
        declared: spec.cdi_version.clone(),
    })
}

fn validate_edits(edits: &ContainerEdits, owner: &EditsOwner) -> Result<(), SpecError> {
    validate_env(&edits.env, owner, "env")?;
    for node in &edits.device_nodes {
        validate_node(node, owner)?;
    }
    for mount in &edits.mounts {
        validate_mount(mount, owner)?;
    }
    for hook in &edits.hooks {
        validate_hook(hook, owner)?;
    }
    Ok(())
}

fn validate_env(env: &[String], owner: &EditsOwner, field: &'static str) -> Result<(), SpecError> {
    match env.iter().find(|e| e.find('=').is_none_or(|i| i == 0)) {
        Some(entry) => Err(SpecError::Env {
            owner: owner.clone(),
            field,
            entry: entry.clone(),
        }),
        None => Ok(()),
    }
}

fn validate_node(node: &DeviceNode, owner: &EditsOwner) -> Result<(), SpecError> {
    let owner = owner.clone();
    let path = node.path.clone();
    if !node.path.starts_with('/') {
        return Err(SpecError::DeviceNodePath { owner, path });
    }
    if let Some(node_type) = &node.node_type
        && !NODE_TYPES.contains(&node_type.as_str())
    {
        let node_type = node_type.clone();
        return Err(SpecError::DeviceNodeType {
            owner,
            path,
            node_type,
        });
    }
    if let Some(permissions) = &node.permissions
        && !permissions.chars().all(|c| matches!(c, 'r' | 'w' | 'm'))
    {
        let permissions = permissions.clone();
        return Err(SpecError::Permissions {
            owner,
            path,
            permissions,
        });
    }
    Ok(())
}

fn validate_mount(mount: &Mount, owner: &EditsOwner) -> Result<(), SpecError> {
    let empty = if mount.host_path.is_empty() {
        "hostPath"
    } else if mount.container_path.is_empty() {
        "containerPath"
    } else {
        return Ok(());
    };
    Err(SpecError::MountPath {
        owner: owner.clone(),
        field: empty,
    })
}

fn validate_hook(hook: &Hook, owner: &EditsOwner) -> Result<(), SpecError> {
    let hook_name = hook.hook_name.clone();
    if !HOOK_NAMES.contains(&hook.hook_name.as_str()) {
        let owner = owner.clone();
        return Err(SpecError::HookName { owner, hook_name });
    }
    if !hook.path.starts_with('/') {
        let (owner, path) = (owner.clone(), hook.path.clone());
        return Err(SpecError::HookPath {
            owner,
            hook_name,
            path,
        });
    }
    if let Some(timeout) = hook.timeout
        && timeout <= 0
    {
        let owner = owner.clone();
        return Err(SpecError::HookTimeout {
            owner,
            hook_name,
            timeout,
        });
    }
    validate_env(&hook.env, owner, "hooks[].env")
}

#[cfg(test)]
mod tests;
