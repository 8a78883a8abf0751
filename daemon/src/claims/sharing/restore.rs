//! Sharing at start-up, the reconcile verb of MPS and time-slicing.
//!
//! [`Engine::reconcile`] has put every prepared claim back in the sharing
//! books; then, in this order:
//! 1. daemons of claims that are gone are stopped, with their units, shm
//!    mounts and folders (`cleanup_stale`, before any acquire), and their
//!    whole GPUs that no live claim shares go back to compute mode DEFAULT;
//! 2. a `preparing` record's time-slice and compute mode are reset where no
//!    live claim uses the GPU (its daemon, if it got one, went in step 1);
//! 3. after the MIG set-up, [`Engine::restore_sharing`] brings back the
//!    daemons of live claims (a running one is adopted, not restarted; after
//!    a reboot it is started again under the same key hash, so the same pipe
//!    dir and CDI ids) and sets compute modes and time-slices again (they do
//!    not survive a reboot).

use super::{has_sharing, mps_uses};
use crate::claims::reconcile::ReconcileReport;
use crate::claims::{Engine, lock};
use crate::gpu::ComputeMode;
use crate::sharing::TimeSliceInterval;
use crate::state::{ClaimRecord, DeviceSharing, Phase};

impl Engine {
    /// Step 1: stops daemons no prepared claim uses.
    pub(in crate::claims) fn stop_stale_daemons(&self, report: &mut ReconcileReport) {
        let Some(tools) = &self.sharing.tools else {
            return;
        };
        let live: Vec<_> = lock(&self.table)
            .records()
            .iter()
            .flat_map(mps_uses)
            .map(|one| one.key)
            .collect();
        match tools.mps.cleanup_stale(&live) {
            Ok(stopped) => {
                for daemon in &stopped {
                    tracing::info!(daemon = %daemon.hash, devices = ?daemon.devices, "stopped an MPS control daemon whose claims are gone");
                    for uuid in &daemon.devices {
                        let unused = lock(&self.sharing.state).policy.claims(uuid).is_empty();
                        if unused {
                            // A MIG UUID is no whole GPU: nothing to reset.
                            self.reset_compute_mode(uuid);
                        }
                    }
                }
                report.daemons_stopped += stopped.len();
            }
            Err(err) => report.problems.push(format!(
                "MPS control daemons left from claims that are gone could not all be stopped: {err}"
            )),
        }
    }

    /// Step 2: resets what a prepare cut short may have set on GPUs that no
    /// live claim shares.
    pub(in crate::claims) fn roll_back_sharing(&self, record: &ClaimRecord) -> Vec<String> {
        let mut problems = Vec::new();
        for d in record.devices.iter().filter(|d| d.mig.is_none()) {
            let Some(sharing) = &d.sharing else {
                continue;
            };
            if !lock(&self.sharing.state).policy.claims(&d.uuid).is_empty() {
                continue;
            }
            let reset = match sharing {
                DeviceSharing::Mps(_) => self
                    .ensure_compute_mode(&d.uuid, ComputeMode::Default)
                    .map(drop),
                DeviceSharing::Timeslicing { .. } => self
                    .sharing_tools(&record.uid)
                    .and_then(|tools| {
                        Ok(tools
                            .timeslice
                            .set_timeslice(&d.uuid, TimeSliceInterval::Default)?)
                    })
                    .map(drop),
            };
            if let Err(err) = reset {
                problems.push(format!(
                    "claim {}: {} ({}) could not be reset after a prepare cut short: {err}",
                    record.uid, d.device, d.uuid
                ));
            }
        }
        problems
    }

    /// Step 3: brings back the sharing of every prepared claim. Returns the
    /// problems (also kept for status); a claim whose daemon cannot start is
    /// a problem, not a failed start.
    pub fn restore_sharing(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for record in self.claims() {
            if record.phase != Phase::Prepared || !has_sharing(&record) {
                continue;
            }
            problems.extend(self.restore_timeslices(&record));
            problems.extend(self.restore_mps(&record));
        }
        for problem in &problems {
            tracing::error!(%problem, "sharing");
        }
        lock(&self.sharing.state).problems.clone_from(&problems);
        problems
    }
}
