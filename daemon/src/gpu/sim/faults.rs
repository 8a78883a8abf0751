//! Fault injection for the simulator: make the Nth call of a named operation
//! fail, make every call of it on one GPU fail, or make every call of it slow.
//!
//! Owns one call counter per operation name, the failures armed against them,
//! the GPUs on which the operation keeps failing, and an optional latency per
//! operation. Every simulated hardware call asks [`Faults::check`] (node-wide
//! verbs) or [`Faults::check_gpu`] (verbs on one GPU) first; a test arms a
//! failure with [`Faults::fail_nth`] or [`Faults::fail_gpu`] or a latency
//! with [`Faults::set_latency`], or a running daemon reads them from
//! `GPUSLICE_SIM_FAULTS` (syntax in `fault_spec`). An armed failure fires
//! once; a failing GPU fails every call until [`Faults::heal_gpu`]; neither
//! touches the hardware. Thread-safe: one `Mutex` guards the
//! whole registry, held only to count, never while a latency is waited out.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::gpu::GpuError;

/// Operation names the simulator checks, one per backend verb.
pub mod op {
    /// `GpuBackend::driver_info`.
    pub const DRIVER_INFO: &str = "driver_info";
    /// `GpuBackend::device_count`.
    pub const DEVICE_COUNT: &str = "device_count";
    /// `GpuBackend::device_info`.
    pub const DEVICE_INFO: &str = "device_info";
    /// `GpuBackend::mig_profiles`.
    pub const MIG_PROFILES: &str = "mig_profiles";
    /// `GpuBackend::set_mig_mode`.
    pub const SET_MIG_MODE: &str = "set_mig_mode";
    /// `GpuBackend::gpu_instances`.
    pub const GPU_INSTANCES: &str = "gpu_instances";
    /// `GpuBackend::create_gpu_instance`.
    pub const CREATE_GPU_INSTANCE: &str = "create_gpu_instance";
    /// `GpuBackend::create_compute_instance`.
    pub const CREATE_COMPUTE_INSTANCE: &str = "create_compute_instance";
    /// `GpuBackend::destroy_compute_instance`.
    pub const DESTROY_COMPUTE_INSTANCE: &str = "destroy_compute_instance";
    /// `GpuBackend::destroy_gpu_instance`.
    pub const DESTROY_GPU_INSTANCE: &str = "destroy_gpu_instance";
    /// `GpuBackend::compute_mode`.
    pub const COMPUTE_MODE: &str = "compute_mode";
    /// `GpuBackend::set_compute_mode`.
    pub const SET_COMPUTE_MODE: &str = "set_compute_mode";
    /// `GpuBackend::processes`.
    pub const PROCESSES: &str = "processes";
    /// `GpuBackend::process_utilization`.
    pub const PROCESS_UTILIZATION: &str = "process_utilization";
    /// `GpuBackend::memory_use`.
    pub const MEMORY_USE: &str = "memory_use";
    /// `GpuBackend::watch_health`.
    pub const WATCH_HEALTH: &str = "watch_health";

    /// Every operation name, for parsing `GPUSLICE_SIM_FAULTS`.
    pub const ALL: [&str; 16] = [
        DRIVER_INFO,
        DEVICE_COUNT,
        DEVICE_INFO,
        MIG_PROFILES,
        SET_MIG_MODE,
        GPU_INSTANCES,
        CREATE_GPU_INSTANCE,
        CREATE_COMPUTE_INSTANCE,
        DESTROY_COMPUTE_INSTANCE,
        DESTROY_GPU_INSTANCE,
        COMPUTE_MODE,
        SET_COMPUTE_MODE,
        PROCESSES,
        PROCESS_UTILIZATION,
        MEMORY_USE,
        WATCH_HEALTH,
    ];
}

#[derive(Debug, Default)]
struct Counter {
    /// Calls made so far.
    calls: u64,
    /// Armed failures, keyed by the 1-based call number they fire on.
    armed: BTreeMap<u64, GpuError>,
    /// GPUs (by index) on which every call fails, with what it answers.
    failing_gpus: BTreeMap<u32, GpuError>,
    /// How long every call of the operation takes.
    latency: Option<Duration>,
}

/// The latency a call must take, returned by [`Faults::check`]; the backend
/// waits it out with [`Latency::wait`] at the point the real call would block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Latency(Option<Duration>);

impl Latency {
    /// No latency.
    pub const NONE: Latency = Latency(None);

    /// Blocks the calling thread for the latency, if any. Parks rather than
    /// sleeps, looping because a park may end early.
    pub fn wait(self) {
        let Some(duration) = self.0 else { return };
        let deadline = Instant::now() + duration;
        loop {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            std::thread::park_timeout(deadline - now);
        }
    }
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

    /// Make every call of `op` on GPU `index` fail with `error`, until
    /// [`Faults::heal_gpu`] (a GPU that stopped answering).
    pub fn fail_gpu(&self, op: &'static str, index: u32, error: GpuError) {
        self.lock()
            .entry(op)
            .or_default()
            .failing_gpus
            .insert(index, error);
    }

    /// Calls of `op` on GPU `index` succeed again.
    pub fn heal_gpu(&self, op: &'static str, index: u32) {
        if let Some(counter) = self.lock().get_mut(op) {
            counter.failing_gpus.remove(&index);
        }
    }

    /// Make every call of `op` take `latency` (`None` or zero: no latency).
    pub fn set_latency(&self, op: &'static str, latency: Option<Duration>) {
        let latency = latency.filter(|d| !d.is_zero());
        self.lock().entry(op).or_default().latency = latency;
    }

    /// Drop every armed failure and latency (counters keep counting).
    pub fn clear(&self) {
        for counter in self.lock().values_mut() {
            counter.armed.clear();
            counter.failing_gpus.clear();
            counter.latency = None;
        }
    }

    /// How many times `op` has been called.
    pub fn calls(&self, op: &'static str) -> u64 {
        self.lock().get(op).map_or(0, |c| c.calls)
    }

    /// Count one call of `op`: the armed error if this call is meant to fail,
    /// otherwise the latency the call must take.
    pub fn check(&self, op: &'static str) -> Result<Latency, GpuError> {
        let mut ops = self.lock();
        let counter = ops.entry(op).or_default();
        counter.calls = counter.calls.saturating_add(1);
        match counter.armed.remove(&counter.calls) {
            Some(error) => Err(error),
            None => Ok(Latency(counter.latency)),
        }
    }

    /// [`Faults::check`] for a call of `op` on GPU `index`: it also fails
    /// while that GPU is set failing for `op`.
    pub fn check_gpu(&self, op: &'static str, index: u32) -> Result<Latency, GpuError> {
        let latency = self.check(op)?;
        match self.lock().get(op).and_then(|c| c.failing_gpus.get(&index)) {
            Some(error) => Err(error.clone()),
            None => Ok(latency),
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
    use std::time::{Duration, Instant};

    use super::{Faults, Latency, op};
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
        assert_eq!(faults.check(op::DEVICE_INFO), Ok(Latency::NONE));
        assert_eq!(faults.check(op::DEVICE_INFO), Ok(Latency::NONE));
        assert_eq!(faults.check(op::DEVICE_INFO), Err(lost()));
        assert_eq!(faults.check(op::DEVICE_INFO), Ok(Latency::NONE));
        assert_eq!(faults.calls(op::DEVICE_INFO), 4);
    }

    #[test]
    fn counts_from_when_armed_and_per_op() {
        let faults = Faults::new();
        assert_eq!(faults.check(op::DEVICE_COUNT), Ok(Latency::NONE));
        faults.fail_next(op::DEVICE_COUNT, lost());
        assert_eq!(faults.check(op::DEVICE_INFO), Ok(Latency::NONE));
        assert_eq!(faults.check(op::DEVICE_COUNT), Err(lost()));
    }

    #[test]
    fn clear_disarms() {
        let faults = Faults::new();
        faults.fail_next(op::DRIVER_INFO, lost());
        faults.clear();
        assert_eq!(faults.check(op::DRIVER_INFO), Ok(Latency::NONE));
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

    #[test]
    fn latency_is_returned_and_waited_out() {
        let faults = Faults::new();
        let latency = Duration::from_millis(30);
        faults.set_latency(op::CREATE_GPU_INSTANCE, Some(latency));
        let got = faults.check(op::CREATE_GPU_INSTANCE).unwrap();
        assert_eq!(got, Latency(Some(latency)));
        let started = Instant::now();
        got.wait();
        assert!(started.elapsed() >= latency);
        assert_eq!(faults.check(op::DESTROY_GPU_INSTANCE), Ok(Latency::NONE));
        faults.set_latency(op::CREATE_GPU_INSTANCE, Some(Duration::ZERO));
        assert_eq!(faults.check(op::CREATE_GPU_INSTANCE), Ok(Latency::NONE));
    }

    #[test]
    fn a_failing_gpu_fails_every_call_on_it_until_healed() {
        let faults = Faults::new();
        faults.fail_gpu(op::DEVICE_INFO, 1, lost());
        for _ in 0..3 {
            assert_eq!(faults.check_gpu(op::DEVICE_INFO, 0), Ok(Latency::NONE));
            assert_eq!(faults.check_gpu(op::DEVICE_INFO, 1), Err(lost()));
        }
        assert_eq!(faults.check_gpu(op::MIG_PROFILES, 1), Ok(Latency::NONE));
        assert_eq!(faults.calls(op::DEVICE_INFO), 6);
        faults.heal_gpu(op::DEVICE_INFO, 1);
        assert_eq!(faults.check_gpu(op::DEVICE_INFO, 1), Ok(Latency::NONE));
        faults.fail_gpu(op::DEVICE_INFO, 2, lost());
        faults.clear();
        assert_eq!(faults.check_gpu(op::DEVICE_INFO, 2), Ok(Latency::NONE));
    }

    #[test]
    fn op_names_are_unique() {
        let names: std::collections::HashSet<_> = op::ALL.iter().collect();
        assert_eq!(names.len(), op::ALL.len());
    }
}
