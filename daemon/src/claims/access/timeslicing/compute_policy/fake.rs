//! [`FakeNvidiaSmi`]: a [`TimeSliceSetter`] for tests (feature `testkit`).
//! It records each call as the command line nvidia-smi would have been given
//! (`compute-policy -i <uuid> --set-timeslice=<N>`, the lines the stand-in
//! `tests/tools/fake-nvidia-smi` records), answers NOT_SUPPORTED for the GPUs
//! it is told cannot be time-sliced, and fails the calls it is told to fail.
//! It changes nothing anywhere else.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{SetOutcome, TimeSliceError, TimeSliceSetter};
use crate::opaque::TimeSliceInterval;

/// A recording, error-injecting nvidia-smi.
#[derive(Debug, Default)]
pub struct FakeNvidiaSmi {
    calls: Mutex<Vec<String>>,
    unsupported: Mutex<BTreeSet<String>>,
    fail: Mutex<VecDeque<TimeSliceError>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl FakeNvidiaSmi {
    /// Every call so far, as nvidia-smi's arguments, oldest first.
    pub fn calls(&self) -> Vec<String> {
        lock(&self.calls).clone()
    }

    /// From now on GPU `uuid` answers as a GPU without time-slice support.
    pub fn unsupported(&self, uuid: &str) {
        lock(&self.unsupported).insert(uuid.to_owned());
    }

    /// The next call fails with `error` (queued: one error per call).
    pub fn fail_next(&self, error: TimeSliceError) {
        lock(&self.fail).push_back(error);
    }
}

impl TimeSliceSetter for FakeNvidiaSmi {
    fn set_timeslice(
        &self,
        uuid: &str,
        interval: TimeSliceInterval,
    ) -> Result<SetOutcome, TimeSliceError> {
        lock(&self.calls).push(format!(
            "compute-policy -i {uuid} --set-timeslice={}",
            interval.level()
        ));
        if let Some(error) = lock(&self.fail).pop_front() {
            return Err(error);
        }
        if lock(&self.unsupported).contains(uuid) {
            return Ok(SetOutcome::NotSupported {
                message: format!("Failed to set timeslice policy for GPU {uuid}: Not Supported"),
            });
        }
        Ok(SetOutcome::Applied)
    }
}
