//! Unprepare: undo a prepare (spec, sharing, MIG hardware, record, in that
//! order: an MPS daemon on a MIG slice quits before the slice goes); a claim
//! the daemon does not know is a success.

use super::error::ClaimError;
use super::request::validate_uid;
use super::{Engine, Unprepared, lock};
use crate::state::ClaimRecord;

impl Engine {
    /// Removes the claim's CDI spec, destroys the slices it created, removes
    /// its record and frees its devices.
    pub fn unprepare(&self, uid: &str) -> Result<Unprepared, ClaimError> {
        validate_uid(uid)?;
        let _operation = self.claim_operation();
        let _claim = self.claim_locks.lock(uid);
        let Some(record) = lock(&self.table).get(uid).cloned() else {
            return Ok(Unprepared::NotPresent);
        };
        let done = {
            let _gpus = self.lock_gpus(&record);
            self.take_down(&record)
        };
        // Even a take-down cut short may have released sharing (memory
        // left) before it stopped: readers look again either way.
        self.env.bump();
        done
    }

    fn take_down(&self, record: &ClaimRecord) -> Result<Unprepared, ClaimError> {
        let uid = record.uid.as_str();
        // Spec first: a crash after it leaves a record whose spec reconcile
        // rewrites, and the kubelet's retry finishes the job.
        self.remove_spec(record)?;
        // Sharing next: the last claim stops the MPS daemon and resets the
        // GPU; a step that fails leaves the GPU degraded, not the claim,
        // since a retry could not redo it.
        self.sharing_down(record);
        // MIG hardware last: a slice in use (the container has not stopped
        // yet) fails here, the record stays, and the retry finishes.
        self.release_hardware(record)?;
        self.env.store.remove(uid)?;
        lock(&self.table).remove(uid);
        if record
            .devices
            .iter()
            .any(|d| d.restore_mig_mode || d.mig.as_ref().is_some_and(|m| m.created))
        {
            self.refresh_offer();
        }
        tracing::info!(claim_uid = %uid, "claim unprepared");
        Ok(Unprepared::Removed)
    }
}
