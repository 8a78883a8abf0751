//! Unprepare: undo a prepare; a claim the daemon does not know is a success.

use super::error::ClaimError;
use super::request::validate_uid;
use super::{Engine, Unprepared, lock};

impl Engine {
    /// Removes the claim's CDI spec and record and frees its devices.
    pub fn unprepare(&self, uid: &str) -> Result<Unprepared, ClaimError> {
        validate_uid(uid)?;
        self.claim_locks.run(uid, || {
            let Some(record) = lock(&self.table).get(uid).cloned() else {
                return Ok(Unprepared::NotPresent);
            };
            // Spec first: a crash after it leaves a record whose spec
            // reconcile rewrites, and the kubelet's retry finishes the job.
            self.remove_spec(&record)?;
            self.store.remove(uid)?;
            lock(&self.table).remove(uid);
            tracing::info!(claim_uid = %uid, "claim unprepared");
            Ok(Unprepared::Removed)
        })
    }
}
