//! The undo stack of a prepare: each step that changed something pushes
//! what undoes it, and a failure unwinds the stack in reverse, so every
//! effect is undone before the `preparing` record goes ("records before
//! effects") and the table reservation goes last.
//!
//! A kind's reservation is undone by `Unreserve` until its apply succeeds
//! ([`Undo::applied`]); from then on by `Release`, pushed on top, so it is
//! undone before the record is removed. The GPU locks are a step too: they
//! are released after every effect on the GPUs is undone, and before the
//! table reservation. Pure bookkeeping: what each step does is the caller's
//! (`prepare`).

use super::access::Access;
use super::keyed::KeyGuard;
#[cfg(test)]
use crate::state::AccessKind;

/// One thing to undo.
#[derive(Debug)]
pub(super) enum Step<'a> {
    /// The claim's devices reserved in the table.
    Table,
    /// The locks of the claim's shared GPUs.
    GpuLocks(Vec<KeyGuard<'a>>),
    /// A kind's reservation (its apply has not run).
    Unreserve(&'a dyn Access),
    /// The `preparing` record written.
    Record,
    /// A kind's applied steps (and its reservation).
    Release(&'a dyn Access),
    /// The CDI spec written.
    Spec,
}

/// The steps taken so far, undone in reverse by [`Undo::unwind`].
#[derive(Debug, Default)]
pub(super) struct Undo<'a> {
    steps: Vec<Step<'a>>,
}

impl<'a> Undo<'a> {
    /// Remembers a step taken.
    pub(super) fn push(&mut self, step: Step<'a>) {
        self.steps.push(step);
    }

    /// `kind` applied: its reservation is now undone by releasing it, after
    /// every step taken since.
    pub(super) fn applied(&mut self, kind: &'a dyn Access) {
        let this = kind.kind();
        self.steps
            .retain(|step| !matches!(step, Step::Unreserve(k) if k.kind() == this));
        self.steps.push(Step::Release(kind));
    }

    /// Undoes every step, the last taken first.
    pub(super) fn unwind(self, mut undo: impl FnMut(Step<'a>)) {
        for step in self.steps.into_iter().rev() {
            undo(step);
        }
    }

    /// Success: nothing is undone; the GPU locks are released.
    pub(super) fn disarm(self) {}

    /// The kinds of the steps, for tests.
    #[cfg(test)]
    fn kinds(&self) -> Vec<(&'static str, Option<AccessKind>)> {
        self.steps.iter().map(describe).collect()
    }
}

#[cfg(test)]
fn describe(step: &Step<'_>) -> (&'static str, Option<AccessKind>) {
    match step {
        Step::Table => ("table", None),
        Step::GpuLocks(_) => ("gpu locks", None),
        Step::Unreserve(k) => ("unreserve", Some(k.kind())),
        Step::Record => ("record", None),
        Step::Release(k) => ("release", Some(k.kind())),
        Step::Spec => ("spec", None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::access::{Exclusive, Mig, Mps, TimeSlicing};
    use crate::claims::keyed::KeyedLocks;

    fn unwound(undo: Undo<'_>) -> Vec<(&'static str, Option<AccessKind>)> {
        let mut seen = Vec::new();
        undo.unwind(|step| seen.push(describe(&step)));
        seen
    }

    #[test]
    fn a_failed_apply_unwinds_applied_kinds_before_the_record_and_the_rest_after() {
        let (mig, ts, mps) = (Mig::default(), TimeSlicing, Mps);
        let locks = KeyedLocks::default();
        let mut undo = Undo::default();
        undo.push(Step::Table);
        undo.push(Step::GpuLocks(locks.lock_all(&["gpu".to_owned()])));
        undo.push(Step::Unreserve(&mig));
        undo.push(Step::Unreserve(&ts));
        undo.push(Step::Unreserve(&mps));
        undo.push(Step::Record);
        undo.applied(&mig);
        undo.applied(&ts);
        assert_eq!(
            unwound(undo),
            [
                ("release", Some(AccessKind::TimeSlicing)),
                ("release", Some(AccessKind::Mig)),
                ("record", None),
                ("unreserve", Some(AccessKind::Mps)),
                ("gpu locks", None),
                ("table", None),
            ]
        );
        assert!(locks.is_empty(), "unwinding released the GPU locks");
    }

    #[test]
    fn a_failed_record_write_unwinds_the_spec_first() {
        let (exclusive, mps) = (Exclusive, Mps);
        let mut undo = Undo::default();
        undo.push(Step::Table);
        undo.push(Step::Unreserve(&exclusive));
        undo.push(Step::Unreserve(&mps));
        undo.applied(&mps);
        undo.push(Step::Spec);
        assert_eq!(
            undo.kinds(),
            [
                ("table", None),
                ("unreserve", Some(AccessKind::Exclusive)),
                ("release", Some(AccessKind::Mps)),
                ("spec", None),
            ]
        );
        assert_eq!(
            unwound(undo),
            [
                ("spec", None),
                ("release", Some(AccessKind::Mps)),
                ("unreserve", Some(AccessKind::Exclusive)),
                ("table", None),
            ]
        );
    }

    #[test]
    fn a_disarmed_stack_undoes_nothing_and_releases_the_gpu_locks() {
        let locks = KeyedLocks::default();
        let mut undo = Undo::default();
        undo.push(Step::Table);
        undo.push(Step::GpuLocks(
            locks.lock_all(&["a".to_owned(), "b".to_owned()]),
        ));
        undo.push(Step::Record);
        assert_eq!(locks.len(), 2);
        undo.disarm();
        assert!(locks.is_empty());
    }
}
