//! Time-slicing as a kind of access: reserve (the claim joins the GPU's
//! [`crate::timeslice::TimeSlicePolicy`]: one interval per GPU, never beside
//! MPS), apply (compute mode DEFAULT, then `nvidia-smi compute-policy
//! --set-timeslice` for the first claim on the GPU), release (the last claim
//! resets the GPU to Default), and restore at start-up (set again: the policy
//! does not survive a reboot or a driver reload).
//!
//! A GPU without time-slice settings (nvidia-smi answers "Not Supported")
//! still time-slices at the driver's own interval: a claim asking for
//! `Default` prepares; one asking for another interval is refused, naming
//! the GPU, what it lacks and what to ask instead, and so is every later
//! one on that GPU, before anything is touched (the books keep what
//! nvidia-smi said). A prepared claim whose interval cannot be set again at
//! start-up is reported, not dropped.

use super::shared_gpu::{SharedGpus, TimeSliceOutcome};
use super::{Access, Cx, Restored};
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::features::{Feature, Missing, TimeSliceSettings};
use crate::gpu::ComputeMode;
use crate::inventory::DeviceRef;
use crate::sharing::TimeSliceInterval;
use crate::state::AccessKind;
use crate::state::{ClaimRecord, DeviceSharing};
use crate::timeslice::{Action, SetOutcome};

/// Time-slicing: the [`Access`] of a claim on time-sliced whole GPUs.
#[derive(Debug, Default)]
pub(in crate::claims) struct TimeSlice;

/// The whole GPUs `record` time-slices, with the interval.
pub(in crate::claims) fn timeslices(record: &ClaimRecord) -> Vec<(String, TimeSliceInterval)> {
    record
        .devices
        .iter()
        .filter_map(|d| match (&d.sharing, &d.mig) {
            (Some(DeviceSharing::Timeslicing { interval }), None) => {
                Some((d.uuid.clone(), *interval))
            }
            _ => None,
        })
        .collect()
}

impl Access for TimeSlice {
    fn kind(&self) -> AccessKind {
        AccessKind::TimeSlicing
    }

    fn takes_part(&self, record: &ClaimRecord, _devices: &[DeviceRef<'_>]) -> bool {
        (record.devices.iter())
            .any(|d| matches!(d.sharing, Some(DeviceSharing::Timeslicing { .. })))
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
        self.adopt(cx, record)
    }

    fn unreserve(&self, cx: &Cx<'_>, record: &ClaimRecord) {
        let mut books = lock(&cx.shared.books);
        for (gpu, _) in timeslices(record) {
            books.policy.leave(&gpu, &record.uid);
            books.unpromise(&gpu, &record.uid);
        }
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
            let Some(DeviceSharing::Timeslicing { .. }) = &d.sharing else {
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
                problems.push(roll_back_problem(record, d, &err));
            }
        }
        Ok(problems)
    }

    /// Back into the policy: every time-sliced whole GPU of `record` joined
    /// at its interval, or none (the books stay as they were).
    fn adopt(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
        let joined = {
            let mut books = lock(&cx.shared.books);
            timeslices(record).iter().try_for_each(|(gpu, interval)| {
                books.policy.join(gpu, &record.uid, *interval).map(drop)
            })
        };
        if joined.is_err() {
            self.unreserve(cx, record);
        }
        Ok(joined?)
    }

    /// Sets the time-slice of every GPU `record` time-slices again (once per
    /// GPU), in compute mode DEFAULT. An interval the GPU turns out not to
    /// take leaves the claim prepared at the driver's default and is
    /// reported by its problems and the node's.
    fn restore(&self, cx: &Cx<'_>, record: &mut ClaimRecord) -> Restored {
        let problems = timeslices(record)
            .into_iter()
            .filter_map(|(gpu, interval)| match apply_one(cx, &record.uid, &gpu, interval) {
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
            })
            .collect();
        Restored {
            problems,
            record_changed: false,
        }
    }

    /// Each time-slice of the claim that its GPU does not support.
    fn claim_problems(&self, cx: &Cx<'_>, records: &[ClaimRecord]) -> Vec<Vec<String>> {
        let books = lock(&cx.shared.books);
        let not_applied =
            |(gpu, interval): (String, TimeSliceInterval)| match books.timeslice.get(&gpu) {
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
    fn node_problems(&self, cx: &Cx<'_>) -> Vec<String> {
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
}

/// A sharing device of a prepare cut short that could not be reset.
pub(super) fn roll_back_problem(
    record: &ClaimRecord,
    d: &crate::state::RecordDevice,
    err: &ClaimError,
) -> String {
    format!(
        "claim {}: {} ({}) could not be reset after a prepare cut short: {err}",
        record.uid, d.device, d.uuid
    )
}

fn apply_one(
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
fn lacks_settings(
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

fn reset(cx: &Cx<'_>, uid: &str, gpu: &str, interval: TimeSliceInterval) {
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
