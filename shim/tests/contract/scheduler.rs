//! The scheduler: gpuslice-selector's allocator (the upstream structured
//! allocator's rules; `selector/src/allocate/` names the upstream function
//! each follows) over the published slices, with the DeviceClasses claims
//! name: the packaged `gpu.nvidia.com` and `mig.nvidia.com`, and a sharing
//! class with an MPS config. It walks devices first fit in slice order, as
//! upstream does, or, for a case that asks, in a seeded random order (the
//! same allocator on the devices shuffled into one slice), so it also finds
//! the other allocations a scheduler could make.

use gpuslice_selector::allocate::{AllocateError, Held, Input, allocate};
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceClass, ResourceClaim, ResourceSliceSpec,
};

use crate::node::DRIVER;

/// The sharing class: whole GPUs gpusliced shares (not MIG-managed), with
/// an MPS config.
pub const SHARED_CLASS: &str = "mps.contract.gpuslice.dev";

/// The MPS config the sharing class carries.
pub const MPS: &str = r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50}}}"#;

fn packaged(text: &str) -> DeviceClass {
    serde_norway::from_str(text).expect("a packaged DeviceClass")
}

/// The classes claims may name.
pub fn classes() -> Vec<DeviceClass> {
    let shared = format!(
        r#"{{"metadata": {{"name": "{SHARED_CLASS}"}}, "spec": {{
            "selectors": [{{"cel": {{"expression": "device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == 'gpu' && !device.attributes['{DRIVER}'].migManaged"}}}}],
            "config": [{{"opaque": {{"driver": "{DRIVER}", "parameters": {MPS}}}}}]}}}}"#
    );
    vec![
        packaged(include_str!(
            "../../../packaging/deviceclasses/gpu.nvidia.com.yaml"
        )),
        packaged(include_str!(
            "../../../packaging/deviceclasses/mig.nvidia.com.yaml"
        )),
        serde_json::from_str(&shared).expect("the sharing class"),
    ]
}

/// The devices of `slices` in a shuffled order, in one slice after the
/// counter sets' slices.
fn shuffled(slices: &[ResourceSliceSpec], rng: &mut fastrand::Rng) -> Vec<ResourceSliceSpec> {
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
    out
}

/// Allocates the claims of one pod against what earlier claims hold; the
/// walk is shuffled when `rng` is given. `None`: no allocation, or one the
/// scheduler refuses (over 32 devices in a claim, an `All` request a
/// constraint splits).
pub fn schedule(
    slices: &[ResourceSliceSpec],
    classes: &[DeviceClass],
    claims: &[ResourceClaim],
    held: &Held,
    rng: Option<&mut fastrand::Rng>,
) -> Option<Vec<AllocationResult>> {
    let input = Input {
        slices: match rng {
            Some(rng) => shuffled(slices, rng),
            None => slices.to_vec(),
        },
        classes: classes.to_vec(),
        claims: claims.to_vec(),
        held: held.clone(),
    };
    match allocate(&input) {
        Ok(found) => found,
        // The scheduler leaves such claims unallocated with this error.
        Err(AllocateError::TooManyDevices { .. } | AllocateError::AllConstrained { .. }) => None,
        Err(e) => panic!("the allocator refused the case: {e}"),
    }
}
