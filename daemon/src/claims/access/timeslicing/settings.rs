//! The interval of a time-sliced GPU, set through nvidia-smi in compute mode
//! DEFAULT once per GPU ([`apply_one`]), reset when the last claim leaves
//! ([`reset`]), and what nvidia-smi showed of the GPU: whether it takes an
//! interval at all, kept in the books, and the refusal of one it does not
//! ([`lacks_settings`]).

use crate::claims::access::Cx;
use crate::claims::access::shared_gpu::{SharedGpus, TimeSliceOutcome};
use crate::claims::compute_policy::SetOutcome;
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::features::{Feature, Missing, TimeSliceSettings};
use crate::gpu::ComputeMode;
use crate::opaque::TimeSliceInterval;
use crate::state::{ClaimRecord, DeviceSharing};

/// The whole GPUs `record` time-slices, with the interval.
pub(in crate::claims) fn timeslices(record: &ClaimRecord) -> Vec<(String, TimeSliceInterval)> {
    record
        .devices
        .iter()
        .filter_map(|d| match (&d.sharing, &d.mig) {
            (Some(DeviceSharing::TimeSlicing { interval }), None) => {
                Some((d.uuid.clone(), *interval))
            }
            _ => None,
        })
        .collect()
}

pub(super) fn apply_one(
    cx: &Cx<'_>,
    uid: &str,
    gpu: &str,
    interval: TimeSliceInterval,
) -> Result<(), ClaimError> {
    SharedGpus::ensure_compute_mode(cx, gpu, ComputeMode::Default)?;
    let done = matches!(
        lock(&cx.shared.books).timeslice.get(gpu),
        Some(TimeSliceOutcome::Applied(i) | TimeSliceOutcome::NotSupported { interval: i, .. })
            if *i == interval
    );
    if done {
        return Ok(());
    }
    set(cx, uid, gpu, interval)
}

/// Runs nvidia-smi and records what it did, and what it showed of the GPU.
/// A GPU without time-slice settings runs at its own interval, which is
/// what `Default` asks for; any other interval is refused.
fn set(cx: &Cx<'_>, uid: &str, gpu: &str, interval: TimeSliceInterval) -> Result<(), ClaimError> {
    let tools = cx.shared.tools(uid)?;
    let (settings, outcome) = match tools.timeslice.set_timeslice(gpu, interval)? {
        SetOutcome::Applied => {
            tracing::info!(claim_uid = %uid, gpu, interval = <&str>::from(interval), "time-slice set");
            (
                TimeSliceSettings::Supported,
                Ok(TimeSliceOutcome::Applied(interval)),
            )
        }
        SetOutcome::NotSupported { message } if interval == TimeSliceInterval::Default => {
            tracing::info!(claim_uid = %uid, gpu, %message, "GPU has no time-slice settings; it time-slices at the driver's default, as the claim asks");
            let settings = TimeSliceSettings::NotSupported { message };
            (settings, Ok(TimeSliceOutcome::Applied(interval)))
        }
        SetOutcome::NotSupported { message } => {
            tracing::warn!(claim_uid = %uid, gpu, interval = <&str>::from(interval), %message, "GPU has no time-slice settings; the interval cannot be set");
            let refused = lacks_settings(cx, gpu, interval, &message);
            (TimeSliceSettings::NotSupported { message }, Err(refused))
        }
    };
    let mut books = lock(&cx.shared.books);
    books.timeslice_settings.insert(gpu.to_owned(), settings);
    let outcome = outcome?;
    books.timeslice.insert(gpu.to_owned(), outcome);
    drop(books);
    cx.shared.clear_degraded(gpu);
    Ok(())
}

/// The refusal of `interval` on `gpu` (a UUID), which has no time-slice
/// settings: it names the GPU, what it lacks and what to ask instead.
pub(super) fn lacks_settings(
    cx: &Cx<'_>,
    gpu: &str,
    interval: TimeSliceInterval,
    message: &str,
) -> ClaimError {
    let inventory = cx.env.inventory();
    let found = inventory.gpu_by_uuid(gpu);
    ClaimError::FeatureMissing(Missing {
        feature: Feature::TimeSliceSettings,
        gpu: found.map_or_else(|| gpu.to_owned(), |g| format!("{} ({gpu})", g.name)),
        product: found.map_or_else(|| "GPU".to_owned(), |g| g.info.product_name.clone()),
        asked: format!("interval {interval}"),
        evidence: Some(format!("nvidia-smi: {message}")),
    })
}

pub(super) fn reset(cx: &Cx<'_>, uid: &str, gpu: &str, interval: TimeSliceInterval) {
    let reset = (cx.shared.tools(uid))
        .and_then(|tools| Ok(tools.timeslice.set_timeslice(gpu, interval)?));
    match reset {
        Ok(SetOutcome::Applied | SetOutcome::NotSupported { .. }) => {
            lock(&cx.shared.books).timeslice.remove(gpu);
            cx.shared.clear_degraded(gpu);
        }
        Err(err) => cx.shared.mark_degraded(
            gpu,
            format!("the time-slice could not be reset to {interval}: {err}"),
        ),
    }
}
