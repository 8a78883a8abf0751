//! MIG capability device nodes: which /dev/nvidia-caps/nvidia-cap<N> a
//! container needs for a GPU instance and its compute instance.
//!
//! The driver lists every capability minor in
//! `/proc/driver/nvidia-caps/mig-minors` (under the driver root), one
//! `<name> <minor>` per line: `config 1`, `monitor 2`, then for each GPU minor
//! g, GPU instance i (0..14) and compute instance c (0..7)
//! `gpu<g>/gi<i>/access` and `gpu<g>/gi<i>/ci<c>/access`, numbered
//! 3 + 135·g + 9·i (GI) and that + 1 + c (CI). The major number of the
//! `nvidia-caps` character devices comes from `/proc/devices`, when present;
//! without it a spec carries only the host path and the runtime stats the
//! node, so the nodes are resolved lazily. Parsing is pure ([`parse`]); the
//! file is read once, at discovery.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::rooted;

/// The driver's list of capability minors, relative to the driver root.
pub const MIG_MINORS: &str = "/proc/driver/nvidia-caps/mig-minors";
/// The kernel's list of device majors, relative to the driver root.
pub const PROC_DEVICES: &str = "/proc/devices";
/// Folder of the capability device nodes, relative to the dev root.
pub const CAPS_DIR: &str = "/dev/nvidia-caps";

/// What a `mig-minors` line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CapName {
    /// `config`: the MIG configuration capability.
    Config,
    /// `monitor`: the MIG monitoring capability.
    Monitor,
    /// `gpu<g>/gi<i>/access`.
    Gi { gpu: u32, gi: u32 },
    /// `gpu<g>/gi<i>/ci<c>/access`.
    Ci { gpu: u32, gi: u32, ci: u32 },
}

/// One capability device node to put in a container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigCapNode {
    /// "/dev/nvidia-caps/nvidia-cap<minor>".
    pub container: String,
    /// The same path under the dev root.
    pub host: PathBuf,
    /// Major of the nvidia-caps devices, when /proc/devices lists it.
    pub major: Option<u32>,
    /// The capability minor.
    pub minor: u32,
}

/// The capability minors found at discovery (empty when the file is missing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigCaps {
    /// Where the list was read from.
    pub source: PathBuf,
    /// Root of the device nodes.
    pub dev_root: PathBuf,
    /// Major of the nvidia-caps character devices.
    pub major: Option<u32>,
    /// Every listed capability.
    pub minors: BTreeMap<CapName, u32>,
}

/// A capability that cannot be resolved, naming the file and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigCapError {
    /// A line of `mig-minors` that is not `<name> <minor>`.
    #[error("{path} line {line_no}: {line:?}: {problem}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line_no: usize,
        /// The line as read.
        line: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The capability is not in the list (or the list was not found).
    #[error(
        "{name} is not listed in {path}: is the NVIDIA driver loaded with MIG support, \
         and driver_root right?"
    )]
    NotListed {
        /// The capability, as mig-minors would name it.
        name: String,
        /// The file.
        path: PathBuf,
    },
}

impl CapName {
    /// The name as `mig-minors` writes it.
    pub fn text(&self) -> String {
        match self {
            CapName::Config => "config".into(),
            CapName::Monitor => "monitor".into(),
            CapName::Gi { gpu, gi } => format!("gpu{gpu}/gi{gi}/access"),
            CapName::Ci { gpu, gi, ci } => format!("gpu{gpu}/gi{gi}/ci{ci}/access"),
        }
    }
}

/// Parses `mig-minors` text read from `path` (named in errors).
pub fn parse(path: &Path, text: &str) -> Result<BTreeMap<CapName, u32>, MigCapError> {
    let mut minors = BTreeMap::new();
    for (line_no, line) in (1..).zip(text.lines()) {
        if line.trim().is_empty() {
            continue;
        }
        let malformed = |problem: &str| MigCapError::Malformed {
            path: path.to_path_buf(),
            line_no,
            line: line.to_owned(),
            problem: problem.to_owned(),
        };
        let mut words = line.split_whitespace();
        let (Some(name), Some(minor), None) = (words.next(), words.next(), words.next()) else {
            return Err(malformed("expected `<name> <minor>`"));
        };
        let minor = (minor.parse::<u32>()).map_err(|_| malformed("the minor is not a number"))?;
        let name = parse_name(name).ok_or_else(|| {
            malformed("expected config, monitor, gpuG/giI/access or gpuG/giI/ciC/access")
        })?;
        minors.insert(name, minor);
    }
    Ok(minors)
}

fn parse_name(name: &str) -> Option<CapName> {
    match name {
        "config" => return Some(CapName::Config),
        "monitor" => return Some(CapName::Monitor),
        _ => {}
    }
    let number = |part: &str, prefix: &str| part.strip_prefix(prefix)?.parse::<u32>().ok();
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [gpu, gi, "access"] => Some(CapName::Gi {
            gpu: number(gpu, "gpu")?,
            gi: number(gi, "gi")?,
        }),
        [gpu, gi, ci, "access"] => Some(CapName::Ci {
            gpu: number(gpu, "gpu")?,
            gi: number(gi, "gi")?,
            ci: number(ci, "ci")?,
        }),
        _ => None,
    }
}

/// The major of `name` in /proc/devices text ("Character devices:" section).
pub fn char_major(proc_devices: &str, name: &str) -> Option<u32> {
    proc_devices
        .lines()
        .skip_while(|l| l.trim() != "Character devices:")
        .take_while(|l| l.trim() != "Block devices:")
        .find_map(|l| {
            let (major, dev) = l.trim().split_once(' ')?;
            (dev.trim() == name).then(|| major.parse().ok()).flatten()
        })
}

impl MigCaps {
    /// Reads the lists under `driver_root`; a missing or malformed list is a
    /// problem in words, and leaves the lookup empty.
    pub fn discover(driver_root: &Path, dev_root: &Path) -> (MigCaps, Option<String>) {
        let source = rooted(driver_root, MIG_MINORS);
        let major = std::fs::read_to_string(rooted(driver_root, PROC_DEVICES))
            .ok()
            .and_then(|text| char_major(&text, "nvidia-caps"));
        let mut caps = MigCaps {
            source: source.clone(),
            dev_root: dev_root.to_path_buf(),
            major,
            minors: BTreeMap::new(),
        };
        let problem = match std::fs::read_to_string(&source) {
            Ok(text) => match parse(&source, &text) {
                Ok(minors) => {
                    caps.minors = minors;
                    None
                }
                Err(err) => Some(format!("{err}: MIG devices cannot be given to containers")),
            },
            Err(err) => Some(format!(
                "cannot read {} ({err}): MIG devices cannot be given to containers; \
                 is the NVIDIA driver loaded?",
                source.display()
            )),
        };
        (caps, problem)
    }

    /// The node of one capability.
    pub fn node(&self, name: CapName) -> Result<MigCapNode, MigCapError> {
        let minor = *self
            .minors
            .get(&name)
            .ok_or_else(|| MigCapError::NotListed {
                name: name.text(),
                path: self.source.clone(),
            })?;
        let container = format!("{CAPS_DIR}/nvidia-cap{minor}");
        Ok(MigCapNode {
            host: rooted(&self.dev_root, &container),
            container,
            major: self.major,
            minor,
        })
    }

    /// The GPU-instance and compute-instance nodes of a MIG device, in that order.
    pub fn mig_device_nodes(
        &self,
        gpu_minor: u32,
        gi_id: u32,
        ci_id: u32,
    ) -> Result<[MigCapNode; 2], MigCapError> {
        let gi = self.node(CapName::Gi {
            gpu: gpu_minor,
            gi: gi_id,
        })?;
        let ci = self.node(CapName::Ci {
            gpu: gpu_minor,
            gi: gi_id,
            ci: ci_id,
        })?;
        Ok([gi, ci])
    }
}
