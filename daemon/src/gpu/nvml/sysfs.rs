//! Where a PCI device sits: its PCIe root complex and NUMA node, read from
//! sysfs the way Kubernetes' DRA helper library reads them for the standard
//! attributes `resource.kubernetes.io/pcieRoot` and
//! `resource.kubernetes.io/numaNode` ("Standard Device Attributes for Dynamic
//! Resource Allocation", kubernetes.io/docs/reference/node/dra-standard-device-attributes/;
//! package `k8s.io/dynamic-resource-allocation/deviceattribute`):
//!
//! * **pcieRoot** (`GetPCIeRootAttributeByPCIBusID`, pci_linux.go): the link
//!   `<sysfs>/bus/pci/devices/<BDF>` is read one level (`fs.ReadLink`), a
//!   relative target is resolved against the link's folder and cleaned
//!   lexically (`filepath.Clean`); the result must start with
//!   `devices/pci` and end with the BDF, and its first component after
//!   `devices/` is the root complex, `pci<domain>:<bus>`, whatever bridges
//!   and switches sit in between.
//! * **numaNode** (`GetNUMANodeAttributeByPCIBusID`, numa.go, KEP-6072): the
//!   integer in `<sysfs>/bus/pci/devices/<BDF>/numa_node`. A negative value
//!   (the kernel's -1) means no NUMA affinity, and such a device must not
//!   publish the attribute (-1 would match every other NUMA-less device under
//!   `matchAttribute`): it is `None` here. Only the scalar form: the list form
//!   needs the DRAListTypeAttributes gate.
//!
//! Both refuse a bus id outside the extended BDF form `dddd:bb:dd.f`
//! (lowercase hex), as the helpers' `verifyPCIBDFFormat` does. The root is
//! configurable (`[backend.nvml] sysfs_root`, default `/sys`) so that tests,
//! or a daemon in a container with the host's sysfs elsewhere, can point it
//! at another tree. Reads only.

use std::path::{Component, Path, PathBuf};

/// Where the kernel's sysfs is mounted.
pub const DEFAULT_ROOT: &str = "/sys";

/// Why a device's place could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TopologyError {
    /// Not a bus id in the form the helpers accept.
    #[error("PCI bus id {bus_id:?} is not in the extended BDF form dddd:bb:dd.f (lowercase hex)")]
    BusId {
        /// The bus id given.
        bus_id: String,
    },
    /// `<sysfs>/bus/pci/devices/<BDF>` is missing or not a link.
    #[error(
        "cannot read the link {}: {error} (no such PCI device, or sysfs_root is not \
         the sysfs mount)",
        path.display()
    )]
    Link {
        /// The link.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The link points somewhere a PCI device cannot be.
    #[error(
        "{} points to {}, not to {bus_id} under {}/devices/pci...",
        path.display(),
        target.display(),
        root.display()
    )]
    Target {
        /// The link.
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
        /// The bus id.
        bus_id: String,
        /// The sysfs root.
        root: PathBuf,
    },
    /// `numa_node` could not be read.
    #[error("cannot read {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// `numa_node` does not hold a number.
    #[error("{} holds {text:?}, not a NUMA node number", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What it holds.
        text: String,
    },
}

/// A sysfs tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sysfs {
    root: PathBuf,
}

impl Default for Sysfs {
    fn default() -> Self {
        Self::new(DEFAULT_ROOT)
    }
}

impl Sysfs {
    /// The tree mounted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The PCIe root complex of `bus_id`, e.g. "pci0000:3a".
    pub fn pcie_root(&self, bus_id: &str) -> Result<String, TopologyError> {
        check_bus_id(bus_id)?;
        let link_rel = Path::new("bus/pci/devices").join(bus_id);
        let path = self.root.join(&link_rel);
        let target = std::fs::read_link(&path).map_err(|error| TopologyError::Link {
            path: path.clone(),
            error,
        })?;
        let bad_target = || TopologyError::Target {
            path: path.clone(),
            target: target.clone(),
            bus_id: bus_id.to_owned(),
            root: self.root.clone(),
        };
        let resolved = if target.is_absolute() {
            // The kernel writes relative links; an absolute one counts only
            // inside this tree.
            target.strip_prefix(&self.root).ok().and_then(clean)
        } else {
            link_rel.parent().and_then(|dir| clean(&dir.join(&target)))
        }
        .ok_or_else(bad_target)?;
        let names: Vec<&str> = resolved
            .components()
            .filter_map(|c| c.as_os_str().to_str())
            .collect();
        match names.as_slice() {
            ["devices", root, .., last] if root.starts_with("pci") && *last == bus_id => {
                Ok((*root).to_owned())
            }
            _ => Err(bad_target()),
        }
    }

    /// The NUMA node of `bus_id`; `None` when the kernel reports none (-1).
    pub fn numa_node(&self, bus_id: &str) -> Result<Option<u32>, TopologyError> {
        check_bus_id(bus_id)?;
        let path = self
            .root
            .join("bus/pci/devices")
            .join(bus_id)
            .join("numa_node");
        let text = std::fs::read_to_string(&path).map_err(|error| TopologyError::Read {
            path: path.clone(),
            error,
        })?;
        let parse_error = || TopologyError::Parse {
            path: path.clone(),
            text: text.clone(),
        };
        let node: i64 = text.trim().parse().map_err(|_| parse_error())?;
        if node < 0 {
            return Ok(None);
        }
        u32::try_from(node).map(Some).map_err(|_| parse_error())
    }
}

/// `dddd:bb:dd.f`, lowercase hex (`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$`).
fn check_bus_id(bus_id: &str) -> Result<(), TopologyError> {
    let shape: Vec<usize> = bus_id.split([':', '.']).map(str::len).collect();
    let hex = bus_id
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f' | b':' | b'.'));
    let separators = bus_id.get(4..5) == Some(":")
        && bus_id.get(7..8) == Some(":")
        && bus_id.get(10..11) == Some(".");
    if shape == [4, 2, 2, 1] && hex && separators {
        Ok(())
    } else {
        Err(TopologyError::BusId {
            bus_id: bus_id.to_owned(),
        })
    }
}

/// `path` with `.` and `..` resolved lexically, as Go's `filepath.Clean`
/// does; `None` when it climbs above its start.
fn clean(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
#[path = "sysfs_tests.rs"]
mod tests;
