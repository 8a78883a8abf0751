//! The per-claim CDI spec: one file per claim, one CDI device per allocated
//! device, named after the claim uid so a name is never reused.
//!
//! Pure: takes what discovery found and the claim's devices, returns a
//! [`Spec`]. Spec-level edits carry what every GPU container needs (control
//! nodes, driver libraries and binaries, hooks); device-level edits carry the
//! device's own nodes. The spec-level env also carries the claim marker
//! ([`marker`]), so a process of any container the claim's devices went into
//! can be traced back to the claim. Host paths are given only where they
//! differ from the container path, so a node whose driver lives at / gets the
//! lowest cdiVersion.

pub mod marker;

use std::path::Path;

use gpuslice_cdi::version::finalize;
use gpuslice_cdi::{ContainerEdits, Device, DeviceNode, Hook, Mount, Spec};

use crate::driver::{DriverFiles, HostPath};
use marker::claim_env;

/// CDI vendor of every spec the daemon writes.
pub const CDI_VENDOR: &str = "k8s.gpuslice.dev";
/// CDI class of the claim engine's specs.
pub const CDI_CLASS: &str = "claim";

/// A class of spec the daemon writes under [`CDI_VENDOR`], one file per
/// claim: every class names its kind, its files and its devices the same
/// way, each with its own class word, so no class ever takes another's file
/// (the claim engine's reconcile leaves a channel's spec alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecClass {
    class: &'static str,
}

/// The claim engine's specs: `k8s.gpuslice.dev/claim`.
pub const CLAIM_SPECS: SpecClass = SpecClass { class: CDI_CLASS };
/// ComputeDomain channel claims' specs: `k8s.gpuslice.dev/channel`.
pub const CHANNEL_SPECS: SpecClass = SpecClass { class: "channel" };

impl SpecClass {
    /// `k8s.gpuslice.dev/<class>`.
    #[must_use]
    pub fn kind(self) -> String {
        format!("{CDI_VENDOR}/{}", self.class)
    }

    fn file_prefix(self) -> String {
        format!("{CDI_VENDOR}-{}_", self.class)
    }

    /// The spec file name of a claim: `k8s.gpuslice.dev-<class>_<uid>.json`.
    #[must_use]
    pub fn spec_file_name(self, claim_uid: &str) -> String {
        format!("{}{claim_uid}.json", self.file_prefix())
    }

    /// The claim uid a spec file name belongs to, when it is of this class.
    #[must_use]
    pub fn claim_uid_of_spec_file(self, file_name: &str) -> Option<&str> {
        file_name
            .strip_prefix(&self.file_prefix())?
            .strip_suffix(".json")
    }

    /// Whether a file name is the temp file of a spec write of this class
    /// (the atomic writer's `.<spec file>.tmp-<pid>-<n>`), which a crash
    /// between its sync and its rename leaves in the CDI folder.
    #[must_use]
    pub fn is_spec_temp(self, file_name: &str) -> bool {
        gpuslice_cdi::atomic::is_temp_name(file_name)
            && file_name
                .strip_prefix('.')
                .is_some_and(|rest| rest.starts_with(&self.file_prefix()))
    }

    /// The name of `device` of claim `claim_uid` in its spec: `<uid>-<device>`.
    #[must_use]
    pub fn device_name(self, claim_uid: &str, device: &str) -> String {
        format!("{claim_uid}-{device}")
    }

    /// The fully qualified CDI device id of `device` of claim `claim_uid`.
    #[must_use]
    pub fn device_id(self, claim_uid: &str, device: &str) -> String {
        format!("{}={}", self.kind(), self.device_name(claim_uid, device))
    }

    /// A spec of this class with `devices` and the spec-level `edits`, at
    /// the lowest cdiVersion that holds them.
    #[must_use]
    pub fn spec(self, devices: Vec<Device>, edits: ContainerEdits) -> Spec {
        let mut spec = Spec {
            cdi_version: String::new(),
            kind: self.kind(),
            devices,
            container_edits: edits,
        };
        finalize(&mut spec);
        spec
    }
}

/// Options applied to every driver file bind mount.
const MOUNT_OPTIONS: &[&str] = &["ro", "nosuid", "nodev", "bind"];

/// One device of a claim, with the device nodes it brings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimDevice {
    /// The inventory name, e.g. "gpu-0".
    pub name: String,
    /// Its own device nodes, e.g. /dev/nvidia0.
    pub nodes: Vec<HostPath>,
    /// Other edits of its own (env, mounts), e.g. an MPS daemon's pipe dir.
    pub edits: ContainerEdits,
}

/// `k8s.gpuslice.dev/claim`.
pub fn cdi_kind() -> String {
    CLAIM_SPECS.kind()
}

/// The spec file name of a claim: `k8s.gpuslice.dev-claim_<uid>.json`.
pub fn spec_file_name(claim_uid: &str) -> String {
    CLAIM_SPECS.spec_file_name(claim_uid)
}

/// The claim uid a spec file name belongs to, if it is one of the claim
/// engine's.
pub fn claim_uid_of_spec_file(file_name: &str) -> Option<&str> {
    CLAIM_SPECS.claim_uid_of_spec_file(file_name)
}

/// The fully qualified CDI device id of `device` in claim `claim_uid`.
pub fn cdi_device_id(claim_uid: &str, device: &str) -> String {
    CLAIM_SPECS.device_id(claim_uid, device)
}

/// Builds the spec of a claim.
pub fn claim_spec(
    claim_uid: &str,
    devices: &[ClaimDevice],
    driver: &DriverFiles,
    hook: Option<&Path>,
) -> Spec {
    let devices = devices
        .iter()
        .map(|d| Device {
            name: CLAIM_SPECS.device_name(claim_uid, &d.name),
            container_edits: ContainerEdits {
                device_nodes: d.nodes.iter().map(device_node).collect(),
                ..d.edits.clone()
            },
        })
        .collect();
    CLAIM_SPECS.spec(devices, common_edits(claim_uid, driver, hook))
}

fn common_edits(claim_uid: &str, driver: &DriverFiles, hook: Option<&Path>) -> ContainerEdits {
    ContainerEdits {
        env: vec![
            // Keeps nvidia-container-runtime, where it is the default runtime,
            // from injecting GPUs of its own: the claim's devices come from CDI.
            "NVIDIA_VISIBLE_DEVICES=void".to_owned(),
            // Ties the container's GPU processes to the claim (activity sampler).
            claim_env(claim_uid),
        ],
        device_nodes: driver.control_nodes.iter().map(device_node).collect(),
        hooks: hook.map(|h| ldcache_hook(h, driver)).into_iter().collect(),
        mounts: driver.mounts.iter().map(bind_mount).collect(),
    }
}

fn device_node(path: &HostPath) -> DeviceNode {
    let host = path.host.to_string_lossy().into_owned();
    DeviceNode {
        path: path.container.clone(),
        host_path: (host != path.container).then_some(host),
        ..DeviceNode::default()
    }
}

fn bind_mount(path: &HostPath) -> Mount {
    Mount {
        host_path: path.host.to_string_lossy().into_owned(),
        container_path: path.container.clone(),
        options: MOUNT_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
        mount_type: None,
    }
}

fn ldcache_hook(hook: &Path, driver: &DriverFiles) -> Hook {
    let mut args = vec!["nvidia-cdi-hook".to_owned(), "update-ldcache".to_owned()];
    for dir in &driver.library_dirs {
        args.push("--folder".to_owned());
        args.push(dir.clone());
    }
    Hook {
        hook_name: "createContainer".to_owned(),
        path: hook.to_string_lossy().into_owned(),
        args,
        ..Hook::default()
    }
}

#[cfg(test)]
mod tests;
