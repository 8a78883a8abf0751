//! Tests of whole-GPU attributes and naming.
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
        numa_node: Some(1),
        minor: 5,
        mig: MigSupport::Supported {
            current: MigMode::Disabled,
            pending: MigMode::Disabled,
        },
        nvlink_links: 0,
        fabric: None,
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
    let text = |v: &str| AttrValue::Str(v.into());
    let version = |v: &str| AttrValue::Version(v.into());
    for (key, want) in [
        ("type", text("gpu")),
        ("productName", text("NVIDIA H100 80GB HBM3")),
        ("architecture", text("Hopper")),
        ("brand", text("Nvidia")),
        ("cudaComputeCapability", version("9.0.0")),
        ("driverVersion", version("535.104.5")),
        ("cudaDriverVersion", version("12.2.0")),
        ("pcieBusID", text("0000:1b:00.0")),
        ("resource.kubernetes.io/pciBusID", text("0000:1b:00.0")),
        ("resource.kubernetes.io/pcieRoot", text("pci0000:1a")),
        ("resource.kubernetes.io/numaNode", AttrValue::Int(1)),
        ("index", AttrValue::Int(3)),
        ("minor", AttrValue::Int(5)),
        ("uuid", text("GPU-6f1e3c2a-0000-4000-8000-000000000003")),
    ] {
        assert_eq!(attrs.get(key), Some(&want), "{key}");
    }
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
fn numa_node_is_left_out_without_numa_affinity() {
    let mut gpu = h100();
    gpu.numa_node = None;
    assert!(!gpu_attributes(&gpu, &driver()).contains_key("resource.kubernetes.io/numaNode"));
    gpu.numa_node = Some(0);
    assert_eq!(
        gpu_attributes(&gpu, &driver()).get("resource.kubernetes.io/numaNode"),
        Some(&AttrValue::Int(0))
    );
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

#[test]
fn a_mig_managed_gpu_is_offered_whole_only_in_partitionable_mode() {
    let plain = GpuDevice {
        name: "gpu-0".into(),
        ..GpuDevice::new(h100(), Vec::new())
    };
    let managed = GpuDevice {
        name: "gpu-1".into(),
        mig: Some(GpuMig::new(Vec::new())),
        ..GpuDevice::new(h100(), Vec::new())
    };
    let mut inventory = Inventory::new(driver(), vec![plain.clone(), managed.clone()], vec![]);
    assert!(inventory.offers_whole(&plain));
    assert!(!inventory.offers_whole(&managed));
    inventory.mig_offering = MigOffering::Partitionable;
    assert!(inventory.offers_whole(&managed));
    let flag = |gpu: &GpuDevice| {
        whole_gpu_attributes(gpu, &driver())
            .get("migManaged")
            .cloned()
    };
    assert_eq!(flag(&plain), Some(AttrValue::Bool(false)));
    assert_eq!(flag(&managed), Some(AttrValue::Bool(true)));
}
