//! The kernel's boot id, which tells a reboot (hardware state gone, /var/run
//! wiped) from a daemon restart (hardware state kept).

use std::path::Path;

/// Where the kernel publishes the boot id.
pub const BOOT_ID_PATH: &str = "/proc/sys/kernel/random/boot_id";

/// Reads the boot id from `path` (normally [`BOOT_ID_PATH`]); an unreadable
/// file gives "unknown", which never equals a recorded id.
pub fn read_boot_id(path: &Path) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}
