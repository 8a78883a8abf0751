//! The health watcher: registers for the backend's health events, then waits
//! on them in a loop on a blocking thread until told to stop, feeding every
//! verdict into [`DeviceHealth`].
//!
//! Owns the translation of an event's scope into a table target: a MIG event
//! names a GPU instance id, which is looked up in the GPU's instances to keep
//! its placement; an instance that is gone (or a GPU that does not answer)
//! makes the whole GPU the target, since the fault can no longer be pinned
//! down. Every change calls `on_change` (the engine bumps its inventory
//! generation, so the DRA plugin republishes). A broken watch is reported
//! as [`Monitor::Failed`] and made again after [`WAIT`]. The loop sees a
//! stop within one [`WAIT`]; gpusliced does not wait for that at shutdown
//! (the watcher has its own thread, which the process's exit ends).

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::classify::{Scope, Verdict};
use super::table::{Fault, Target};
use super::{DeviceHealth, Monitor};
use crate::gpu::{HealthEvent, HealthReads};

/// How long one wait on the backend lasts (also the longest stop takes).
pub const WAIT: Duration = Duration::from_secs(1);

/// A stop signal a blocking loop can wait on.
#[derive(Debug, Default)]
pub struct Stop {
    stopped: Mutex<bool>,
    changed: Condvar,
}

impl Stop {
    /// Asks the loop to stop.
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.changed.notify_all();
    }

    /// Whether stop was asked.
    pub fn is_stopped(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits up to `duration` for a stop; true if stopped.
    fn pause(&self, duration: Duration) -> bool {
        let guard = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, duration, |stopped| !*stopped)
            .unwrap_or_else(PoisonError::into_inner);
        *guard
    }
}

/// What the loop works with.
#[derive(Clone, Copy)]
pub struct Watcher<'a> {
    /// What it may read of the hardware.
    pub backend: HealthReads<'a>,
    /// The rules, and where verdicts go.
    pub health: &'a DeviceHealth,
    /// Called after every change of the faults in force.
    pub on_change: &'a (dyn Fn() + Sync),
}

impl std::fmt::Debug for Watcher<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher")
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

impl Watcher<'_> {
    /// Registers, tells `registered` how that went, then handles events
    /// until `stop`.
    pub fn run(&self, stop: &Stop, registered: impl FnOnce(&Monitor)) {
        let mut registered = Some(registered);
        while !stop.is_stopped() {
            let mut watch = match self.backend.watch_health() {
                Ok(watch) => watch,
                Err(err) => {
                    let monitor = self.failed(err.to_string());
                    if let Some(tell) = registered.take() {
                        tell(&monitor);
                    }
                    if stop.pause(WAIT) {
                        return;
                    }
                    continue;
                }
            };
            let monitor = Monitor::Watching {
                unmonitored: watch.unmonitored(),
            };
            if self.health.monitor() != monitor {
                tracing::info!(?monitor, "watching GPU health events");
            }
            self.health.set_monitor(monitor.clone());
            if let Some(tell) = registered.take() {
                tell(&monitor);
            }
            while !stop.is_stopped() {
                match watch.wait(WAIT) {
                    Ok(events) => {
                        for event in &events {
                            self.handle(event, unix_now());
                        }
                    }
                    Err(err) => {
                        self.failed(format!("the watch broke: {err}"));
                        if stop.pause(WAIT) {
                            return;
                        }
                        break;
                    }
                }
            }
        }
    }

    /// Records (and logs, once per reason) that events are not watched.
    fn failed(&self, reason: String) -> Monitor {
        let monitor = Monitor::Failed { reason };
        if self.health.monitor() != monitor {
            tracing::error!(?monitor, "GPU health events are not watched; retrying");
        }
        self.health.set_monitor(monitor.clone());
        monitor
    }

    /// Applies one event at unix time `now`; true when the faults changed.
    pub fn handle(&self, event: &HealthEvent, now: i64) -> bool {
        let gpu = event.gpu_index;
        match self.health.classify(event) {
            Verdict::Ignore { why } => {
                tracing::debug!(gpu, kind = %event.kind, %why, "health event ignored");
                false
            }
            Verdict::Fault { scope, cause } => {
                let target = self.target(event, scope);
                let fault = Fault {
                    cause,
                    detail: event.message.clone(),
                    since: now,
                };
                let changed = self.health.record(&event.gpu_uuid, gpu, target, fault);
                if changed {
                    tracing::error!(gpu, gpu_uuid = %event.gpu_uuid, ?target, %cause, detail = %event.message,
                        "device unhealthy: new claims on it are refused; claims on it are reported");
                    (self.on_change)();
                } else {
                    tracing::warn!(gpu, ?target, %cause, "another health event on an unhealthy device");
                }
                changed
            }
            Verdict::Recover { scope } => {
                let instance = match scope {
                    Scope::Gpu => None,
                    Scope::Instance { gpu_instance } => Some(gpu_instance),
                };
                let changed = self.health.recover(&event.gpu_uuid, instance);
                if changed {
                    tracing::info!(gpu, gpu_instance = ?instance, detail = %event.message, "device healthy again");
                    (self.on_change)();
                }
                changed
            }
        }
    }

    /// Where a fault of `scope` is recorded (see the module doc).
    fn target(&self, event: &HealthEvent, scope: Scope) -> Target {
        let Scope::Instance { gpu_instance } = scope else {
            return Target::Gpu;
        };
        let found = self
            .backend
            .gpu_instances(event.gpu_index)
            .map(|list| list.into_iter().find(|gi| gi.id == gpu_instance));
        match found {
            Ok(Some(gi)) => Target::Instance {
                gpu_instance,
                placement: gi.placement,
            },
            Ok(None) => {
                tracing::warn!(
                    gpu = event.gpu_index,
                    gpu_instance,
                    "the faulty GPU instance is gone; marking the whole GPU"
                );
                Target::Gpu
            }
            Err(err) => {
                tracing::warn!(gpu = event.gpu_index, gpu_instance, error = %err, "cannot look up the faulty GPU instance; marking the whole GPU");
                Target::Gpu
            }
        }
    }
}

/// Seconds since the epoch, now.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
