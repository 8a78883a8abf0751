//! A node's IMEX channels as NVIDIA's compute-domain plugin offers them
//! (cmd/compute-domain-kubelet-plugin: nvlib.go, deviceinfo.go): 2048
//! channels, each a DRA device `channel-<id>` with the attributes `type`
//! (`channel`) and `id`, and a character device
//! `/dev/nvidia-caps-imex-channels/channel<id>` whose major number is the
//! one /proc/devices gives `nvidia-caps-imex-channels` and whose minor is the
//! id, mode 0666. The DeviceClass `compute-domain-default-channel.nvidia.com`
//! selects channel 0.
//!
//! Pure: the devices and paths, and /proc/devices read from its text.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{Device, DeviceAttribute};

/// Channels a node offers (NVIDIA's `getImexChannelCount`).
pub const CHANNEL_COUNT: u32 = 2048;

/// The character device's name in /proc/devices.
pub const PROC_DEVICES_NAME: &str = "nvidia-caps-imex-channels";

/// The folder of the channel device nodes, under the driver root.
pub const DEVICE_FOLDER: &str = "/dev/nvidia-caps-imex-channels";

/// The mode of a channel device node.
pub const DEVICE_MODE: u32 = 0o666;

/// The `type` attribute of a channel.
pub const CHANNEL_TYPE: &str = "channel";

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
        name: format!("{CHANNEL_TYPE}-{id}"),
        attributes: Some(attributes),
        ..Device::default()
    }
}

/// The device node of channel `id`.
pub fn channel_path(id: u32) -> String {
    format!("{DEVICE_FOLDER}/channel{id}")
}

/// The major number of the IMEX channel devices in /proc/devices' `text`
/// (its "Character devices:" section), if the driver registered them.
pub fn channel_major(text: &str) -> Option<u32> {
    text.lines()
        .skip_while(|l| l.trim() != "Character devices:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .find_map(|l| {
            let (major, name) = l.trim().split_once(' ')?;
            (name.trim() == PROC_DEVICES_NAME)
                .then(|| major.parse().ok())
                .flatten()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROC_DEVICES: &str = "Character devices:\n  1 mem\n195 nvidia-frontend\n\
        235 nvidia-caps-imex-channels\n236 nvidia-caps\n\nBlock devices:\n  7 loop\n\
        235 nvidia-caps-imex-channels\n";

    #[test]
    fn the_major_comes_from_the_character_devices_only() {
        assert_eq!(channel_major(PROC_DEVICES), Some(235));
        let block_only = "Character devices:\n  1 mem\n\nBlock devices:\n\
            240 nvidia-caps-imex-channels\n";
        assert_eq!(channel_major(block_only), None, "not a character device");
        assert_eq!(channel_major(""), None);
    }

    #[test]
    fn a_channel_is_named_and_placed_by_its_id() {
        let device = channel_device(7);
        assert_eq!(device.name, "channel-7");
        let attributes = device.attributes.expect("attributes");
        assert_eq!(attributes["type"].string.as_deref(), Some("channel"));
        assert_eq!(attributes["id"].int, Some(7));
        assert_eq!(channel_path(7), "/dev/nvidia-caps-imex-channels/channel7");
    }
}
