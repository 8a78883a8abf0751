//! [`GpuBackend`] for [`SimBackend`]: each verb is a fault check, then the
//! pure rule from `hardware` run under the GPU's lock (see the module doc of
//! `sim` for locking and persistence). Nothing else lives here.

use super::health::SimHealthWatch;
use super::process_rules as rules;
use super::{CUDA_DRIVER_VERSION, DRIVER_VERSION, SimBackend, op};
use crate::gpu::{
    ComputeInstance, ComputeMode, DriverInfo, GpuBackend, GpuError, GpuInfo, GpuInstance,
    GpuProcess, HealthWatch, MemoryUse, MigMode, MigProfile, MigSupport, Placement,
    ProcessUtilization,
};

impl GpuBackend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn driver_info(&self) -> Result<DriverInfo, GpuError> {
        self.faults.check(op::DRIVER_INFO)?.wait();
        Ok(DriverInfo {
            driver_version: DRIVER_VERSION.into(),
            cuda_driver_version: CUDA_DRIVER_VERSION,
        })
    }

    fn device_count(&self) -> Result<u32, GpuError> {
        self.faults.check(op::DEVICE_COUNT)?.wait();
        u32::try_from(self.gpus.len()).map_err(|_| GpuError::Nvml {
            call: "nvmlDeviceGetCount_v2",
            message: "more simulated GPUs than NVML can count".into(),
        })
    }

    fn device_info(&self, index: u32) -> Result<GpuInfo, GpuError> {
        let mig = self.read(index, op::DEVICE_INFO, |state, gpu| {
            Ok(state.mig_support(gpu))
        })?;
        let gpu = self.gpu(index)?;
        let spec = gpu.model.spec();
        Ok(GpuInfo {
            index,
            uuid: gpu.uuid.clone(),
            product_name: spec.product_name.into(),
            brand: spec.brand.into(),
            architecture: spec.architecture.into(),
            compute_capability: spec.compute_capability,
            memory_bytes: spec.memory_bytes,
            pci_bus_id: gpu.place.bus_id.clone(),
            pcie_root: Some(gpu.place.pcie_root.clone()),
            numa_node: gpu.place.numa_node,
            minor: index,
            mig,
            nvlink_links: gpu.nvlink_links,
            fabric: gpu.fabric.clone(),
        })
    }

    fn mig_profiles(&self, index: u32) -> Result<Vec<MigProfile>, GpuError> {
        self.read(index, op::MIG_PROFILES, |_, gpu| {
            super::hardware::SimGpuState::profiles(gpu)
        })
    }

    fn set_mig_mode(&self, index: u32, mode: MigMode) -> Result<MigSupport, GpuError> {
        self.change(index, op::SET_MIG_MODE, |state, gpu, held| {
            state.set_mig_mode(gpu, mode, held.busy()?)
        })
    }

    fn gpu_instances(&self, index: u32) -> Result<Vec<GpuInstance>, GpuError> {
        self.read(index, op::GPU_INSTANCES, |state, gpu| state.instances(gpu))
    }

    fn create_gpu_instance(
        &self,
        index: u32,
        profile_id: u32,
        placement: Placement,
    ) -> Result<GpuInstance, GpuError> {
        self.change(index, op::CREATE_GPU_INSTANCE, |state, gpu, _| {
            state.create_gi(gpu, profile_id, placement)
        })
    }

    fn create_compute_instance(&self, index: u32, gi_id: u32) -> Result<ComputeInstance, GpuError> {
        self.change(index, op::CREATE_COMPUTE_INSTANCE, |state, gpu, _| {
            state.create_ci(gpu, gi_id)
        })
    }

    fn destroy_compute_instance(&self, index: u32, gi_id: u32, ci_id: u32) -> Result<(), GpuError> {
        self.change(index, op::DESTROY_COMPUTE_INSTANCE, |state, gpu, held| {
            state.destroy_ci(gpu, gi_id, ci_id, &held.on_compute_instance(gi_id, ci_id)?)
        })
    }

    fn destroy_gpu_instance(&self, index: u32, gi_id: u32) -> Result<(), GpuError> {
        self.change(index, op::DESTROY_GPU_INSTANCE, |state, gpu, _| {
            state.destroy_gi(gpu, gi_id)
        })
    }

    fn compute_mode(&self, index: u32) -> Result<ComputeMode, GpuError> {
        self.read(index, op::COMPUTE_MODE, |state, _| Ok(state.compute_mode))
    }

    fn set_compute_mode(&self, index: u32, mode: ComputeMode) -> Result<(), GpuError> {
        self.change(index, op::SET_COMPUTE_MODE, |state, _, _| {
            state.compute_mode = mode;
            Ok(())
        })
    }

    fn processes(&self, index: u32) -> Result<Vec<GpuProcess>, GpuError> {
        self.read(index, op::PROCESSES, |state, gpu| {
            Ok(rules::list(&self.placed(state, gpu)?))
        })
    }

    fn process_utilization(
        &self,
        index: u32,
        since_us: u64,
    ) -> Result<Vec<ProcessUtilization>, GpuError> {
        self.read(index, op::PROCESS_UTILIZATION, |state, gpu| {
            let placed = self.placed(state, gpu)?;
            rules::utilization(state, gpu, &placed, since_us, now_us())
        })
    }

    fn memory_use(&self, index: u32, gpu_instance: Option<u32>) -> Result<MemoryUse, GpuError> {
        self.read(index, op::MEMORY_USE, |state, gpu| {
            let placed = self.placed(state, gpu)?;
            rules::memory_use(state, gpu, &placed, gpu_instance)
        })
    }

    fn watch_health(&self) -> Result<Box<dyn HealthWatch + '_>, GpuError> {
        self.faults.check(op::WATCH_HEALTH)?.wait();
        Ok(Box::new(SimHealthWatch::new(self)))
    }
}

/// The wall clock in microseconds since the epoch, as NVML stamps samples.
fn now_us() -> u64 {
    (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}
