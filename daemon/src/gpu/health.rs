//! Health events at the hardware boundary: what a backend reports when a GPU
//! or one of its MIG instances fails, and the watcher that reports it.
//!
//! A backend hands out one [`HealthWatch`] ([`super::GpuBackend::watch_health`]);
//! its owner calls [`HealthWatch::wait`] in a loop on a blocking thread. The
//! events are facts, not verdicts: which XIDs matter is decided above this
//! boundary (the daemon's `health` module). Events that happened before the watch
//! was made are not reported, as with NVML's event sets.

use std::time::Duration;

use super::GpuError;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HealthEventKind {
    /// A critical XID error with its number (999: NVML's "unknown XID").
    Xid(u64),
    /// An uncorrectable (double-bit) ECC memory error.
    DoubleBitEcc,
    /// A corrected (single-bit) ECC memory error.
    SingleBitEcc,
    /// The GPU fell off the bus or stopped answering (NVML's GPU_IS_LOST).
    GpuLost,
    /// The backend sees the GPU (or instance) working again: a lost GPU
    /// answers again, or (simulator) a recovery was injected.
    Recovered,
}

impl std::fmt::Display for HealthEventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Xid(n) => write!(f, "XID {n}"),
            Self::DoubleBitEcc => f.write_str("double-bit ECC error"),
            Self::SingleBitEcc => f.write_str("single-bit ECC error"),
            Self::GpuLost => f.write_str("GPU lost"),
            Self::Recovered => f.write_str("recovered"),
        }
    }
}

/// One event on one GPU, or on one MIG instance of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthEvent {
    /// NVML index of the (parent) GPU.
    pub gpu_index: u32,
    /// UUID of the (parent) GPU, "GPU-...".
    pub gpu_uuid: String,
    /// The GPU instance the event is confined to, if NVML attributed it to
    /// one (MIG); `None` for the whole GPU.
    pub gpu_instance: Option<u32>,
    /// The compute instance within `gpu_instance`, if attributed.
    pub compute_instance: Option<u32>,
    /// What happened.
    pub kind: HealthEventKind,
    /// Detail from the backend, for logs and operators (may be empty).
    pub message: String,
}

/// A GPU whose events cannot be watched, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmonitored {
    /// NVML index.
    pub gpu_index: u32,
    /// Why (NVML's answer to the registration).
    pub reason: String,
}

/// NVML's instance id for "not attributed to an instance" (0xFFFFFFFF).
pub const NO_INSTANCE: u32 = u32::MAX;

/// An instance id as NVML reports it in an event: [`NO_INSTANCE`] is `None`.
pub fn instance_id(raw: u32) -> Option<u32> {
    (raw != NO_INSTANCE).then_some(raw)
}

/// A registration for health events on every GPU of the backend.
pub trait HealthWatch: std::fmt::Debug {
    /// Blocks until events arrive or `timeout` passes; returns the events
    /// (empty on timeout). An error means the watch itself broke (the caller
    /// may make a new one); a lost GPU is an event, not an error.
    fn wait(&mut self, timeout: Duration) -> Result<Vec<HealthEvent>, GpuError>;
    /// GPUs this watch cannot see events of (registration refused or not
    /// supported); empty when every GPU is watched.
    fn unmonitored(&self) -> Vec<Unmonitored>;
}

#[cfg(test)]
mod tests {
    use super::{HealthEventKind, NO_INSTANCE, instance_id};

    #[test]
    fn unattributed_instances_are_none() {
        assert_eq!(instance_id(NO_INSTANCE), None);
        assert_eq!(instance_id(0), Some(0));
        assert_eq!(instance_id(13), Some(13));
    }

    #[test]
    fn kinds_read_as_an_operator_says_them() {
        assert_eq!(HealthEventKind::Xid(79).to_string(), "XID 79");
        assert_eq!(
            HealthEventKind::DoubleBitEcc.to_string(),
            "double-bit ECC error"
        );
        assert_eq!(HealthEventKind::GpuLost.to_string(), "GPU lost");
    }
}
