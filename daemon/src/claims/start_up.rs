//! The engine's start-up, in the one order production and the test kit
//! share: reconcile the records and CDI specs, apply the MIG config, then
//! bring back the sharing (MPS daemons, time-slices) of prepared claims.

use super::error::ClaimError;
use super::{Engine, ReconcileReport};

impl Engine {
    /// Reconciles, runs `apply_mig` (the MIG set-up: gpusliced goes through
    /// its advertiser, a test calls [`Engine::setup_mig`]), then restores
    /// sharing. Call once, before the first prepare, after
    /// [`Engine::with_sharing`] and the device health restore. A MIG
    /// set-up that fails stops the start-up; its problems and the sharing
    /// restore's are kept for status.
    pub fn start_up(
        &self,
        apply_mig: impl FnOnce(&Engine) -> Result<Vec<String>, ClaimError>,
    ) -> Result<ReconcileReport, ClaimError> {
        let report = self.reconcile()?;
        apply_mig(self)?;
        self.restore_sharing();
        Ok(report)
    }
}
