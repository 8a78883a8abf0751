//! The CDI device of a MIG slice: the parent GPU's node plus the two
//! capability nodes (/dev/nvidia-caps/nvidia-capN) that grant access to the
//! GPU instance and the compute instance.

use crate::cdi_build::ClaimDevice;
use crate::driver::{DriverFiles, HostPath, device_node_target, rooted};
use crate::inventory::GpuDevice;
use crate::state::MigSlice;

use crate::claims::error::ClaimError;

/// The CDI device of `slice` on `gpu`, named `cdi_name`.
pub fn claim_device(
    gpu: &GpuDevice,
    slice: &MigSlice,
    cdi_name: &str,
    dev_root: &std::path::Path,
    driver: &DriverFiles,
) -> Result<ClaimDevice, ClaimError> {
    let missing = |path: String| ClaimError::DeviceNodeMissing {
        device: cdi_name.to_owned(),
        path,
    };
    let (Some(gi), Some(ci)) = (slice.gpu_instance, slice.compute_instance) else {
        return Err(missing(format!(
            "MIG slice {} at {} of {} has no instance ids yet",
            slice.profile, slice.start, gpu.name
        )));
    };
    let parent = format!("/dev/nvidia{}", gpu.info.minor);
    let mut nodes = vec![HostPath {
        host: rooted(dev_root, &parent),
        container: parent,
    }];
    let caps = driver
        .mig_cap_nodes(gpu.info.minor, gi, ci)
        .map_err(|err| missing(err.to_string()))?;
    nodes.extend(caps.into_iter().map(|cap| HostPath {
        container: cap.container,
        host: cap.host,
    }));
    for node in &mut nodes {
        if !node.host.exists() {
            return Err(missing(node.host.display().to_string()));
        }
        node.host = device_node_target(std::mem::take(&mut node.host));
    }
    Ok(ClaimDevice {
        name: cdi_name.to_owned(),
        edits: gpuslice_cdi::ContainerEdits::default(),
        nodes,
    })
}
