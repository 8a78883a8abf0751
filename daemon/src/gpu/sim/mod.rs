//! Simulated GPUs: per-model tables ([`models`]) feeding one generic engine.
//!
//! Owns the simulated node: which models sit at which index, their identity
//! (deterministic UUIDs and PCI addresses derived from a node seed), and the
//! "hardware" state a real GPU keeps on its own ([`SimGpuState`]). Answers
//! with the same [`GpuError`] variants NVML would, and lets tests inject them
//! through [`Faults`]. No I/O yet: persisting [`SimGpuState`] across a daemon
//! restart comes later and plugs in where [`SimBackend::new`] builds the
//! fresh-boot state.

mod faults;
pub mod models;
mod tables;

#[cfg(test)]
mod table_checks;
#[cfg(test)]
mod tests;

use std::sync::{Mutex, PoisonError};

use uuid::Uuid;

pub use faults::{Faults, op};
pub use models::{Engines, GiProfile, ModelSpec, Placement, SimModel};

use super::{
    ComputeInstance, ComputeMode, DriverInfo, GpuBackend, GpuError, GpuInfo, GpuInstance, MigMode,
    MigProfile, MigSupport,
};

/// The driver version every simulated node reports.
pub const DRIVER_VERSION: &str = "580.95.05";
/// The CUDA driver API version every simulated node reports.
pub const CUDA_DRIVER_VERSION: (u32, u32) = (13, 0);

/// Namespace of simulated GPU UUIDs (a fixed random v4 UUID, never change it:
/// UUIDs in persisted claims and CDI specs depend on it).
const UUID_NAMESPACE: Uuid = Uuid::from_u128(0x6c1d_3f0e_9a4b_4e57_8d21_5b7f_0c93_a8e4);

/// Buses of simulated GPUs in one PCI domain; the next GPU opens a new domain.
const BUSES_PER_DOMAIN: u32 = 32;

/// What a simulated GPU remembers by itself, as real hardware would: the part a
/// later issue persists so it outlives a daemon restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimGpuState {
    /// MIG mode in force.
    pub mig_current: MigMode,
    /// MIG mode after the next activation.
    pub mig_pending: MigMode,
}

impl SimGpuState {
    /// A GPU straight after boot: MIG disabled.
    pub fn fresh() -> Self {
        Self {
            mig_current: MigMode::Disabled,
            mig_pending: MigMode::Disabled,
        }
    }
}

/// One simulated GPU: fixed identity plus mutable hardware state.
#[derive(Debug)]
struct SimGpu {
    model: SimModel,
    uuid: String,
    pci_bus_id: String,
    pcie_root: String,
    state: Mutex<SimGpuState>,
}

impl SimGpu {
    fn new(index: u32, model: SimModel, node_seed: &str) -> Self {
        let domain = index / BUSES_PER_DOMAIN;
        let bus = 0x18 + 7 * (index % BUSES_PER_DOMAIN);
        Self {
            model,
            uuid: gpu_uuid(node_seed, index, model),
            pci_bus_id: format!("{domain:04x}:{bus:02x}:00.0"),
            pcie_root: format!("pci{domain:04x}:{:02x}", bus - 1),
            state: Mutex::new(SimGpuState::fresh()),
        }
    }

    /// The state is plain data replaced whole, so a poisoned lock still holds a
    /// consistent value.
    fn state(&self) -> SimGpuState {
        *self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// "GPU-<uuid v5 of seed, index and model>": stable for a node, distinct across nodes.
fn gpu_uuid(node_seed: &str, index: u32, model: SimModel) -> String {
    let name = format!("{node_seed}/{index}/{model}");
    format!("GPU-{}", Uuid::new_v5(&UUID_NAMESPACE, name.as_bytes()))
}

/// A simulated node: the configured models at indices 0, 1, ...
#[derive(Debug)]
pub struct SimBackend {
    gpus: Vec<SimGpu>,
    faults: Faults,
}

impl SimBackend {
    /// A freshly booted node with `models` in index order. `node_seed` (e.g. the
    /// node name) makes UUIDs differ between nodes and stay put across restarts.
    pub fn new(models: Vec<SimModel>, node_seed: &str) -> SimBackend {
        let gpus = (0u32..)
            .zip(models)
            .map(|(index, model)| SimGpu::new(index, model, node_seed))
            .collect();
        SimBackend {
            gpus,
            faults: Faults::new(),
        }
    }

    /// The fault registry every call of this backend consults.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// The model at `index`.
    pub fn model(&self, index: u32) -> Result<SimModel, GpuError> {
        self.gpu(index).map(|gpu| gpu.model)
    }

    fn gpu(&self, index: u32) -> Result<&SimGpu, GpuError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.gpus.get(i))
            .ok_or(GpuError::NoSuchGpu { index })
    }
}

impl GpuBackend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn driver_info(&self) -> Result<DriverInfo, GpuError> {
        self.faults.check(op::DRIVER_INFO)?;
        Ok(DriverInfo {
            driver_version: DRIVER_VERSION.into(),
            cuda_driver_version: CUDA_DRIVER_VERSION,
        })
    }

    fn device_count(&self) -> Result<u32, GpuError> {
        self.faults.check(op::DEVICE_COUNT)?;
        u32::try_from(self.gpus.len()).map_err(|_| GpuError::Nvml {
            call: "nvmlDeviceGetCount_v2",
            message: "more simulated GPUs than NVML can count".into(),
        })
    }

    fn device_info(&self, index: u32) -> Result<GpuInfo, GpuError> {
        self.faults.check(op::DEVICE_INFO)?;
        let gpu = self.gpu(index)?;
        let spec = gpu.model.spec();
        let state = gpu.state();
        Ok(GpuInfo {
            index,
            uuid: gpu.uuid.clone(),
            product_name: spec.product_name.into(),
            brand: spec.brand.into(),
            architecture: spec.architecture.into(),
            compute_capability: spec.compute_capability,
            memory_bytes: spec.memory_bytes,
            pci_bus_id: gpu.pci_bus_id.clone(),
            pcie_root: Some(gpu.pcie_root.clone()),
            minor: index,
            mig: MigSupport::Supported {
                current: state.mig_current,
                pending: state.mig_pending,
            },
        })
    }
    fn mig_profiles(&self, index: u32) -> Result<Vec<MigProfile>, GpuError> {
        Err(not_yet(index, "MIG profiles"))
    }

    fn set_mig_mode(&self, index: u32, _mode: MigMode) -> Result<MigSupport, GpuError> {
        Err(not_yet(index, "set MIG mode"))
    }

    fn gpu_instances(&self, index: u32) -> Result<Vec<GpuInstance>, GpuError> {
        Err(not_yet(index, "list GPU instances"))
    }

    fn create_gpu_instance(
        &self,
        index: u32,
        _profile_id: u32,
        _placement: Placement,
    ) -> Result<GpuInstance, GpuError> {
        Err(not_yet(index, "create GPU instance"))
    }

    fn create_compute_instance(
        &self,
        index: u32,
        _gi_id: u32,
    ) -> Result<ComputeInstance, GpuError> {
        Err(not_yet(index, "create compute instance"))
    }

    fn destroy_compute_instance(
        &self,
        index: u32,
        _gi_id: u32,
        _ci_id: u32,
    ) -> Result<(), GpuError> {
        Err(not_yet(index, "destroy compute instance"))
    }

    fn destroy_gpu_instance(&self, index: u32, _gi_id: u32) -> Result<(), GpuError> {
        Err(not_yet(index, "destroy GPU instance"))
    }

    fn compute_mode(&self, index: u32) -> Result<ComputeMode, GpuError> {
        Err(not_yet(index, "compute mode"))
    }

    fn set_compute_mode(&self, index: u32, _mode: ComputeMode) -> Result<(), GpuError> {
        Err(not_yet(index, "set compute mode"))
    }
}

/// Placeholder answer until the MIG and compute-mode paths land (issue 3/5).
fn not_yet(index: u32, what: &str) -> GpuError {
    GpuError::NotSupported {
        what: format!("{what} on GPU {index} (not implemented in this backend yet)"),
    }
}
