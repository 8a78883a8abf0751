//! A time-slicing claim at start-up: back into the policy ([`adopt`]), its
//! intervals set again ([`restore`]: the policy does not survive a reboot or
//! a driver reload). An interval the GPU turns out not to take leaves the
//! claim prepared at the driver's default, reported by [`super::view`].

use super::settings::{apply_one, timeslices};
use crate::claims::access::shared_gpu::TimeSliceOutcome;
use crate::claims::access::{Cx, Restored};
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::state::ClaimRecord;

/// Back into the policy: every time-sliced whole GPU of `record` joined
/// at its interval, or none (the books stay as they were).
pub(super) fn adopt(cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
    let joined = {
        let mut books = lock(&cx.shared.books);
        timeslices(record).iter().try_for_each(|(gpu, interval)| {
            books.policy.join(gpu, &record.uid, *interval).map(drop)
        })
    };
    if joined.is_err() {
        super::verbs::unreserve(cx, record);
    }
    Ok(joined?)
}

/// Sets the time-slice of every GPU `record` time-slices again (once per
/// GPU), in compute mode DEFAULT. An interval the GPU turns out not to
/// take leaves the claim prepared at the driver's default and is
/// reported by its problems and the node's.
pub(super) fn restore(cx: &Cx<'_>, record: &mut ClaimRecord) -> Restored {
    let problems = timeslices(record)
        .into_iter()
        .filter_map(
            |(gpu, interval)| match apply_one(cx, &record.uid, &gpu, interval) {
                Ok(()) => None,
                Err(ClaimError::FeatureMissing(missing)) => {
                    let message = missing.evidence.unwrap_or_default();
                    let outcome = TimeSliceOutcome::NotSupported { interval, message };
                    lock(&cx.shared.books).timeslice.insert(gpu, outcome);
                    None
                }
                Err(err) => Some(format!(
                    "claim {}: the time-slice {interval} of {gpu} could not be set again: {err}",
                    record.uid
                )),
            },
        )
        .collect();
    Restored {
        problems,
        record_changed: false,
    }
}
