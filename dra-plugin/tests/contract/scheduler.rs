//! The scheduler: gpuslice-selector's allocator (the upstream structured
//! allocator's rules; `selector/src/allocate/` names the upstream function
//! each follows) over the published slices, with the DeviceClasses claims
//! may name: every class gpuslice packages (`packaging/deviceclasses/`, the
//! extended-resource ones included) and a sharing class with an MPS config.
//! It walks devices first fit in slice order, as upstream does, or, for a
//! case that asks, in a seeded random order ([`in_order`]: the devices
//! shuffled into one slice), so it also finds the other allocations a
//! scheduler could make. The real allocator ([`crate::real`]) is handed the
//! same walk.

use std::path::Path;

use gpuslice_selector::allocate::{AllocateError, Held, Input, allocate};
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClass, ResourceClaim, ResourceSliceSpec,
};
use serde::Deserialize;

use crate::node::DRIVER;

/// The sharing class: whole GPUs gpusliced shares (not MIG-managed), with
/// an MPS config.
pub const SHARED_CLASS: &str = "mps.contract.gpuslice.dev";

/// The MPS config the sharing class carries.
pub const MPS: &str = r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50}}}"#;

/// What a scheduler answered for one pod.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Every claim allocated, in order.
    Fits(Vec<AllocationResult>),
    /// The pod does not fit the node (unschedulable).
    No,
    /// The scheduler refuses the claims (its Filter errs), saying why.
    Refused(String),
    /// The search ran past its budget (the selector allocator's step
    /// limit, or the real allocator's, [`crate::real`]), where kube-scheduler
    /// runs into its filter timeout: the pod is not allocated, and where the
    /// other allocator found an answer, that one must prepare.
    GaveUp(String),
}

impl Answer {
    /// The allocations, when the pod fits.
    pub fn allocations(&self) -> Option<&[AllocationResult]> {
        match self {
            Answer::Fits(found) => Some(found),
            Answer::No | Answer::Refused(_) | Answer::GaveUp(_) => None,
        }
    }
}

/// Every DeviceClass in the YAML files under `dir` (several documents a
/// file), in file name order.
fn packaged(dir: &Path, out: &mut Vec<DeviceClass>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            packaged(&path, out);
            continue;
        }
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a packaged DeviceClass file");
        for document in serde_norway::Deserializer::from_str(&text) {
            let class = DeviceClass::deserialize(document)
                .unwrap_or_else(|e| panic!("{}: not a DeviceClass: {e}", path.display()));
            out.push(class);
        }
    }
}

/// The classes claims may name: the packaged ones, then the sharing class.
pub fn classes() -> Vec<DeviceClass> {
    let shared = format!(
        r#"{{"metadata": {{"name": "{SHARED_CLASS}"}}, "spec": {{
            "selectors": [{{"cel": {{"expression": "device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu' && !device.attributes['{DRIVER}'].migManaged"}}}}],
            "config": [{{"opaque": {{"driver": "{DRIVER}", "parameters": {MPS}}}}}]}}}}"#
    );
    let mut classes = Vec::new();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/deviceclasses");
    packaged(&dir, &mut classes);
    classes.push(serde_json::from_str(&shared).expect("the sharing class"));
    classes
}

/// The slices as the scheduler walks them: as published, or (with `rng`)
/// the devices shuffled into one slice after the counter sets' slices, the
/// pool's slice count set to match.
pub fn in_order(
    slices: &[ResourceSliceSpec],
    rng: Option<&mut fastrand::Rng>,
) -> Vec<ResourceSliceSpec> {
    let Some(rng) = rng else {
        return slices.to_vec();
    };
    let mut devices: Vec<_> = slices
        .iter()
        .flat_map(|s| s.devices.iter().flatten().cloned())
        .collect();
    rng.shuffle(&mut devices);
    let mut out: Vec<ResourceSliceSpec> = slices
        .iter()
        .filter(|s| s.devices.as_ref().is_none_or(Vec::is_empty))
        .cloned()
        .collect();
    let mut all = slices.first().cloned().unwrap_or_default();
    all.shared_counters = None;
    all.devices = Some(devices);
    out.push(all);
    let count = i64::try_from(out.len()).unwrap_or(i64::MAX);
    for slice in &mut out {
        slice.pool.resource_slice_count = count;
    }
    out
}

/// Allocates the claims of one pod against what earlier claims hold, the
/// devices walked in the order of `slices` ([`in_order`]).
pub fn schedule(
    slices: &[ResourceSliceSpec],
    classes: &[DeviceClass],
    claims: &[ResourceClaim],
    held: &Held,
) -> Answer {
    let input = Input {
        slices: slices.to_vec(),
        classes: classes.to_vec(),
        claims: claims.to_vec(),
        held: held.clone(),
    };
    match allocate(&input) {
        Ok(Some(found)) => Answer::Fits(found),
        Ok(None) => Answer::No,
        // The scheduler leaves such claims unallocated with this error.
        Err(e @ (AllocateError::TooManyDevices { .. } | AllocateError::AllConstrained { .. })) => {
            Answer::Refused(e.to_string())
        }
        Err(e @ AllocateError::StepLimit(_)) => Answer::GaveUp(e.to_string()),
        Err(e) => panic!("the allocator refused the case: {e}"),
    }
}

/// The selector allocator's problem as JSON, to replay it by hand.
pub fn input_json(
    slices: &[ResourceSliceSpec],
    classes: &[DeviceClass],
    claims: &[ResourceClaim],
    held: &Held,
) -> String {
    let input = Input {
        slices: slices.to_vec(),
        classes: classes.to_vec(),
        claims: claims.to_vec(),
        held: held.clone(),
    };
    serde_json::to_string(&input).unwrap_or_else(|e| format!("(does not serialize: {e})"))
}
