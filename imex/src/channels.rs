//! A node's IMEX channels as device nodes, as NVIDIA's compute-domain plugin
//! makes them (cmd/compute-domain-kubelet-plugin: nvlib.go, deviceinfo.go):
//! 2048 channels, each a character device
//! `/dev/nvidia-caps-imex-channels/channel<id>` whose major number is the
//! one /proc/devices gives `nvidia-caps-imex-channels` and whose minor is the
//! id, mode 0666 in the container that claims it. On the host gpuslice
//! makes it root's alone (0600, where NVIDIA's plugin leaves it 0666 for
//! every local user): the container runtime creates the container's own
//! node with the CDI spec's mode.
//!
//! Pure: the paths, and /proc/devices read from its text.

/// Channels a node offers (NVIDIA's `getImexChannelCount`).
pub const CHANNEL_COUNT: u32 = 2048;

/// The character device's name in /proc/devices.
pub const PROC_DEVICES_NAME: &str = "nvidia-caps-imex-channels";

/// The folder of the channel device nodes, under the driver root.
pub const DEVICE_FOLDER: &str = "/dev/nvidia-caps-imex-channels";

/// The mode of a channel device node in the container that claims it.
pub const DEVICE_MODE: u32 = 0o666;

/// The mode of a channel device node on the host: root's alone.
pub const HOST_MODE: u32 = 0o600;

/// The `type` attribute of a channel, and the prefix of its device name.
pub const CHANNEL_TYPE: &str = "channel";

/// The DRA device name of channel `id`: `channel-<id>`.
pub fn channel_name(id: u32) -> String {
    format!("{CHANNEL_TYPE}-{id}")
}

/// The channel a DRA device name names: `channel-<id>` with `id` below
/// [`CHANNEL_COUNT`] in plain decimal; `None` otherwise.
pub fn channel_id(name: &str) -> Option<u32> {
    let digits = name.strip_prefix(CHANNEL_TYPE)?.strip_prefix('-')?;
    let id: u32 = digits.parse().ok()?;
    (id < CHANNEL_COUNT && channel_name(id) == name).then_some(id)
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
        assert_eq!(channel_name(7), "channel-7");
        assert_eq!(channel_id("channel-7"), Some(7));
        assert_eq!(channel_id("channel-2047"), Some(2047));
        for other in [
            "channel-2048",
            "channel-07",
            "channel-",
            "channel7",
            "gpu-0",
            "channel--1",
        ] {
            assert_eq!(channel_id(other), None, "{other}");
        }
        assert_eq!(channel_path(7), "/dev/nvidia-caps-imex-channels/channel7");
    }
}
