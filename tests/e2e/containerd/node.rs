//! The gpuslice side of the node: a driver root whose device nodes are real
//! character devices with the numbers a real driver gives (195:N for GPU N,
//! 195:255 for nvidiactl, the uvm and MIG capability nodes on majors of
//! their own), so a node seen in a container can be told apart from every
//! other; gpusliced on six simulated H100s (gpu-1 in MIG mode, slices made at
//! prepare) with the MPS and nvidia-smi stand-ins, sampling activity every
//! second; and the five claims, one of each kind, prepared through its API.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::sys::stat::{Mode, SFlag, makedev, mknod};

use crate::common::devices::slice_of_profile;
use crate::common::files::write_gpuslice_toml;
use crate::common::queries::Queries;
use crate::harness::{Client, prepare_request};
use crate::stand_ins::{memory, mps, sections, shared_request, timeslicing};
use crate::tools::{repo_root, run};

/// One claim of each kind, with the devices it asks for (the MIG one's
/// device is found in the inventory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Whole,
    Mig,
    Mps,
    TimeSlicing,
    TwoDevices,
}

impl Kind {
    pub const ALL: [Self; 5] = [
        Self::Whole,
        Self::Mig,
        Self::Mps,
        Self::TimeSlicing,
        Self::TwoDevices,
    ];

    pub fn uid(self) -> &'static str {
        match self {
            Self::Whole => "c0c0c0c0-2121-4000-8000-000000000001",
            Self::Mig => "c0c0c0c0-2121-4000-8000-000000000002",
            Self::Mps => "c0c0c0c0-2121-4000-8000-000000000003",
            Self::TimeSlicing => "c0c0c0c0-2121-4000-8000-000000000004",
            Self::TwoDevices => "c0c0c0c0-2121-4000-8000-000000000005",
        }
    }

    /// The container's name in the pod.
    pub fn name(self) -> &'static str {
        match self {
            Self::Whole => "whole",
            Self::Mig => "mig",
            Self::Mps => "mps",
            Self::TimeSlicing => "timeslicing",
            Self::TwoDevices => "two-devices",
        }
    }

    /// The GPU nodes (`/dev/nvidiaN`) its container must have, and no other.
    pub fn gpu_nodes(self) -> &'static [&'static str] {
        match self {
            Self::Whole => &["/dev/nvidia0"],
            Self::Mig => &["/dev/nvidia1"],
            Self::Mps => &["/dev/nvidia2"],
            Self::TimeSlicing => &["/dev/nvidia3"],
            Self::TwoDevices => &["/dev/nvidia4", "/dev/nvidia5"],
        }
    }

    /// How many MIG capability nodes: a slice's GPU and compute instance.
    pub fn cap_nodes(self) -> usize {
        if self == Self::Mig { 2 } else { 0 }
    }
}

/// A driver root under `dir`: examples/sim-root, its device node links
/// replaced by character devices.
pub fn driver_root(dir: &Path) -> PathBuf {
    let root = dir.join("driver");
    std::fs::create_dir_all(&root).expect("driver root");
    let sim_root = repo_root().join("examples/sim-root");
    for part in ["usr", "proc", "dev"] {
        run(Command::new("cp")
            .arg("-a")
            .arg(sim_root.join(part))
            .arg(&root))
        .expect("copy the sim driver root");
    }
    replace_links(&root.join("dev"));
    root
}

fn replace_links(dir: &Path) {
    for entry in std::fs::read_dir(dir)
        .expect("list the driver's dev")
        .flatten()
    {
        let path = entry.path();
        let kind = entry.file_type().expect("file type");
        if kind.is_dir() {
            replace_links(&path);
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((major, minor)) = numbers(&name) else {
            panic!("no device number for {}", path.display());
        };
        std::fs::remove_file(&path).expect("remove the link");
        mknod(
            &path,
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            makedev(major, minor),
        )
        .expect("mknod a stand-in device node (needs root)");
    }
}

/// The numbers a driver gives the node `name` (uvm, caps and IMEX channel
/// majors are dynamic on a real host; these are typical).
fn numbers(name: &str) -> Option<(u64, u64)> {
    match name {
        "nvidiactl" => Some((195, 255)),
        "nvidia-uvm" => Some((234, 0)),
        "nvidia-uvm-tools" => Some((234, 1)),
        _ => {
            if let Some(cap) = name.strip_prefix("nvidia-cap") {
                return cap.parse().ok().map(|minor| (237, minor));
            }
            if let Some(channel) = name.strip_prefix("channel") {
                return channel.parse().ok().map(|minor| (241, minor));
            }
            name.strip_prefix("nvidia")?
                .parse()
                .ok()
                .map(|minor| (195, minor))
        }
    }
}

/// A host node's numbers as `stat -c %t:%T` prints them (hex).
pub fn host_numbers(path: &Path) -> String {
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("stat {}: {e}", path.display()));
    assert!(
        meta.file_type().is_char_device(),
        "{} is no device",
        path.display()
    );
    let rdev = meta.rdev();
    format!(
        "{:x}:{:x}",
        nix::sys::stat::major(rdev),
        nix::sys::stat::minor(rdev)
    )
}

/// gpusliced's config in `dir`: six H100s, gpu-1 in MIG mode with slices
/// made at prepare, CDI specs in `dir/cdi`, activity sampled every second.
pub fn write_config(dir: &Path, driver_root: &Path) {
    let gpus = ["\"H100-80GB\""; 6].join(", ");
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"{}\"\n{}[activity]\ninterval_s = 1\n\
         [backend]\nkind = \"sim\"\n[backend.sim]\ngpus = [{gpus}]\n\
         [mig]\nadvertise = \"layout\"\ncreate = \"on-prepare\"\n\
         [[mig.gpu]]\nindex = 1\nlayout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]\n",
        driver_root.display(),
        sections(dir),
    );
    write_gpuslice_toml(dir, &text);
}

/// Prepares the claim of `kind`; its CDI ids.
pub async fn prepare(client: &mut Client, kind: Kind) -> Vec<String> {
    let uid = kind.uid();
    let request = match kind {
        Kind::Whole => prepare_request(uid, &["gpu-0"]),
        Kind::Mig => {
            let slice = slice_of_profile(&client.inventory().await, "1g.10gb");
            prepare_request(uid, &[&slice])
        }
        Kind::Mps => shared_request(uid, &["gpu-2"], &[mps(50), memory("20Gi")]),
        Kind::TimeSlicing => shared_request(uid, &["gpu-3"], &[timeslicing("Long")]),
        Kind::TwoDevices => prepare_request(uid, &["gpu-4", "gpu-5"]),
    };
    let reply = client
        .prepare(request)
        .await
        .unwrap_or_else(|e| panic!("prepare the {kind:?} claim: {e}"))
        .into_inner();
    reply
        .devices
        .iter()
        .flat_map(|d| d.cdi_device_ids.iter().cloned())
        .collect()
}
