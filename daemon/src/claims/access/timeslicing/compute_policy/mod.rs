//! Compute time-slicing: [`TimeSlicePolicy`] (pure) decides, per physical
//! GPU, what the claims on it need and refuses what cannot be; a
//! [`TimeSliceSetter`] applies a level: [`NvidiaSmi`] with `nvidia-smi
//! compute-policy` (NVML has no public call for it), and, for tests only
//! (feature `testkit`), `FakeNvidiaSmi`, which records the same command
//! lines and can be told to fail.
//!
//! Rules: the time-slice is a property of the whole GPU, so claims that share
//! a GPU must ask for the same interval; the first claim sets it, the last one
//! to leave resets it to Default; a GPU is never under MPS and time-slicing at
//! once (MPS needs EXCLUSIVE_PROCESS, time-slicing DEFAULT). The engine sets
//! compute mode DEFAULT itself before applying a time-slice.

#[cfg(any(test, feature = "testkit"))]
mod fake;
mod nvidia_smi;
mod policy;

#[cfg(any(test, feature = "testkit"))]
pub use fake::FakeNvidiaSmi;
pub use nvidia_smi::{NvidiaSmi, SetOutcome};
pub use policy::{Action, TimeSlicePolicy};

/// Sets a GPU's time-slice: the one verb the engine needs of nvidia-smi.
pub trait TimeSliceSetter: Send + Sync + std::fmt::Debug {
    /// Sets the time-slice of GPU `uuid` to `interval`.
    fn set_timeslice(
        &self,
        uuid: &str,
        interval: TimeSliceInterval,
    ) -> Result<SetOutcome, TimeSliceError>;
}

use crate::opaque::TimeSliceInterval;

/// A time-slice request that cannot be met, or a command that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeSliceError {
    /// Another claim holds the GPU at another interval (FAILED_PRECONDITION).
    #[error(
        "GPU {gpu} is time-sliced at {held} for claim {holder}; this claim asks for {asked}: \
         ask for {held}, or for another GPU"
    )]
    IntervalConflict {
        /// The GPU UUID.
        gpu: String,
        /// A claim holding it.
        holder: String,
        /// Its interval.
        held: TimeSliceInterval,
        /// The interval asked.
        asked: TimeSliceInterval,
    },
    /// The GPU runs MPS for other claims (FAILED_PRECONDITION).
    #[error(
        "GPU {gpu} is shared under MPS by claim {holder}; MPS and time-slicing cannot run on \
         one GPU at once: use strategy MPS, or another GPU"
    )]
    MpsInUse {
        /// The GPU UUID.
        gpu: String,
        /// A claim using MPS on it.
        holder: String,
    },
    /// The GPU is time-sliced for other claims (FAILED_PRECONDITION).
    #[error(
        "GPU {gpu} is time-sliced for claim {holder}; MPS and time-slicing cannot run on one \
         GPU at once: use strategy TimeSlicing, or another GPU"
    )]
    TimeSliceInUse {
        /// The GPU UUID.
        gpu: String,
        /// A claim time-slicing it.
        holder: String,
    },
    /// nvidia-smi could not be run or failed (UNAVAILABLE).
    #[error("{command} failed: {problem}")]
    Command {
        /// The command line.
        command: String,
        /// What happened.
        problem: String,
    },
}

#[cfg(test)]
mod tests;
