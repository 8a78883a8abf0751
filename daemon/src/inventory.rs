//! The node's devices as the DRA shim publishes them: names, attributes and
//! capacities, built from what the backend reports.
//!
//! Pure: [`Inventory::from_backend`] is the only function that calls the
//! backend; everything else works on plain data. Attribute keys and value
//! kinds follow NVIDIA's DRA driver, so existing CEL selectors such as
//! `device.attributes["gpu.nvidia.com"].productName` keep working.

use std::collections::{BTreeMap, HashMap};

use crate::gpu::{DriverInfo, GpuBackend, GpuError, GpuInfo};

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
}

/// Every device of the node, with the driver's versions. Lookups by name and
/// by UUID are hashed: a prepare's cost must not grow with the node's size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inventory {
    /// Driver and CUDA versions, shared by every GPU.
    pub driver: DriverInfo,
    /// Whole GPUs, by index.
    pub gpus: Vec<GpuDevice>,
    by_name: HashMap<String, usize>,
    by_uuid: HashMap<String, usize>,
}

impl Inventory {
    /// Asks the backend for every GPU.
    pub fn from_backend(backend: &dyn GpuBackend) -> Result<Self, GpuError> {
        let driver = backend.driver_info()?;
        let count = backend.device_count()?;
        let gpus = (0..count)
            .map(|index| {
                backend.device_info(index).map(|info| GpuDevice {
                    name: gpu_device_name(info.index),
                    info,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self::new(driver, gpus))
    }

    /// An inventory of `gpus`, indexed.
    pub fn new(driver: DriverInfo, gpus: Vec<GpuDevice>) -> Self {
        let by_name = gpus
            .iter()
            .enumerate()
            .map(|(i, g)| (g.name.clone(), i))
            .collect();
        let by_uuid = gpus
            .iter()
            .enumerate()
            .map(|(i, g)| (g.info.uuid.clone(), i))
            .collect();
        Self {
            driver,
            gpus,
            by_name,
            by_uuid,
        }
    }

    /// The GPU with inventory name `name`.
    pub fn gpu(&self, name: &str) -> Option<&GpuDevice> {
        self.by_name.get(name).and_then(|&i| self.gpus.get(i))
    }

    /// The GPU with this UUID.
    pub fn gpu_by_uuid(&self, uuid: &str) -> Option<&GpuDevice> {
        self.by_uuid.get(uuid).and_then(|&i| self.gpus.get(i))
    }
}

/// The inventory name of the GPU at NVML index `index`.
pub fn gpu_device_name(index: u32) -> String {
    format!("gpu-{index}")
}

/// The attributes of a whole GPU, keyed as NVIDIA's DRA driver keys them.
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
    put("index", AttrValue::Int(i64::from(gpu.index)));
    put("minor", AttrValue::Int(i64::from(gpu.minor)));
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
mod tests {
    use super::*;
    use crate::gpu::{MigMode, MigSupport};

    fn h100() -> GpuInfo {
        GpuInfo {
            index: 3,
            uuid: "GPU-6f1e3c2a-0000-4000-8000-000000000003".into(),
            product_name: "NVIDIA H100 80GB HBM3".into(),
            brand: "Nvidia".into(),
            architecture: "Hopper".into(),
            compute_capability: (9, 0),
            memory_bytes: 85_520_809_984,
            pci_bus_id: "0000:1b:00.0".into(),
            pcie_root: Some("pci0000:1a".into()),
            minor: 5,
            mig: MigSupport::Supported {
                current: MigMode::Disabled,
                pending: MigMode::Disabled,
            },
        }
    }

    fn driver() -> DriverInfo {
        DriverInfo {
            driver_version: "535.104.05".into(),
            cuda_driver_version: (12, 2),
        }
    }

    #[test]
    fn attributes_use_nvidia_keys_and_kinds() {
        let attrs = gpu_attributes(&h100(), &driver());
        let s = |k: &str| attrs.get(k).cloned();
        assert_eq!(s("type"), Some(AttrValue::Str("gpu".into())));
        assert_eq!(
            s("productName"),
            Some(AttrValue::Str("NVIDIA H100 80GB HBM3".into()))
        );
        assert_eq!(s("architecture"), Some(AttrValue::Str("Hopper".into())));
        assert_eq!(s("brand"), Some(AttrValue::Str("Nvidia".into())));
        assert_eq!(
            s("cudaComputeCapability"),
            Some(AttrValue::Version("9.0.0".into()))
        );
        assert_eq!(
            s("driverVersion"),
            Some(AttrValue::Version("535.104.5".into()))
        );
        assert_eq!(
            s("cudaDriverVersion"),
            Some(AttrValue::Version("12.2.0".into()))
        );
        assert_eq!(s("pcieBusID"), Some(AttrValue::Str("0000:1b:00.0".into())));
        assert_eq!(
            s("resource.kubernetes.io/pciBusID"),
            Some(AttrValue::Str("0000:1b:00.0".into()))
        );
        assert_eq!(
            s("resource.kubernetes.io/pcieRoot"),
            Some(AttrValue::Str("pci0000:1a".into()))
        );
        assert_eq!(s("index"), Some(AttrValue::Int(3)));
        assert_eq!(s("minor"), Some(AttrValue::Int(5)));
        assert_eq!(
            s("uuid"),
            Some(AttrValue::Str(
                "GPU-6f1e3c2a-0000-4000-8000-000000000003".into()
            ))
        );
    }

    #[test]
    fn attributes_fit_resource_slice_limits() {
        let attrs = gpu_attributes(&h100(), &driver());
        let capacity = gpu_capacity(&h100());
        assert!(attrs.len() + capacity.len() <= 32);
        for (key, value) in &attrs {
            let name = key.rsplit('/').next().unwrap_or(key);
            assert!(name.len() <= 32, "{key}");
            if let AttrValue::Str(s) | AttrValue::Version(s) = value {
                assert!(s.len() <= 64, "{key}");
            }
        }
    }

    #[test]
    fn capacity_is_memory_in_bytes() {
        assert_eq!(gpu_capacity(&h100()).get("memory"), Some(&85_520_809_984));
    }

    #[test]
    fn pcie_root_is_left_out_when_unknown() {
        let mut gpu = h100();
        gpu.pcie_root = None;
        assert!(!gpu_attributes(&gpu, &driver()).contains_key("resource.kubernetes.io/pcieRoot"));
    }

    #[test]
    fn versions_become_semver() {
        assert_eq!(normalize_version("580.95.05"), "580.95.5");
        assert_eq!(normalize_version("550.54"), "550.54.0");
        assert_eq!(normalize_version("470"), "470.0.0");
        assert_eq!(normalize_version("535.104.05-beta"), "535.104.5");
        assert_eq!(normalize_version(""), "0.0.0");
    }

    #[test]
    fn device_names_are_dns_labels() {
        for index in [0, 7, 123] {
            let name = gpu_device_name(index);
            assert!(name.len() <= 63);
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            );
        }
    }
}
