//! A channel claim's CDI spec: kind `k8s.gpuslice.dev/channel`, one file
//! per claim (`k8s.gpuslice.dev-channel_<uid>.json`, a name the GPU claims'
//! reconcile never takes for its own), one device `<uid>-channel` whose
//! edits are the claim's channel device nodes
//! (`/dev/nvidia-caps-imex-channels/channel<id>`, character devices of the
//! driver's major, minor the id, mode 0666). Named and built by the claim
//! engine's spec rules ([`crate::cdi_build::SpecClass`]) with the class
//! `channel`. Pure.

use std::path::Path;

use gpuslice_cdi::{ContainerEdits, Device, DeviceNode, Spec};
use gpuslice_imex::channels::{DEVICE_MODE, channel_path};

use crate::cdi_build::CHANNEL_SPECS;

/// The one device of a channel claim's spec.
const DEVICE: &str = "channel";

/// The spec file name of a channel claim.
pub fn spec_file_name(claim_uid: &str) -> String {
    CHANNEL_SPECS.spec_file_name(claim_uid)
}

/// The claim uid a spec file name belongs to, when it is a channel claim's.
pub fn claim_uid_of_spec_file(file_name: &str) -> Option<&str> {
    CHANNEL_SPECS.claim_uid_of_spec_file(file_name)
}

/// Whether a file name is the temp file of a channel claim's spec write.
pub fn is_spec_temp(file_name: &str) -> bool {
    CHANNEL_SPECS.is_spec_temp(file_name)
}

/// The fully qualified CDI device id of a channel claim.
pub fn cdi_device_id(claim_uid: &str) -> String {
    CHANNEL_SPECS.device_id(claim_uid, DEVICE)
}

/// The spec of claim `claim_uid` with `channels`, their nodes under
/// `dev_root`, of `major` when the driver registers one.
pub fn channel_spec(
    claim_uid: &str,
    channels: &[u32],
    dev_root: &Path,
    major: Option<u32>,
) -> Spec {
    let nodes = channels
        .iter()
        .map(|id| {
            let path = channel_path(*id);
            let host = dev_root.join(path.trim_start_matches('/'));
            let host = host.to_string_lossy().into_owned();
            DeviceNode {
                host_path: (host != path).then_some(host),
                path,
                node_type: major.map(|_| "c".to_owned()),
                major: major.map(i64::from),
                minor: major.map(|_| i64::from(*id)),
                file_mode: Some(DEVICE_MODE),
                permissions: Some("rw".to_owned()),
                ..DeviceNode::default()
            }
        })
        .collect();
    let device = Device {
        name: CHANNEL_SPECS.device_name(claim_uid, DEVICE),
        container_edits: ContainerEdits {
            device_nodes: nodes,
            ..ContainerEdits::default()
        },
    };
    CHANNEL_SPECS.spec(vec![device], ContainerEdits::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "0b4c9f3e-1111-4a2b-8c3d-0123456789ab";

    #[test]
    fn a_channel_spec_holds_its_channel_nodes_and_validates() {
        let spec = channel_spec(UID, &[3], Path::new("/sim/root"), Some(235));
        gpuslice_cdi::validate::validate(&spec).expect("valid");
        assert_eq!(spec.kind, "k8s.gpuslice.dev/channel");
        let node = &spec.devices[0].container_edits.device_nodes[0];
        assert_eq!(node.path, "/dev/nvidia-caps-imex-channels/channel3");
        assert_eq!(
            node.host_path.as_deref(),
            Some("/sim/root/dev/nvidia-caps-imex-channels/channel3")
        );
        assert_eq!((node.major, node.minor), (Some(235), Some(3)));
        assert_eq!(
            cdi_device_id(UID),
            format!("k8s.gpuslice.dev/channel={UID}-channel")
        );
        let on_host = channel_spec(UID, &[0, 1], Path::new("/"), None);
        let nodes = &on_host.devices[0].container_edits.device_nodes;
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1].host_path, None, "the same path on the host");
        assert_eq!(nodes[1].major, None, "the runtime reads the host node");
    }

    #[test]
    fn spec_file_names_are_the_channel_class_only() {
        let name = spec_file_name(UID);
        assert_eq!(claim_uid_of_spec_file(&name), Some(UID));
        assert_eq!(
            claim_uid_of_spec_file(&crate::cdi_build::spec_file_name(UID)),
            None
        );
        assert_eq!(
            crate::cdi_build::claim_uid_of_spec_file(&name),
            None,
            "the GPU claims' reconcile leaves channel specs alone"
        );
        assert!(is_spec_temp(&format!(".{name}.tmp-4242-7")));
        assert!(!is_spec_temp(&name), "a spec is no temp");
        assert!(
            !is_spec_temp(&format!(
                ".{}.tmp-4242-7",
                crate::cdi_build::spec_file_name(UID)
            )),
            "a GPU claim's temp is the GPU claims' reconcile's"
        );
    }
}
