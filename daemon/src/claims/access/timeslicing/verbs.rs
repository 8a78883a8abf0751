//! Time-slicing's verbs: prepare's reserve (the claim joins the GPU's
//! policy: one interval per GPU, never beside MPS) and apply (the interval
//! set for the first claim on the GPU), their undo, unprepare's release (the
//! last claim resets the GPU to Default) and the start-up roll back of a
//! prepare cut short.

use super::settings::{apply_one, lacks_settings, reset, timeslices};
use super::{TimeSlicing, restore, view};
use crate::claims::access::{Access, Cx, Restored};
use crate::claims::compute_policy::Action;
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::features::TimeSliceSettings;
use crate::inventory::DeviceRef;
use crate::opaque::TimeSliceInterval;
use crate::state::{AccessKind, ClaimRecord, DeviceSharing};

impl Access for TimeSlicing {
    fn kind(&self) -> AccessKind {
        AccessKind::TimeSlicing
    }

    fn takes_part(&self, record: &ClaimRecord, _devices: &[DeviceRef<'_>]) -> bool {
        (record.devices.iter())
            .any(|d| matches!(d.sharing, Some(DeviceSharing::TimeSlicing { .. })))
    }

    /// Checks the claim's intervals against the other claims on its GPUs
    /// (the same interval, no MPS) and books it. Nothing touches the
    /// hardware. Call with the record's GPU locks held.
    fn reserve(
        &self,
        cx: &Cx<'_>,
        record: &mut ClaimRecord,
        _devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        cx.shared.tools(&record.uid)?;
        for (gpu, interval) in timeslices(record) {
            let learned = lock(&cx.shared.books).timeslice_settings.get(&gpu).cloned();
            if let Some(TimeSliceSettings::NotSupported { message }) = learned
                && interval != TimeSliceInterval::Default
            {
                return Err(lacks_settings(cx, &gpu, interval, &message));
            }
        }
        restore::adopt(cx, record)
    }

    fn unreserve(&self, cx: &Cx<'_>, record: &ClaimRecord) {
        unreserve(cx, record);
    }

    /// Sets the time-slice of every GPU `record` time-slices, where no
    /// earlier claim did. On failure the claim's GPUs are released again.
    fn apply(
        &self,
        cx: &Cx<'_>,
        record: &mut ClaimRecord,
        _devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        for (gpu, interval) in timeslices(record) {
            if let Err(err) = apply_one(cx, &record.uid, &gpu, interval) {
                self.release(cx, record)?;
                return Err(err);
            }
        }
        Ok(())
    }

    /// Takes `record` off its time-sliced GPUs; the last claim on a GPU
    /// resets it to Default. Never fails: a reset that fails leaves the GPU
    /// degraded.
    fn release(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
        for (gpu, _) in timeslices(record) {
            let (action, last) = {
                let mut books = lock(&cx.shared.books);
                let action = books.policy.leave(&gpu, &record.uid);
                let last = books.policy.claims(&gpu).is_empty();
                if last {
                    books.timeslice.remove(&gpu);
                }
                (action, last)
            };
            if let Action::Set(interval) = action {
                reset(cx, &record.uid, &gpu, interval);
            }
            if last {
                tracing::info!(gpu, "last time-slicing claim left");
            }
        }
        Ok(())
    }

    /// Resets the time-slice a prepare cut short may have set, on GPUs no
    /// live claim shares.
    fn roll_back(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<Vec<String>, ClaimError> {
        let mut problems = Vec::new();
        for d in record.devices.iter().filter(|d| d.mig.is_none()) {
            let Some(DeviceSharing::TimeSlicing { .. }) = &d.sharing else {
                continue;
            };
            if !cx.shared.unused(&d.uuid) {
                continue;
            }
            let reset = (cx.shared.tools(&record.uid))
                .and_then(|tools| {
                    Ok(tools
                        .timeslice
                        .set_timeslice(&d.uuid, TimeSliceInterval::Default)?)
                })
                .map(drop);
            if let Err(err) = reset {
                problems.push(crate::claims::access::shared_gpu::roll_back_problem(
                    record, d, &err,
                ));
            }
        }
        Ok(problems)
    }

    fn adopt(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
        restore::adopt(cx, record)
    }

    fn restore(&self, cx: &Cx<'_>, record: &mut ClaimRecord) -> Restored {
        restore::restore(cx, record)
    }

    fn claim_problems(&self, cx: &Cx<'_>, records: &[ClaimRecord]) -> Vec<Vec<String>> {
        view::claim_problems(cx, records)
    }

    fn node_problems(&self, cx: &Cx<'_>) -> Vec<String> {
        view::node_problems(cx)
    }
}

pub(super) fn unreserve(cx: &Cx<'_>, record: &ClaimRecord) {
    let mut books = lock(&cx.shared.books);
    for (gpu, _) in timeslices(record) {
        books.policy.leave(&gpu, &record.uid);
        books.unpromise(&gpu, &record.uid);
    }
}
