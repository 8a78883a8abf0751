//! A node's IMEX channels as NVIDIA's compute-domain plugin offers them
//! (cmd/compute-domain-kubelet-plugin: nvlib.go, deviceinfo.go): each a DRA
//! device `channel-<id>` with the attributes `type` (`channel`) and `id`; the
//! DeviceClass `compute-domain-default-channel.nvidia.com` selects channel 0.
//! Their device nodes are gpuslice-imex's ([`gpuslice_imex::channels`],
//! re-exported here).
//!
//! Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{Device, DeviceAttribute};

pub use gpuslice_imex::channels::*;

/// The DRA device of channel `id`.
pub fn channel_device(id: u32) -> Device {
    let attributes = BTreeMap::from([
        (
            "type".to_owned(),
            DeviceAttribute {
                string: Some(CHANNEL_TYPE.to_owned()),
                ..DeviceAttribute::default()
            },
        ),
        (
            "id".to_owned(),
            DeviceAttribute {
                int: Some(i64::from(id)),
                ..DeviceAttribute::default()
            },
        ),
    ]);
    Device {
        name: channel_name(id),
        attributes: Some(attributes),
        ..Device::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_channel_device_is_named_and_typed_by_its_id() {
        let device = channel_device(7);
        assert_eq!(device.name, "channel-7");
        let attributes = device.attributes.expect("attributes");
        assert_eq!(attributes["type"].string.as_deref(), Some("channel"));
        assert_eq!(attributes["id"].int, Some(7));
    }
}
