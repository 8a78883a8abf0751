//! [`UnitDaemon`]: one transient unit `gpuslice-mps-<hash>.service` as a
//! supervised daemon. systemd restarts the process (`Restart=on-failure`);
//! this side reads the unit's state from its D-Bus properties, and a watcher
//! thread waits on the unit's `PropertiesChanged` signals (systemd sends them
//! to subscribed clients; [`crate::claims::mps_daemon::systemd`] subscribes) and, after each
//! restart, runs the restart hook so the new process gets its limits applied
//! and read back, as the first one did. Until then, and when that fails, the
//! daemon's state says so. The decisions are [`super::unit_state`]'s.

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio_stream::StreamExt;
use zbus::MessageStream;

use super::SystemdSupervisor;
use super::unit_state::{Applied, Next, Reapplying, next, state};
use crate::claims::mps_daemon::MpsError;
use crate::claims::mps_daemon::control::wait_on_dir;
use crate::claims::mps_daemon::supervisor::{DaemonState, DaemonStatus, RestartHook, Supervised};
use crate::supervise::bus::{Observed, SystemBus};

/// How long a stopped unit gets to go away (systemd's own stop timeout
/// kills the daemon before that).
const STOP_BOUND: Duration = Duration::from_secs(100);
/// The watcher reads the unit at least this often, should a signal be lost.
const RECHECK: Duration = Duration::from_secs(5);
/// Failed re-applications of the limits to one process before the daemon
/// is reported failed.
const MAX_REAPPLY_FAILURES: u32 = 5;

#[derive(Debug)]
struct Watch {
    applied: Applied,
    reapplying: Reapplying,
    failures: u32,
    stopping: bool,
    /// The last reading, for waits.
    last: Observed,
}

#[derive(Debug)]
struct Shared {
    watch: Mutex<Watch>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Watch> {
        self.watch.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One transient unit.
#[derive(Debug)]
pub struct UnitDaemon {
    supervisor: SystemdSupervisor,
    unit: String,
    /// Watched while the unit stops.
    pipe_dir: PathBuf,
    shared: Arc<Shared>,
}

impl UnitDaemon {
    /// Supervises `unit`, taking its current process as the one the
    /// manager brings up, and starts its watcher.
    pub fn watch(
        supervisor: &SystemdSupervisor,
        unit: String,
        pipe_dir: PathBuf,
        on_restart: RestartHook,
    ) -> Result<Arc<Self>, MpsError> {
        let observed = supervisor.observe(&unit);
        let shared = Arc::new(Shared {
            watch: Mutex::new(Watch {
                applied: Applied::baseline(&observed),
                reapplying: Reapplying::Idle,
                failures: 0,
                stopping: false,
                last: observed,
            }),
            changed: Condvar::new(),
        });
        let daemon = Arc::new(Self {
            supervisor: supervisor.clone(),
            unit,
            pipe_dir,
            shared,
        });
        let watched = Arc::clone(&daemon);
        std::thread::Builder::new()
            .name(format!(
                "mps-{}",
                daemon.unit.trim_start_matches(super::UNIT_PREFIX)
            ))
            .spawn(move || watched.run_watcher(&on_restart))
            .map_err(|error| MpsError::Io {
                action: "start the watcher thread of",
                path: PathBuf::from(&daemon.unit),
                error,
            })?;
        Ok(daemon)
    }

    fn observe(&self) -> Observed {
        self.supervisor.observe(&self.unit)
    }

    /// The watcher: reads the unit on every signal about it (and every
    /// RECHECK), re-applies limits after a restart, ends once the daemon is
    /// stopped on purpose or the unit is gone.
    fn run_watcher(&self, on_restart: &RestartHook) {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
        {
            Ok(runtime) => runtime,
            Err(err) => {
                tracing::error!(unit = %self.unit, error = %err, "cannot watch the MPS unit; its restarts will not get their limits applied again");
                return;
            }
        };
        let mut signals = match runtime.block_on(async {
            let rule = SystemBus::changes_of(&self.unit)?;
            MessageStream::for_match_rule(
                rule,
                self.supervisor.bus().connection().inner(),
                Some(64),
            )
            .await
        }) {
            Ok(stream) => Some(stream),
            Err(err) => {
                tracing::warn!(unit = %self.unit, error = %err, "no D-Bus signals for the MPS unit; reading it every {}s instead", RECHECK.as_secs());
                None
            }
        };
        loop {
            if !self.check(on_restart) {
                return;
            }
            // Not a sleep: the usual wake-up is the unit's signal.
            let ended = runtime.block_on(async {
                match signals.as_mut() {
                    Some(stream) => {
                        matches!(tokio::time::timeout(RECHECK, stream.next()).await, Ok(None))
                    }
                    None => {
                        tokio::time::sleep(RECHECK).await;
                        false
                    }
                }
            });
            if ended {
                tracing::warn!(unit = %self.unit, "D-Bus signals for the MPS unit ended; reading it every {}s instead", RECHECK.as_secs());
                signals = None;
            }
        }
    }

    /// One reading and what follows; false when the watch is over.
    fn check(&self, on_restart: &RestartHook) -> bool {
        let observed = self.observe();
        let step = {
            let mut watch = self.shared.lock();
            watch.last = observed;
            self.shared.changed.notify_all();
            if watch.stopping {
                return false;
            }
            let step = next(&observed, &watch.applied);
            match step {
                Next::FirstProcess(pid) => watch.applied.pid = Some(pid),
                // Always a process not tried yet: giving up on one marks it
                // applied, so only a later restart comes back here.
                Next::Reapply { .. } => watch.reapplying = Reapplying::Busy,
                Next::Wait | Next::Down => {}
            }
            step
        };
        match step {
            Next::Reapply { pid, restarts } => self.reapply(pid, restarts, on_restart),
            Next::Down => {
                // Not stopped by gpusliced: stopped by hand, or failed for
                // good (the restarts ran out). status() says so from now on.
                tracing::error!(unit = %self.unit, restarts = observed.restarts, "the MPS control daemon's unit stopped or failed without gpusliced stopping it");
                return false;
            }
            Next::FirstProcess(_) | Next::Wait => {}
        }
        true
    }

    fn reapply(&self, pid: u32, restarts: u32, on_restart: &RestartHook) {
        tracing::warn!(unit = %self.unit, pid, restarts, "systemd restarted the MPS control daemon; applying its limits again");
        let alive = || self.observe().runs(pid);
        let result = on_restart(&alive);
        let mut watch = self.shared.lock();
        match result {
            Ok(()) => {
                tracing::info!(unit = %self.unit, pid, restarts, "MPS control daemon back: limits applied again");
                watch.applied = Applied {
                    restarts,
                    pid: Some(pid),
                };
                watch.reapplying = Reapplying::Idle;
                watch.failures = 0;
            }
            Err(err) => {
                watch.failures += 1;
                tracing::error!(unit = %self.unit, pid, error = %err, attempt = watch.failures, "the restarted MPS control daemon did not take its limits");
                if watch.failures >= MAX_REAPPLY_FAILURES {
                    // Given up on this process; a later one is tried anew.
                    watch.applied = Applied {
                        restarts,
                        pid: Some(pid),
                    };
                    watch.reapplying = Reapplying::GaveUp;
                    watch.failures = 0;
                } else {
                    watch.reapplying = Reapplying::Idle;
                }
            }
        }
        self.shared.changed.notify_all();
    }
}

impl Supervised for UnitDaemon {
    fn is_alive(&self) -> bool {
        self.observe().is_alive()
    }

    fn status(&self) -> DaemonStatus {
        let observed = self.observe();
        let watch = self.shared.lock();
        DaemonStatus {
            pid: (observed.main_pid != 0).then_some(observed.main_pid),
            unit: Some(self.unit.clone()),
            state: state(&observed, &watch.applied, watch.reapplying, watch.stopping),
            restarts: observed.restarts,
        }
    }

    fn wait_for_restarts(&self, count: u32, bound: Duration) -> DaemonStatus {
        let deadline = Instant::now() + bound;
        let mut watch = self.shared.lock();
        loop {
            let now = state(
                &watch.last,
                &watch.applied,
                watch.reapplying,
                watch.stopping,
            );
            let left = deadline.saturating_duration_since(Instant::now());
            if (watch.last.restarts >= count && now == DaemonState::Running)
                || now == DaemonState::Failed
                || left.is_zero()
            {
                break;
            }
            watch = self
                .shared
                .changed
                .wait_timeout(watch, left)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        drop(watch);
        self.status()
    }

    fn stop(&self, quit: &dyn Fn()) -> Result<(), MpsError> {
        self.shared.lock().stopping = true;
        quit();
        self.supervisor.stop_unit(&self.unit)?;
        // StopUnit only queues the job: wait (bounded) until the daemon is
        // gone, so the GPU's compute mode is reset after it, not under it.
        if !self
            .supervisor
            .wait_gone(&self.unit, &self.pipe_dir, STOP_BOUND)?
        {
            tracing::warn!(unit = %self.unit, "MPS control daemon unit still active after stop");
        }
        Ok(())
    }
}

/// Waits (bounded) until `alive` says no, waking on changes in `pipe_dir`
/// (the daemon removes its socket and pid file as it quits) and every half
/// second.
pub(in crate::claims::access::mps::control_daemon) fn wait_until_dead(
    pipe_dir: &std::path::Path,
    bound: Duration,
    alive: &dyn Fn() -> bool,
) -> Result<bool, MpsError> {
    let dir = if pipe_dir.is_dir() {
        pipe_dir
    } else {
        std::path::Path::new("/")
    };
    wait_on_dir(dir, bound, &|| Ok(!alive()))
}
