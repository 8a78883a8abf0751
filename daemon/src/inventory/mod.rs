//! The node's devices as the DRA shim publishes them: names, attributes and
//! capacities, built from what the backend reports.
//!
//! Pure: [`Inventory::from_backend`] is the only function that calls the
//! backend; everything else works on plain data. A GPU the scan cannot read
//! is left out and listed ([`UnreadableGpu`]); the rest is still offered. Attribute keys and value
//! kinds follow NVIDIA's DRA driver, so existing CEL selectors such as
//! `device.attributes["gpu.nvidia.com"].productName` keep working.

pub mod mig;
mod scan;
mod unreadable;

use std::collections::{BTreeMap, HashMap};

use crate::config::MigOffering;
use crate::features::GpuFeatures;
use crate::gpu::{DriverInfo, GpuInfo, MigProfile};

pub use mig::devices::{
    GpuMig, MigDevice, counter_set_name, free_counters, gpu_counters, mig_attributes, mig_capacity,
    mig_device_name, slice_consumption,
};
pub use mig::offer::plan_offer;
pub use unreadable::UnreadableGpu;

/// One attribute value, as resource.k8s.io/v1 types them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttrValue {
    /// A string of at most 64 bytes.
    Str(String),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A semantic version, already normalised (no leading zeros).
    Version(String),
}

/// One whole GPU the node offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuDevice {
    /// The inventory name, a DNS label: "gpu-<index>".
    pub name: String,
    /// What the backend reported.
    pub info: GpuInfo,
    /// What it has (MIG, MPS and its limits, an NVLink clique).
    pub features: GpuFeatures,
    /// Its model's MIG profile table, whatever its MIG mode (NVML answers
    /// the profile queries with MIG off); empty on a GPU without MIG.
    pub model_profiles: Vec<MigProfile>,
    /// Its MIG profiles, when the config puts it in MIG mode and MIG is on.
    pub mig: Option<GpuMig>,
}

impl GpuDevice {
    /// The GPU `info` describes, with its model's MIG profiles, not (yet)
    /// MIG-managed.
    pub fn new(info: GpuInfo, model_profiles: Vec<MigProfile>) -> Self {
        Self {
            name: gpu_device_name(info.index),
            features: GpuFeatures::of(&info),
            info,
            model_profiles,
            mig: None,
        }
    }
}

/// A device looked up by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceRef<'a> {
    /// A whole GPU.
    Gpu(&'a GpuDevice),
    /// A MIG slice and its parent GPU.
    Mig(&'a MigDevice, &'a GpuDevice),
}

impl DeviceRef<'_> {
    /// The GPU the device is, or is part of.
    pub fn gpu(&self) -> &GpuDevice {
        match self {
            DeviceRef::Gpu(g) | DeviceRef::Mig(_, g) => g,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Gpu(usize),
    Mig(usize),
}

/// Every device of the node, with the driver's versions. Lookups by name and
/// by UUID are hashed: a prepare's cost must not grow with the node's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inventory {
    /// Driver and CUDA versions, shared by every GPU.
    pub driver: DriverInfo,
    /// Whole GPUs, by index.
    pub gpus: Vec<GpuDevice>,
    /// MIG slices offered: by parent then placement, or in publication
    /// order (`publish_order`) in partitionable mode.
    pub mig: Vec<MigDevice>,
    /// How MIG slices are offered: the layout's slices, or every
    /// placement with shared counters.
    pub mig_offering: MigOffering,
    /// What the scan could not offer, for an operator.
    pub problems: Vec<String>,
    /// GPUs the scan could not read, left out of the offer.
    pub unreadable: Vec<UnreadableGpu>,
    by_name: HashMap<String, Slot>,
    by_uuid: HashMap<String, usize>,
}

impl Inventory {
    /// An inventory of `gpus` and `mig` slices, indexed.
    pub fn new(driver: DriverInfo, gpus: Vec<GpuDevice>, mig: Vec<MigDevice>) -> Self {
        let by_name = gpus
            .iter()
            .enumerate()
            .map(|(i, g)| (g.name.clone(), Slot::Gpu(i)))
            .chain(
                mig.iter()
                    .enumerate()
                    .map(|(i, m)| (m.name.clone(), Slot::Mig(i))),
            )
            .collect();
        let by_uuid = gpus
            .iter()
            .enumerate()
            .map(|(i, g)| (g.info.uuid.clone(), i))
            .collect();
        Self {
            driver,
            gpus,
            mig,
            mig_offering: MigOffering::Layout,
            problems: Vec::new(),
            unreadable: Vec::new(),
            by_name,
            by_uuid,
        }
    }

    /// The device with inventory name `name`.
    pub fn device(&self, name: &str) -> Option<DeviceRef<'_>> {
        match *self.by_name.get(name)? {
            Slot::Gpu(i) => self.gpus.get(i).map(DeviceRef::Gpu),
            Slot::Mig(i) => {
                let m = self.mig.get(i)?;
                Some(DeviceRef::Mig(m, self.gpus.get(m.parent)?))
            }
        }
    }

    /// Every device name, for error messages (whole GPUs first).
    pub fn device_names(&self) -> Vec<&str> {
        self.gpus
            .iter()
            .map(|g| g.name.as_str())
            .chain(self.mig.iter().map(|m| m.name.as_str()))
            .collect()
    }

    /// The GPU with inventory name `name`.
    pub fn gpu(&self, name: &str) -> Option<&GpuDevice> {
        match self.device(name)? {
            DeviceRef::Gpu(g) => Some(g),
            DeviceRef::Mig(..) => None,
        }
    }

    /// The GPU with this UUID.
    pub fn gpu_by_uuid(&self, uuid: &str) -> Option<&GpuDevice> {
        self.by_uuid.get(uuid).and_then(|&i| self.gpus.get(i))
    }

    /// Whether `gpu` is offered whole. A GPU the `[mig]` config manages is
    /// offered whole only in partitionable mode, where the whole GPU and
    /// every slice draw on one counter set, so the scheduler never hands out
    /// both; in layout mode nothing would tell it that they overlap, so only
    /// the layout's slices are offered (docs/publication.md).
    pub fn offers_whole(&self, gpu: &GpuDevice) -> bool {
        gpu.mig.is_none() || self.mig_offering == MigOffering::Partitionable
    }

    /// The slice names offered on `gpu`, for error messages.
    pub fn slice_names(&self, gpu: &GpuDevice) -> Vec<&str> {
        self.mig
            .iter()
            .filter(|m| self.gpus.get(m.parent).is_some_and(|p| p.name == gpu.name))
            .map(|m| m.name.as_str())
            .collect()
    }
}

/// The inventory name of the GPU at NVML index `index`.
pub fn gpu_device_name(index: u32) -> String {
    format!("gpu-{index}")
}

/// The attributes of a whole GPU, keyed as NVIDIA's DRA driver keys them,
/// and the standard attributes of Kubernetes (domain `resource.kubernetes.io`,
/// "Standard Device Attributes for Dynamic Resource Allocation",
/// kubernetes.io/docs/reference/node/dra-standard-device-attributes/):
/// `pciBusID`, `pcieRoot` (`pci<domain>:<bus>`) and `numaNode` (an int, the
/// scalar form), the last two only where the kernel tells them: a device
/// without NUMA affinity must not publish `numaNode`. A GPU attached to a
/// multi-node NVLink fabric (GB200) also carries its clique, `cliqueID` =
/// `<cluster UUID>.<clique id>` (the form NVIDIA's ComputeDomain status
/// uses; the attribute itself is gpuslice's own: NVIDIA's GPU plugin
/// publishes none), and the cluster alone, `clusterUUID`; a MIG slice
/// carries its GPU's.
pub fn gpu_attributes(gpu: &GpuInfo, driver: &DriverInfo) -> BTreeMap<String, AttrValue> {
    let (cc_major, cc_minor) = gpu.compute_capability;
    let (cuda_major, cuda_minor) = driver.cuda_driver_version;
    let mut attrs = BTreeMap::new();
    let mut put = |key: &str, value: AttrValue| {
        attrs.insert(key.to_owned(), value);
    };
    put("type", AttrValue::Str("gpu".into()));
    put("uuid", AttrValue::Str(gpu.uuid.clone()));
    put("productName", AttrValue::Str(gpu.product_name.clone()));
    put("brand", AttrValue::Str(gpu.brand.clone()));
    put("architecture", AttrValue::Str(gpu.architecture.clone()));
    put(
        "cudaComputeCapability",
        AttrValue::Version(format!("{cc_major}.{cc_minor}.0")),
    );
    put(
        "driverVersion",
        AttrValue::Version(normalize_version(&driver.driver_version)),
    );
    put(
        "cudaDriverVersion",
        AttrValue::Version(format!("{cuda_major}.{cuda_minor}.0")),
    );
    put("pcieBusID", AttrValue::Str(gpu.pci_bus_id.clone()));
    put(
        "resource.kubernetes.io/pciBusID",
        AttrValue::Str(gpu.pci_bus_id.clone()),
    );
    if let Some(root) = &gpu.pcie_root {
        put(
            "resource.kubernetes.io/pcieRoot",
            AttrValue::Str(root.clone()),
        );
    }
    if let Some(node) = gpu.numa_node {
        put(
            "resource.kubernetes.io/numaNode",
            AttrValue::Int(i64::from(node)),
        );
    }
    put("index", AttrValue::Int(i64::from(gpu.index)));
    put("minor", AttrValue::Int(i64::from(gpu.minor)));
    if let Some(fabric) = &gpu.fabric
        && let Some(clique) = fabric.clique()
    {
        put("cliqueID", AttrValue::Str(clique));
        put("clusterUUID", AttrValue::Str(fabric.cluster_uuid.clone()));
    }
    attrs
}

/// The attributes of a whole GPU as offered: [`gpu_attributes`] and
/// `migManaged`, true when the `[mig]` config manages it (offered whole only
/// in partitionable mode, and never shared by MPS or time-slicing), so a
/// DeviceClass for sharing can leave it out.
pub fn whole_gpu_attributes(gpu: &GpuDevice, driver: &DriverInfo) -> BTreeMap<String, AttrValue> {
    let mut attrs = gpu_attributes(&gpu.info, driver);
    attrs.insert("migManaged".to_owned(), AttrValue::Bool(gpu.mig.is_some()));
    attrs
}

/// The capacities of a whole GPU: `memory` in bytes.
pub fn gpu_capacity(gpu: &GpuInfo) -> BTreeMap<String, i64> {
    let memory = i64::try_from(gpu.memory_bytes).unwrap_or(i64::MAX);
    BTreeMap::from([("memory".to_owned(), memory)])
}

/// Turns a driver version such as "535.104.05" into semver ("535.104.5"):
/// Kubernetes validates version attributes as semver, which forbids leading
/// zeros, and pads a missing patch ("550.54" → "550.54.0").
pub fn normalize_version(raw: &str) -> String {
    let mut parts: Vec<String> = raw
        .trim()
        .split('.')
        .take(3)
        .map(|p| {
            let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
            digits
                .parse::<u64>()
                .map_or_else(|_| "0".to_owned(), |n| n.to_string())
        })
        .collect();
    while parts.len() < 3 {
        parts.push("0".to_owned());
    }
    parts.join(".")
}

#[cfg(test)]
mod tests;
