//! Exclusive (whole-GPU) access: the claim gets the GPU's device node and no
//! other claim may hold the GPU. No hardware step is needed, so prepare is one
//! spec write and one record write, and there is nothing to roll back on the
//! GPU.

use crate::cdi_build::ClaimDevice;
use crate::driver::{HostPath, device_node_target, rooted};
use crate::inventory::GpuDevice;

use super::error::ClaimError;

/// The CDI device of a whole GPU: /dev/nvidia<minor> from the dev root. The
/// CDI name uses `cdi_name` (the name the claim was prepared with), so the ids
/// returned to the kubelet never change even if the GPU is renumbered.
pub fn claim_device(
    gpu: &GpuDevice,
    cdi_name: &str,
    dev_root: &std::path::Path,
) -> Result<ClaimDevice, ClaimError> {
    let container = format!("/dev/nvidia{}", gpu.info.minor);
    let host = rooted(dev_root, &container);
    if !host.exists() {
        return Err(ClaimError::DeviceNodeMissing {
            device: gpu.name.clone(),
            path: host.display().to_string(),
        });
    }
    Ok(ClaimDevice {
        name: cdi_name.to_owned(),
        edits: gpuslice_cdi::ContainerEdits::default(),
        nodes: vec![HostPath {
            container,
            host: device_node_target(host),
        }],
    })
}
