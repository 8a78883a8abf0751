//! The CDI device of a whole GPU, exclusive or shared: its device node,
//! `/dev/nvidia<minor>`, from the dev root.

use crate::cdi_build::ClaimDevice;
use crate::claims::error::ClaimError;
use crate::driver::{HostPath, device_node_target, rooted};
use crate::inventory::GpuDevice;

/// The CDI device of a whole GPU: /dev/nvidia<minor> from the dev root. The
/// CDI name uses `cdi_name` (the name the claim was prepared with), so the ids
/// returned to the kubelet never change even if the GPU is renumbered.
pub(super) fn claim_device(
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
