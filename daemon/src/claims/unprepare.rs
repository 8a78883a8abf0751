//! Unprepare: undo a prepare (spec, hardware, record, in that order); a claim
//! the daemon does not know is a success.

use super::error::ClaimError;
use super::request::validate_uid;
use super::{Engine, Unprepared, lock};

impl Engine {
    /// Removes the claim's CDI spec, destroys the slices it created, removes
    /// its record and frees its devices.
    pub fn unprepare(&self, uid: &str) -> Result<Unprepared, ClaimError> {
        validate_uid(uid)?;
        self.claim_locks.run(uid, || {
            let Some(record) = lock(&self.table).get(uid).cloned() else {
                return Ok(Unprepared::NotPresent);
            };
            // Spec first: a crash after it leaves a record whose spec
            // reconcile rewrites, and the kubelet's retry finishes the job.
            self.remove_spec(&record)?;
            // Hardware second: a slice in use (the container has not stopped
            // yet) fails here, the record stays, and the retry finishes.
            self.release_hardware(&record)?;
            self.store.remove(uid)?;
            lock(&self.table).remove(uid);
            if record
                .devices
                .iter()
                .any(|d| d.mig.as_ref().is_some_and(|m| m.created))
            {
                self.reorder_offer();
            }
            tracing::info!(claim_uid = %uid, "claim unprepared");
            Ok(Unprepared::Removed)
        })
    }
}
