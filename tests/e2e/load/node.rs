//! The load's node: eight simulated H100s, gpu-0..2 in MIG mode with a
//! layout each (slices made at prepare), gpu-3..7 whole and shareable under
//! MPS and time-slicing through the stand-ins, metrics on a loopback port;
//! and the catalogue of its devices, read from GetInventory once at start.

use std::collections::HashMap;
use std::path::Path;

use gpuslice_proto::gpuslice::v1 as pb;

use crate::stand_ins::{SharedDaemon, sections};
use crate::tools::{repo_root, skip, which};

/// GPUs in the node.
pub const GPUS: usize = 8;

/// The MIG layouts of gpu-0, gpu-1 and gpu-2 (every slot of gpu-2 a 1g).
const LAYOUTS: [&str; 3] = [
    r#"["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]"#,
    r#"["4g.40gb", "1g.20gb", "1g.10gb", "1g.10gb"]"#,
    r#"["1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"]"#,
];

/// One whole GPU.
#[derive(Debug, Clone)]
pub struct Gpu {
    pub name: String,
    pub uuid: String,
    pub index: usize,
    pub memory: u64,
    /// In the `[mig]` config: offered as slices, and whole only to an
    /// exclusive claim (MIG switched off while it holds it).
    pub mig_managed: bool,
}

/// One offered MIG slice.
#[derive(Debug, Clone)]
pub struct Slice {
    pub name: String,
    /// Index of the parent in [`Catalogue::gpus`].
    pub parent: usize,
    pub start: u32,
    pub size: u32,
}

/// Every device the node offers.
#[derive(Debug, Clone)]
pub struct Catalogue {
    pub gpus: Vec<Gpu>,
    pub slices: Vec<Slice>,
    by_name: HashMap<String, Device>,
}

/// A device by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Device {
    Gpu(usize),
    Slice(usize),
}

impl Catalogue {
    /// From an inventory answer.
    pub fn from_inventory(inventory: &pb::GetInventoryResponse) -> Self {
        let mut gpus: Vec<Gpu> = Vec::new();
        let mut slices = Vec::new();
        for d in &inventory.devices {
            let memory = d.capacity.get("memory").copied().unwrap_or(0);
            let memory = u64::try_from(memory).expect("memory is not negative");
            match text(d, "type").as_deref() {
                Some("gpu") => gpus.push(Gpu {
                    name: d.name.clone(),
                    uuid: text(d, "uuid").expect("a GPU has a uuid"),
                    index: int(d, "index").expect("a GPU has an index"),
                    memory,
                    mig_managed: false,
                }),
                Some("mig") => slices.push(Slice {
                    name: d.name.clone(),
                    parent: int(d, "parentIndex").expect("a slice has a parent"),
                    start: u32::try_from(int(d, "placementStart").expect("start")).expect("u32"),
                    size: u32::try_from(int(d, "placementSize").expect("size")).expect("u32"),
                }),
                other => panic!("device {} of unknown type {other:?}", d.name),
            }
        }
        gpus.sort_by_key(|g| g.index);
        Self::new(gpus, slices)
    }

    /// From its devices; a GPU with slices is MIG-managed.
    pub fn new(mut gpus: Vec<Gpu>, slices: Vec<Slice>) -> Self {
        for s in &slices {
            gpus[s.parent].mig_managed = true;
        }
        let by_name = gpus
            .iter()
            .enumerate()
            .map(|(i, g)| (g.name.clone(), Device::Gpu(i)))
            .chain(
                slices
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (s.name.clone(), Device::Slice(i))),
            )
            .collect();
        Self {
            gpus,
            slices,
            by_name,
        }
    }

    /// The device called `name`.
    pub fn device(&self, name: &str) -> Option<Device> {
        self.by_name.get(name).copied()
    }

    /// The GPU (index into `gpus`) a device is or is part of.
    pub fn gpu_of(&self, name: &str) -> Option<usize> {
        match self.device(name)? {
            Device::Gpu(i) => Some(i),
            Device::Slice(i) => Some(self.slices[i].parent),
        }
    }

    /// Whole GPUs that claims can share (not MIG-managed).
    pub fn shareable(&self) -> Vec<&Gpu> {
        self.gpus.iter().filter(|g| !g.mig_managed).collect()
    }

    /// The whole GPU with this UUID.
    pub fn gpu_by_uuid(&self, uuid: &str) -> Option<&Gpu> {
        self.gpus.iter().find(|g| g.uuid == uuid)
    }
}

fn attr<'a>(d: &'a pb::Device, key: &str) -> Option<&'a pb::attribute_value::Value> {
    d.attributes.get(key)?.value.as_ref()
}

fn text(d: &pb::Device, key: &str) -> Option<String> {
    match attr(d, key)? {
        pb::attribute_value::Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

fn int(d: &pb::Device, key: &str) -> Option<usize> {
    match attr(d, key)? {
        pb::attribute_value::Value::Int(i) => usize::try_from(*i).ok(),
        _ => None,
    }
}

/// Writes the node's config into `dir` (the stand-ins' wrappers too).
pub fn write_config(dir: &Path) {
    let models = ["\"H100-80GB\""; GPUS].join(", ");
    let mig: String = LAYOUTS
        .iter()
        .enumerate()
        .map(|(i, layout)| format!("[[mig.gpu]]\nindex = {i}\nlayout = {layout}\n"))
        .collect();
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"{root}\"\n{sharing}\
         [backend]\nkind = \"sim\"\n[backend.sim]\ngpus = [{models}]\n\
         [metrics]\nlisten = \"127.0.0.1:0\"\n\
         [mig]\nadvertise = \"layout\"\ncreate = \"on-prepare\"\n{mig}",
        root = repo_root().join("examples/sim-root").display(),
        sharing = sections(dir),
    );
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(dir.join("gpuslice.toml"))
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .expect("write the load node's config");
}

/// Starts the node in a new folder under `parent` (a temp dir when `None`),
/// gpusliced logging at `log`; `None` after a skip line without python3.
pub fn start(test: &str, parent: Option<&Path>, log: &str) -> Option<SharedDaemon> {
    if which("python3").is_none() {
        skip(
            test,
            "python3 (the stand-in MPS control program's interpreter) is missing",
        );
        return None;
    }
    let dir = match parent {
        Some(parent) => tempfile::Builder::new()
            .prefix("gpuslice-load-")
            .tempdir_in(parent),
        None => tempfile::tempdir(),
    }
    .expect("temp dir");
    write_config(dir.path());
    Some(SharedDaemon::start_logged(dir, log))
}
