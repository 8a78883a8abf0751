//! Real GPUs through NVML. Placeholder: filled in by the gpu work item.

use std::path::Path;

use super::{DriverInfo, GpuBackend, GpuError, GpuInfo};

/// Placeholder NVML backend.
#[derive(Debug)]
pub struct NvmlBackend;

impl NvmlBackend {
    /// Placeholder: always fails to load.
    pub fn open(library: Option<&Path>) -> Result<Self, GpuError> {
        Err(GpuError::LibraryLoad {
            library: library.map_or_else(
                || "libnvidia-ml.so.1".to_owned(),
                |p| p.display().to_string(),
            ),
            reason: "not built yet".to_owned(),
        })
    }
}

impl GpuBackend for NvmlBackend {
    fn name(&self) -> &'static str {
        "nvml"
    }
    fn driver_info(&self) -> Result<DriverInfo, GpuError> {
        Err(GpuError::NoSuchGpu { index: 0 })
    }
    fn device_count(&self) -> Result<u32, GpuError> {
        Ok(0)
    }
    fn device_info(&self, index: u32) -> Result<GpuInfo, GpuError> {
        Err(GpuError::NoSuchGpu { index })
    }
}
