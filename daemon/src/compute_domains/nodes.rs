//! A channel claim's device nodes on the host,
//! `<dev_root>/dev/nvidia-caps-imex-channels/channel<id>`: made when
//! missing with the driver's major (from `/proc/devices` under the driver
//! root) and the channel as minor, as NVIDIA's plugin makes them, but root's
//! alone (`HOST_MODE`, 0600): the container gets a node of its own with the
//! CDI spec's mode. The simulator makes a plain file instead.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use gpuslice_imex::channels::{DEVICE_FOLDER, HOST_MODE, channel_major};

use super::DomainError;

/// How a channel's device node comes to exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelNodes {
    /// The driver's: a missing node is made with mknod (the driver's major,
    /// minor the channel), as NVIDIA's plugin does.
    Driver,
    /// The simulator's: a plain file under the simulated driver root.
    Simulated,
}

/// Where the nodes are and how they are made.
#[derive(Debug, Clone)]
pub struct NodeMaker {
    /// How.
    pub how: ChannelNodes,
    /// The root of /dev.
    pub dev_root: PathBuf,
    /// The driver root (its /proc/devices).
    pub driver_root: PathBuf,
}

impl NodeMaker {
    /// The driver's /proc/devices.
    fn proc_devices(&self) -> PathBuf {
        self.driver_root.join("proc/devices")
    }

    /// The channel devices' major, when the driver registers them.
    pub fn major(&self) -> Option<u32> {
        std::fs::read_to_string(self.proc_devices())
            .ok()
            .and_then(|text| channel_major(&text))
    }

    /// Channels `ids` have their nodes.
    pub fn ensure(&self, ids: &[u32]) -> Result<(), DomainError> {
        let folder = self.dev_root.join(DEVICE_FOLDER.trim_start_matches('/'));
        for id in ids {
            let path = folder.join(format!("channel{id}"));
            if path.exists() {
                continue;
            }
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(&folder)
                .map_err(|e| DomainError::io("create", &folder, e))?;
            self.make(&path, *id)?;
        }
        Ok(())
    }

    fn make(&self, path: &Path, id: u32) -> Result<(), DomainError> {
        match self.how {
            ChannelNodes::Simulated => std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .and_then(|f| f.set_permissions(std::fs::Permissions::from_mode(HOST_MODE)))
                .map_err(|e| DomainError::io("make the channel node", path, e)),
            ChannelNodes::Driver => {
                let major = self.major().ok_or_else(|| DomainError::NoChannelDevices {
                    path: self.proc_devices(),
                })?;
                nix::sys::stat::mknod(
                    path,
                    nix::sys::stat::SFlag::S_IFCHR,
                    nix::sys::stat::Mode::from_bits_truncate(HOST_MODE),
                    nix::sys::stat::makedev(u64::from(major), u64::from(id)),
                )
                .map_err(|e| DomainError::io("make the channel node", path, e.into()))
            }
        }
    }
}
