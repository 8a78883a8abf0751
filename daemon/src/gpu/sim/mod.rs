//! Simulated GPUs. Placeholder implementation until the gpu work item lands:
//! serves H100-80GB facts for every configured GPU.

use super::{DriverInfo, GpuBackend, GpuError, GpuInfo, MigMode, MigSupport};

/// A simulated node with `count` H100-80GB GPUs.
#[derive(Debug)]
pub struct SimBackend {
    count: u32,
}

impl SimBackend {
    /// A node with one GPU per model.
    pub fn new(models: Vec<SimModel>, _seed: &str) -> Self {
        Self {
            count: u32::try_from(models.len()).unwrap_or(u32::MAX),
        }
    }
}

impl GpuBackend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn driver_info(&self) -> Result<DriverInfo, GpuError> {
        Ok(DriverInfo {
            driver_version: "580.95.05".into(),
            cuda_driver_version: (13, 0),
        })
    }

    fn device_count(&self) -> Result<u32, GpuError> {
        Ok(self.count)
    }

    fn device_info(&self, index: u32) -> Result<GpuInfo, GpuError> {
        if index >= self.count {
            return Err(GpuError::NoSuchGpu { index });
        }
        Ok(GpuInfo {
            index,
            uuid: format!("GPU-00000000-0000-4000-8000-{index:012x}"),
            product_name: "NVIDIA H100 80GB HBM3".into(),
            brand: "Nvidia".into(),
            architecture: "Hopper".into(),
            compute_capability: (9, 0),
            memory_bytes: 85_520_809_984,
            pci_bus_id: format!("0000:{:02x}:00.0", 0x18 + index),
            pcie_root: Some(format!("pci0000:{:02x}", 0x17 + index)),
            minor: index,
            mig: MigSupport::Supported {
                current: MigMode::Disabled,
                pending: MigMode::Disabled,
            },
        })
    }
}

/// Placeholder model list until the gpu work item lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[expect(non_camel_case_types, reason = "model names as NVIDIA writes them")]
pub enum SimModel {
    /// H100 SXM 80GB.
    #[serde(rename = "H100-80GB")]
    H100_80GB,
    /// A100 SXM 40GB.
    #[serde(rename = "A100-40GB")]
    A100_40GB,
    /// H100 NVL.
    #[serde(rename = "H100-NVL-94GB")]
    H100_NVL_94GB,
}
