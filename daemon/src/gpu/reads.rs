//! Narrow, read-only views of a [`GpuBackend`] for the modules that watch the
//! GPUs rather than change them: [`UsageReads`] (the activity sampler: each
//! GPU's processes, their utilization and the memory in use) and
//! [`HealthReads`] (the health watcher: the event watch and the GPU
//! instances an event names). Holding one, a module cannot create, destroy
//! or reconfigure anything; the claim engine hands them out and keeps the
//! backend itself.

use super::{
    GpuBackend, GpuError, GpuInstance, GpuProcess, HealthWatch, MemoryUse, ProcessUtilization,
};

/// What the activity sampler reads of the GPUs.
#[derive(Clone, Copy)]
pub struct UsageReads<'a>(&'a dyn GpuBackend);

impl<'a> UsageReads<'a> {
    /// The usage reads of `backend`.
    pub fn new(backend: &'a dyn GpuBackend) -> Self {
        Self(backend)
    }

    /// [`GpuBackend::processes`].
    pub fn processes(&self, index: u32) -> Result<Vec<GpuProcess>, GpuError> {
        self.0.processes(index)
    }

    /// [`GpuBackend::process_utilization`].
    pub fn process_utilization(
        &self,
        index: u32,
        since_us: u64,
    ) -> Result<Vec<ProcessUtilization>, GpuError> {
        self.0.process_utilization(index, since_us)
    }

    /// [`GpuBackend::memory_use`].
    pub fn memory_use(&self, index: u32, gpu_instance: Option<u32>) -> Result<MemoryUse, GpuError> {
        self.0.memory_use(index, gpu_instance)
    }
}

impl std::fmt::Debug for UsageReads<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UsageReads").field(&self.0.name()).finish()
    }
}

/// What the health watcher reads of the GPUs.
#[derive(Clone, Copy)]
pub struct HealthReads<'a>(&'a dyn GpuBackend);

impl<'a> HealthReads<'a> {
    /// The health reads of `backend`.
    pub fn new(backend: &'a dyn GpuBackend) -> Self {
        Self(backend)
    }

    /// [`GpuBackend::name`].
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// [`GpuBackend::watch_health`].
    pub fn watch_health(&self) -> Result<Box<dyn HealthWatch + 'a>, GpuError> {
        self.0.watch_health()
    }

    /// [`GpuBackend::gpu_instances`].
    pub fn gpu_instances(&self, index: u32) -> Result<Vec<GpuInstance>, GpuError> {
        self.0.gpu_instances(index)
    }
}

impl std::fmt::Debug for HealthReads<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("HealthReads").field(&self.0.name()).finish()
    }
}
