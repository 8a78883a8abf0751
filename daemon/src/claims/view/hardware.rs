//! What the engine reads of the GPUs themselves: the MIG instances of
//! every GPU (GetMigLayout), the narrow reads the sampler and the health
//! watcher take, the backend's name (and, for tests, the backend).

use super::super::Engine;
use super::GpuMigView;
#[cfg(any(test, feature = "testkit"))]
use crate::gpu::GpuBackend;
use crate::gpu::{HealthReads, UsageReads};

impl Engine {
    /// Every GPU of the inventory with its MIG instances and their holders
    /// (the MIG kind's view).
    pub(crate) fn mig_view(&self) -> Vec<GpuMigView> {
        super::super::access::mig::layout(&self.cx())
    }

    /// The hardware backend itself, for tests and the test kit only: the
    /// daemon's own modules read through [`Engine::usage_reads`] and
    /// [`Engine::health_reads`], and change the hardware through the verbs.
    #[cfg(any(test, feature = "testkit"))]
    pub fn backend(&self) -> &dyn GpuBackend {
        self.env.backend.as_ref()
    }

    /// What the activity sampler may read of the GPUs.
    pub(crate) fn usage_reads(&self) -> UsageReads<'_> {
        UsageReads::new(self.env.backend.as_ref())
    }

    /// What the health watcher may read of the GPUs.
    pub(crate) fn health_reads(&self) -> HealthReads<'_> {
        HealthReads::new(self.env.backend.as_ref())
    }

    /// The backend's name ("sim" or "nvml").
    pub(crate) fn backend_name(&self) -> &'static str {
        self.env.backend.name()
    }
}
