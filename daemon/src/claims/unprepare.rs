//! Unprepare: undo a prepare (spec, then each kind of access in reverse
//! order: MPS, time-slicing, MIG hardware, then the record: an MPS daemon on
//! a MIG slice quits before the slice goes); a claim the daemon does not know
//! is a success.

use super::access::Change;
use super::error::ClaimError;
use super::request::validate_uid;
use super::{Engine, Unprepared, lock, spec};
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
            let _gpus = self.kinds.shared.lock_gpus(&record);
            self.take_down(&record)
        };
        // Even a take-down cut short may have released sharing (memory
        // left) before it stopped: readers look again either way.
        self.env.bump();
        done
    }

    fn take_down(&self, record: &ClaimRecord) -> Result<Unprepared, ClaimError> {
        let uid = record.uid.as_str();
        let cx = self.cx();
        // Spec first: a crash after it leaves a record whose spec reconcile
        // rewrites, and the kubelet's retry finishes the job.
        spec::remove(&self.env, record)?;
        // Then each kind, the last applied first: MPS and time-slicing (the
        // last claim stops the MPS daemon and resets the GPU; a step that
        // fails leaves the GPU degraded, not the claim, since a retry could
        // not redo it), then MIG hardware (a slice in use, the container not
        // yet stopped, fails here, the record stays, and the retry
        // finishes).
        for kind in self.kinds.in_order().into_iter().rev() {
            kind.release(&cx, record)?;
        }
        self.env.store.remove(uid)?;
        lock(&self.table).remove(uid);
        for kind in self.kinds.in_order() {
            kind.after_change(&cx, record, Change::Unprepared);
        }
        tracing::info!(claim_uid = %uid, "claim unprepared");
        Ok(Unprepared::Removed)
    }
}
