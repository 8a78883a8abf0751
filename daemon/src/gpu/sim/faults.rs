//! Fault injection for the simulator: make the Nth call of a named operation fail.
//!
//! Owns one call counter per operation name and the failures armed against
//! them. Every simulated hardware call asks [`Faults::check`] first; a test
//! arms a failure with [`Faults::fail_nth`]. An armed failure fires once.
//! Thread-safe: one `Mutex` guards the whole registry, held only to count.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::gpu::GpuError;

/// Operation names the simulator checks, one per backend verb.
pub mod op {
    /// `GpuBackend::driver_info`.
    pub const DRIVER_INFO: &str = "driver_info";
    /// `GpuBackend::device_count`.
    pub const DEVICE_COUNT: &str = "device_count";
    /// `GpuBackend::device_info`.
    pub const DEVICE_INFO: &str = "device_info";
}

#[derive(Debug, Default)]
struct Counter {
    /// Calls made so far.
    calls: u64,
    /// Armed failures, keyed by the 1-based call number they fire on.
    armed: BTreeMap<u64, GpuError>,
}

/// The registry of injected faults of one simulated node.
#[derive(Debug, Default)]
pub struct Faults {
    ops: Mutex<HashMap<&'static str, Counter>>,
}

impl Faults {
    /// An empty registry: every call succeeds.
    pub fn new() -> Self {
        Self::default()
    }

    /// Make the `nth` call of `op` from now fail with `error` (1 = the next call).
    /// `nth = 0` is treated as 1.
    pub fn fail_nth(&self, op: &'static str, nth: u64, error: GpuError) {
        let mut ops = self.lock();
        let counter = ops.entry(op).or_default();
        let at = counter.calls.saturating_add(nth.max(1));
        counter.armed.insert(at, error);
    }

    /// Make the next call of `op` fail with `error`.
    pub fn fail_next(&self, op: &'static str, error: GpuError) {
        self.fail_nth(op, 1, error);
    }

    /// Drop every armed failure (counters keep counting).
    pub fn clear(&self) {
        for counter in self.lock().values_mut() {
            counter.armed.clear();
        }
    }

    /// How many times `op` has been called.
    pub fn calls(&self, op: &'static str) -> u64 {
        self.lock().get(op).map_or(0, |c| c.calls)
    }

    /// Count one call of `op`; the armed error if this call is meant to fail.
    pub fn check(&self, op: &'static str) -> Result<(), GpuError> {
        let mut ops = self.lock();
        let counter = ops.entry(op).or_default();
        counter.calls = counter.calls.saturating_add(1);
        match counter.armed.remove(&counter.calls) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// The registry holds only counters, so a panic elsewhere cannot leave it
    /// half-updated in a way that matters: a poisoned lock is taken as is.
    fn lock(&self) -> MutexGuard<'_, HashMap<&'static str, Counter>> {
        self.ops.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::{Faults, op};
    use crate::gpu::GpuError;

    fn lost() -> GpuError {
        GpuError::GpuLost {
            what: "GPU 0".into(),
        }
    }

    #[test]
    fn fires_on_the_nth_call_only() {
        let faults = Faults::new();
        faults.fail_nth(op::DEVICE_INFO, 3, lost());
        assert_eq!(faults.check(op::DEVICE_INFO), Ok(()));
        assert_eq!(faults.check(op::DEVICE_INFO), Ok(()));
        assert_eq!(faults.check(op::DEVICE_INFO), Err(lost()));
        assert_eq!(faults.check(op::DEVICE_INFO), Ok(()));
        assert_eq!(faults.calls(op::DEVICE_INFO), 4);
    }

    #[test]
    fn counts_from_when_armed_and_per_op() {
        let faults = Faults::new();
        assert_eq!(faults.check(op::DEVICE_COUNT), Ok(()));
        faults.fail_next(op::DEVICE_COUNT, lost());
        assert_eq!(faults.check(op::DEVICE_INFO), Ok(()));
        assert_eq!(faults.check(op::DEVICE_COUNT), Err(lost()));
    }

    #[test]
    fn clear_disarms() {
        let faults = Faults::new();
        faults.fail_next(op::DRIVER_INFO, lost());
        faults.clear();
        assert_eq!(faults.check(op::DRIVER_INFO), Ok(()));
    }

    #[test]
    fn shared_across_threads() {
        let faults = std::sync::Arc::new(Faults::new());
        faults.fail_nth(op::DEVICE_INFO, 8, lost());
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let f = std::sync::Arc::clone(&faults);
                std::thread::spawn(move || f.check(op::DEVICE_INFO).is_err())
            })
            .collect();
        let failed = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .filter(|failed| *failed)
            .count();
        assert_eq!(failed, 1);
        assert_eq!(faults.calls(op::DEVICE_INFO), 8);
    }
}
