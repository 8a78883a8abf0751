//! [`observe`]: the GPU backend the engine talks to. In builds with crash
//! points it is `Observed`: each verb that changes the hardware passes its
//! point ([`crate::crash`]) once the backend has answered that it is done;
//! reads are passed through. Without them it is the backend as it is.

use std::sync::Arc;

use super::GpuBackend;
#[cfg(feature = "failpoints")]
use super::{
    ComputeInstance, ComputeMode, DriverInfo, GpuError, GpuInfo, GpuInstance, GpuProcess,
    HealthWatch, MemoryUse, MigMode, MigProfile, MigSupport, Placement, ProcessUtilization,
};

/// The backend the engine uses: with `failpoints`, wrapped so that every
/// hardware change passes its point.
pub fn observe(backend: Arc<dyn GpuBackend>) -> Arc<dyn GpuBackend> {
    #[cfg(feature = "failpoints")]
    return Arc::new(Observed(backend));
    #[cfg(not(feature = "failpoints"))]
    backend
}

/// A backend whose hardware changes pass crash points.
#[cfg(feature = "failpoints")]
#[derive(Debug)]
pub struct Observed(pub Arc<dyn GpuBackend>);

/// Passes `point` when `result` says the step was taken.
#[cfg(feature = "failpoints")]
fn after<T>(point: &'static str, result: Result<T, GpuError>) -> Result<T, GpuError> {
    if result.is_ok() {
        crate::crash::crash_point(point);
    }
    result
}

#[cfg(feature = "failpoints")]
impl GpuBackend for Observed {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn driver_info(&self) -> Result<DriverInfo, GpuError> {
        self.0.driver_info()
    }

    fn device_count(&self) -> Result<u32, GpuError> {
        self.0.device_count()
    }

    fn device_info(&self, index: u32) -> Result<GpuInfo, GpuError> {
        self.0.device_info(index)
    }

    fn mig_profiles(&self, index: u32) -> Result<Vec<MigProfile>, GpuError> {
        self.0.mig_profiles(index)
    }

    fn set_mig_mode(&self, index: u32, mode: MigMode) -> Result<MigSupport, GpuError> {
        let result = self.0.set_mig_mode(index, mode);
        after("gpu.after_mig_mode_set", result)
    }

    fn gpu_instances(&self, index: u32) -> Result<Vec<GpuInstance>, GpuError> {
        self.0.gpu_instances(index)
    }

    fn create_gpu_instance(
        &self,
        index: u32,
        profile_id: u32,
        placement: Placement,
    ) -> Result<GpuInstance, GpuError> {
        let result = self.0.create_gpu_instance(index, profile_id, placement);
        after("gpu.after_gi_created", result)
    }

    fn create_compute_instance(&self, index: u32, gi_id: u32) -> Result<ComputeInstance, GpuError> {
        let result = self.0.create_compute_instance(index, gi_id);
        after("gpu.after_ci_created", result)
    }

    fn destroy_compute_instance(&self, index: u32, gi_id: u32, ci_id: u32) -> Result<(), GpuError> {
        let result = self.0.destroy_compute_instance(index, gi_id, ci_id);
        after("gpu.after_ci_destroyed", result)
    }

    fn destroy_gpu_instance(&self, index: u32, gi_id: u32) -> Result<(), GpuError> {
        let result = self.0.destroy_gpu_instance(index, gi_id);
        after("gpu.after_gi_destroyed", result)
    }

    fn compute_mode(&self, index: u32) -> Result<ComputeMode, GpuError> {
        self.0.compute_mode(index)
    }

    fn set_compute_mode(&self, index: u32, mode: ComputeMode) -> Result<(), GpuError> {
        let result = self.0.set_compute_mode(index, mode);
        after("gpu.after_compute_mode_set", result)
    }

    fn processes(&self, index: u32) -> Result<Vec<GpuProcess>, GpuError> {
        self.0.processes(index)
    }

    fn process_utilization(
        &self,
        index: u32,
        since_us: u64,
    ) -> Result<Vec<ProcessUtilization>, GpuError> {
        self.0.process_utilization(index, since_us)
    }

    fn memory_use(&self, index: u32, gpu_instance: Option<u32>) -> Result<MemoryUse, GpuError> {
        self.0.memory_use(index, gpu_instance)
    }

    fn watch_health(&self) -> Result<Box<dyn HealthWatch + '_>, GpuError> {
        self.0.watch_health()
    }
}
