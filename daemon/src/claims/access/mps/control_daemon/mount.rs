//! The shm tmpfs of a control daemon, behind [`ShmMounter`] so tests and
//! unprivileged runs can leave it a plain folder. Mounting needs root
//! (CAP_SYS_ADMIN); [`TmpfsMounter`] is what gpusliced uses in production.

use std::path::Path;

use nix::mount::{MntFlags, MsFlags};

use super::MpsError;

/// Mounts and unmounts a daemon's shm folder.
pub trait ShmMounter: Send + Sync + std::fmt::Debug {
    /// Mounts the shm at `dir` (an existing empty folder).
    fn mount(&self, dir: &Path) -> Result<(), MpsError>;
    /// Unmounts `dir`; not mounted is fine.
    fn unmount(&self, dir: &Path) -> Result<(), MpsError>;
}

/// A tmpfs of `size` (a tmpfs size option, e.g. "50%" or "8g"), mode 1777,
/// nosuid, nodev, noexec, as NVIDIA's drivers mount it.
#[derive(Debug, Clone)]
pub struct TmpfsMounter {
    /// The tmpfs `size=` option; NVIDIA uses half of MemTotal ("50%").
    pub size: String,
}

impl ShmMounter for TmpfsMounter {
    fn mount(&self, dir: &Path) -> Result<(), MpsError> {
        let options = format!("size={},mode=1777", self.size);
        nix::mount::mount(
            Some("tmpfs"),
            dir,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some(options.as_str()),
        )
        .map_err(|e| MpsError::Io {
            action: "mount the shm tmpfs at",
            path: dir.to_path_buf(),
            error: std::io::Error::from(e),
        })
    }

    fn unmount(&self, dir: &Path) -> Result<(), MpsError> {
        match nix::mount::umount2(dir, MntFlags::MNT_DETACH) {
            Ok(()) | Err(nix::Error::EINVAL | nix::Error::ENOENT) => Ok(()),
            Err(e) => Err(MpsError::Io {
                action: "unmount the shm tmpfs at",
                path: dir.to_path_buf(),
                error: std::io::Error::from(e),
            }),
        }
    }
}

/// Leaves the shm a plain folder (on /run's tmpfs): under the packaged
/// systemd unit, whose sandbox forbids mounts, for runs without root, and in
/// tests. The daemon and its clients still share that one folder at /dev/shm
/// (see [`super::MpsSettings::bind_shm`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoShmMount;

impl ShmMounter for NoShmMount {
    fn mount(&self, _dir: &Path) -> Result<(), MpsError> {
        Ok(())
    }

    fn unmount(&self, _dir: &Path) -> Result<(), MpsError> {
        Ok(())
    }
}
