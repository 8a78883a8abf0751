//! What a CUDA container needs from the host's NVIDIA driver, found once under
//! the driver root: control device nodes, user-space libraries, binaries,
//! firmware, IPC sockets, and the MIG capability minors ([`caps`]).
//!
//! This is the job nvidia-container-toolkit does for NVIDIA's CDI specs; doing
//! it here means containers need no nvidia-container-runtime. Discovery reads
//! the filesystem at start-up and on SIGHUP, never during a prepare. What is
//! missing is reported as a problem (shown by `gpuslicectl status`) rather
//! than failing start-up, because a node can boot before the driver is loaded.

pub mod caps;
mod files;

use std::path::{Path, PathBuf};

pub use caps::{MigCapError, MigCapNode, MigCaps};
pub use files::{BINARIES, COMMON_NODES, LIB_DIRS, LIBRARIES};

/// A host file exposed at a path in the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPath {
    /// The path in the container (the host path with the root stripped).
    pub container: String,
    /// The path on the host.
    pub host: PathBuf,
}

/// Everything found under the driver root.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverFiles {
    /// /dev/nvidiactl, /dev/nvidia-uvm, ... that exist.
    pub control_nodes: Vec<HostPath>,
    /// Libraries, binaries, firmware and sockets, to bind read-only.
    pub mounts: Vec<HostPath>,
    /// The container folders that hold libraries (for the ldcache hook).
    pub library_dirs: Vec<String>,
    /// What is missing, in words an operator can act on.
    pub problems: Vec<String>,
    /// The MIG capability minors (empty when the driver lists none).
    pub mig_caps: MigCaps,
}

/// Where to look.
#[derive(Debug, Clone, Copy)]
pub struct Roots<'a> {
    /// Root of the driver's files (libraries, binaries).
    pub driver_root: &'a Path,
    /// Root of the /dev nodes.
    pub dev_root: &'a Path,
}

impl DriverFiles {
    /// Scans the roots. `driver_version` picks the firmware folder.
    pub fn discover(roots: Roots<'_>, driver_version: &str) -> Self {
        let mut found = Self::default();
        found.find_control_nodes(roots.dev_root);
        found.find_libraries(roots.driver_root);
        found.find_binaries(roots.driver_root);
        found.find_firmware(roots.driver_root, driver_version);
        found.find_sockets(roots.driver_root);
        let (mig_caps, problem) = MigCaps::discover(roots.driver_root, roots.dev_root);
        found.mig_caps = mig_caps;
        found.problems.extend(problem);
        found
    }

    /// The two capability nodes a container needs for MIG device (`gi_id`,
    /// `ci_id`) of the GPU with minor `gpu_minor`: the GPU instance's access
    /// node, then the compute instance's.
    pub fn mig_cap_nodes(
        &self,
        gpu_minor: u32,
        gi_id: u32,
        ci_id: u32,
    ) -> Result<[MigCapNode; 2], MigCapError> {
        self.mig_caps.mig_device_nodes(gpu_minor, gi_id, ci_id)
    }

    fn find_control_nodes(&mut self, dev_root: &Path) {
        for (name, required) in COMMON_NODES {
            let container = format!("/dev/{name}");
            let host = rooted(dev_root, &container);
            if host.exists() {
                self.control_nodes.push(HostPath { container, host });
            } else if *required {
                self.problems.push(format!(
                    "device node {} is missing: is the NVIDIA kernel driver loaded \
                     (nvidia-modprobe / nvidia-persistenced)?",
                    host.display()
                ));
            }
        }
    }

    fn find_libraries(&mut self, driver_root: &Path) {
        for stem in LIBRARIES {
            let found = LIB_DIRS.iter().find_map(|dir| {
                let entries = versioned_entries(&rooted(driver_root, dir), stem);
                (!entries.is_empty()).then_some((dir, entries))
            });
            let Some((dir, entries)) = found else {
                if files::REQUIRED_LIBRARIES.contains(stem) {
                    self.problems.push(format!(
                        "library {stem}.* not found under {} in {}: containers will not \
                         be able to use CUDA",
                        driver_root.display(),
                        LIB_DIRS.join(", ")
                    ));
                }
                continue;
            };
            let container_dir = format!("/{dir}");
            if !self.library_dirs.contains(&container_dir) {
                self.library_dirs.push(container_dir.clone());
            }
            for name in entries {
                let container = format!("{container_dir}/{name}");
                let host = rooted(driver_root, &container);
                self.mounts.push(HostPath { container, host });
            }
        }
    }

    fn find_binaries(&mut self, driver_root: &Path) {
        for name in BINARIES {
            let found = ["usr/bin", "usr/sbin", "bin", "sbin"]
                .iter()
                .map(|dir| format!("/{dir}/{name}"))
                .find(|path| rooted(driver_root, path).is_file());
            if let Some(container) = found {
                let host = rooted(driver_root, &container);
                self.mounts.push(HostPath { container, host });
            }
        }
    }

    fn find_firmware(&mut self, driver_root: &Path, driver_version: &str) {
        let container = format!("/lib/firmware/nvidia/{driver_version}");
        let host = rooted(driver_root, &container);
        if host.is_dir() {
            self.mounts.push(HostPath { container, host });
        }
    }

    fn find_sockets(&mut self, driver_root: &Path) {
        for path in files::SOCKETS {
            let host = rooted(driver_root, path);
            if host.exists() {
                self.mounts.push(HostPath {
                    container: (*path).to_owned(),
                    host,
                });
            }
        }
    }
}

/// `root` joined with an absolute container path.
pub fn rooted(root: &Path, container: &str) -> PathBuf {
    root.join(container.trim_start_matches('/'))
}

/// Names in `dir` of the form `<stem>.<digits and dots>` that resolve to a
/// regular file: the versioned library and its soname links
/// (libcuda.so.580.95.05, libcuda.so.1), sorted.
fn versioned_entries(dir: &Path, stem: &str) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let prefix = format!("{stem}.");
    let mut names: Vec<String> = read
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().into_string().ok())
        .filter(|name| {
            name.strip_prefix(&prefix).is_some_and(|suffix| {
                !suffix.is_empty() && suffix.chars().all(|c| c.is_ascii_digit() || c == '.')
            })
        })
        .filter(|name| dir.join(name).is_file())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests;
