//! What is reported of time-slicing: each claim's intervals its GPU did not
//! take, the node's GPUs without time-slice settings, and a device
//! time-sliced in words.

use super::settings::timeslices;
use crate::claims::access::Cx;
use crate::claims::access::shared_gpu::TimeSliceOutcome;
use crate::claims::lock;
use crate::opaque::TimeSliceInterval;
use crate::state::ClaimRecord;

/// `device` time-sliced at `interval`, in the words a refusal uses:
/// "gpu-3 time-sliced (interval Long)".
pub(in crate::claims) fn words(device: &str, interval: TimeSliceInterval) -> String {
    format!("{device} time-sliced (interval {interval})")
}

/// Each time-slice of the claim that its GPU does not support.
pub(super) fn claim_problems(cx: &Cx<'_>, records: &[ClaimRecord]) -> Vec<Vec<String>> {
    let books = lock(&cx.shared.books);
    let not_applied = |(gpu, interval): (String, TimeSliceInterval)| match books.timeslice.get(&gpu)
    {
        Some(TimeSliceOutcome::NotSupported { message, .. }) => Some(format!(
            "time-slice {interval} not applied on {gpu}: the GPU does not support it \
             ({message})"
        )),
        _ => None,
    };
    (records.iter())
        .map(|record| {
            timeslices(record)
                .into_iter()
                .filter_map(not_applied)
                .collect()
        })
        .collect()
}

/// Each GPU that does not support the time-slice asked for.
pub(super) fn node_problems(cx: &Cx<'_>) -> Vec<String> {
    let books = lock(&cx.shared.books);
    (books.timeslice.iter())
        .filter_map(|(gpu, outcome)| match outcome {
            TimeSliceOutcome::NotSupported { interval, message } => Some(format!(
                "GPU {gpu} does not support time-slice settings; {interval} was not applied \
                 ({message}); its claims share it at the driver's default"
            )),
            TimeSliceOutcome::Applied(_) => None,
        })
        .collect()
}
