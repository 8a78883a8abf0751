//! Time-slicing, with the same verbs as MIG and MPS (reserve is
//! [`Engine::reserve_sharing`], which asks the [`crate::timeslice::TimeSlicePolicy`]):
//! apply (compute mode DEFAULT, then `nvidia-smi compute-policy
//! --set-timeslice` for the first claim on the GPU), release (the last
//! claim resets the GPU to Default), and restore at start-up (set again:
//! the policy does not survive a reboot or a driver reload).
//!
//! A GPU that cannot be time-sliced answers NOT_SUPPORTED: a warning shown
//! in status and the sharing view, not a failure.

use super::{TimeSliceOutcome, timeslices};
use crate::claims::Engine;
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::gpu::ComputeMode;
use crate::sharing::TimeSliceInterval;
use crate::state::ClaimRecord;
use crate::timeslice::{Action, SetOutcome};

impl Engine {
    /// Sets the time-slice of every GPU `record` time-slices, where no
    /// earlier claim did. On failure the claim's GPUs are released again.
    pub(in crate::claims) fn apply_timeslices(
        &self,
        record: &ClaimRecord,
    ) -> Result<(), ClaimError> {
        for (gpu, interval) in timeslices(record) {
            if let Err(err) = self.apply_timeslice(&record.uid, &gpu, interval) {
                self.release_timeslices(record);
                return Err(err);
            }
        }
        Ok(())
    }

    fn apply_timeslice(
        &self,
        uid: &str,
        gpu: &str,
        interval: TimeSliceInterval,
    ) -> Result<(), ClaimError> {
        self.ensure_compute_mode(gpu, ComputeMode::Default)?;
        let done = matches!(
            lock(&self.sharing.state).timeslice.get(gpu),
            Some(TimeSliceOutcome::Applied(i) | TimeSliceOutcome::NotSupported { interval: i, .. })
                if *i == interval
        );
        if done {
            return Ok(());
        }
        self.set_timeslice(uid, gpu, interval)
    }

    /// Runs nvidia-smi and records what it did.
    fn set_timeslice(
        &self,
        uid: &str,
        gpu: &str,
        interval: TimeSliceInterval,
    ) -> Result<(), ClaimError> {
        let tools = self.sharing_tools(uid)?;
        let outcome = match tools.timeslice.set_timeslice(gpu, interval)? {
            SetOutcome::Applied => {
                tracing::info!(claim_uid = %uid, gpu, interval = <&str>::from(interval), "time-slice set");
                TimeSliceOutcome::Applied(interval)
            }
            SetOutcome::NotSupported { message } => {
                tracing::warn!(claim_uid = %uid, gpu, interval = <&str>::from(interval), %message, "GPU does not support time-slice settings; the claim shares it at the driver's default");
                TimeSliceOutcome::NotSupported { interval, message }
            }
        };
        lock(&self.sharing.state)
            .timeslice
            .insert(gpu.to_owned(), outcome);
        self.clear_degraded(gpu);
        Ok(())
    }

    /// Takes `record` off its time-sliced GPUs; the last claim on a GPU resets
    /// it to Default. Never fails: a reset that fails leaves the GPU degraded.
    pub(in crate::claims) fn release_timeslices(&self, record: &ClaimRecord) {
        for (gpu, _) in timeslices(record) {
            let (action, last) = {
                let mut state = lock(&self.sharing.state);
                let action = state.policy.leave(&gpu, &record.uid);
                let last = state.policy.claims(&gpu).is_empty();
                if last {
                    state.timeslice.remove(&gpu);
                }
                (action, last)
            };
            if let Action::Set(interval) = action {
                self.reset_timeslice(&record.uid, &gpu, interval);
            }
            if last {
                tracing::info!(gpu, "last time-slicing claim left");
            }
        }
    }

    fn reset_timeslice(&self, uid: &str, gpu: &str, interval: TimeSliceInterval) {
        let reset = self
            .sharing_tools(uid)
            .and_then(|tools| Ok(tools.timeslice.set_timeslice(gpu, interval)?));
        match reset {
            Ok(SetOutcome::Applied | SetOutcome::NotSupported { .. }) => {
                lock(&self.sharing.state).timeslice.remove(gpu);
                self.clear_degraded(gpu);
            }
            Err(err) => self.mark_degraded(
                gpu,
                format!("the time-slice could not be reset to {interval}: {err}"),
            ),
        }
    }

    /// Start-up: sets the time-slice of every GPU `record` time-slices again
    /// (once per GPU), in compute mode DEFAULT. Returns problems.
    pub(in crate::claims) fn restore_timeslices(&self, record: &ClaimRecord) -> Vec<String> {
        timeslices(record)
            .into_iter()
            .filter_map(|(gpu, interval)| {
                self.apply_timeslice(&record.uid, &gpu, interval)
                    .err()
                    .map(|err| {
                        format!(
                            "claim {}: the time-slice {interval} of {gpu} could not be set again: {err}",
                            record.uid
                        )
                    })
            })
            .collect()
    }
}
