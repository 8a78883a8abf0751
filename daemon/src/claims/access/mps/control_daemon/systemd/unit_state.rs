//! What a transient unit's D-Bus properties say about its control daemon,
//! and what the unit watcher does next. Pure: [`super::unit`] reads the
//! properties and acts.
//!
//! Invariant: the limits of a daemon are applied once per process. The
//! manager applies them to the first process it brings up (or adopts);
//! the watcher applies them again to every process systemd starts after
//! that, seen as a higher `NRestarts` or another `MainPID`.

use crate::claims::mps_daemon::supervisor::DaemonState;
use crate::supervise::bus::{Activity, Observed};

/// The process whose limits are applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Applied {
    /// `NRestarts` when they were applied.
    pub restarts: u32,
    /// Its pid; `None` until the first process is seen.
    pub pid: Option<u32>,
}

impl Applied {
    /// The baseline of a unit just started or adopted: its first (or
    /// current) process is the manager's to bring up.
    pub fn baseline(observed: &Observed) -> Self {
        Self {
            restarts: observed.restarts,
            pid: observed.running_pid(),
        }
    }

    /// Whether the running process is one systemd started since.
    fn behind(&self, observed: &Observed) -> bool {
        observed.restarts > self.restarts || self.pid.is_some_and(|pid| pid != observed.main_pid)
    }
}

/// What the watcher does after a reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Nothing: steady, or (re)starting.
    Wait,
    /// The first process appeared: note it (the manager applies its limits).
    FirstProcess(u32),
    /// systemd restarted the daemon: apply the limits to this process.
    Reapply {
        /// The new process.
        pid: u32,
        /// `NRestarts` now.
        restarts: u32,
    },
    /// The unit stopped, failed or went away.
    Down,
}

/// What to do after reading `observed`, with limits applied as `applied`.
pub fn next(observed: &Observed, applied: &Applied) -> Next {
    if let Some(pid) = observed.running_pid() {
        return if applied.behind(observed) {
            Next::Reapply {
                pid,
                restarts: observed.restarts,
            }
        } else if applied.pid.is_none() {
            Next::FirstProcess(pid)
        } else {
            Next::Wait
        };
    }
    if observed.is_alive() || observed.activity == Activity::Deactivating {
        Next::Wait
    } else {
        Next::Down
    }
}

/// Where re-applying the limits stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reapplying {
    /// Not now: applied, or nothing to apply.
    Idle,
    /// Running the restart hook.
    Busy,
    /// Given up on this process after repeated failures.
    GaveUp,
}

/// The state `gpuslicectl` shows.
pub fn state(
    observed: &Observed,
    applied: &Applied,
    reapplying: Reapplying,
    stopped: bool,
) -> DaemonState {
    if stopped {
        return DaemonState::Stopped;
    }
    match observed.activity {
        Activity::Active | Activity::Reloading => match reapplying {
            Reapplying::GaveUp => DaemonState::Failed,
            Reapplying::Busy => DaemonState::Restarting,
            Reapplying::Idle if applied.behind(observed) => DaemonState::Restarting,
            Reapplying::Idle => DaemonState::Running,
        },
        _ if observed.is_alive() => DaemonState::Restarting,
        _ => DaemonState::Failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(activity: Activity, main_pid: u32, restarts: u32) -> Observed {
        Observed {
            activity,
            job_pending: false,
            main_pid,
            restarts,
        }
    }

    #[test]
    fn a_unit_whose_start_job_is_queued_is_alive() {
        let queued = Observed {
            job_pending: true,
            ..seen(Activity::Inactive, 0, 0)
        };
        assert!(queued.is_alive());
        assert!(!seen(Activity::Inactive, 0, 0).is_alive());
        assert!(seen(Activity::Activating, 0, 1).is_alive());
        assert!(!Observed::GONE.is_alive());
        assert!(!seen(Activity::Failed, 0, 5).is_alive());
        assert_eq!(next(&queued, &Applied::baseline(&queued)), Next::Wait);
        assert_eq!(
            state(&queued, &Applied::default(), Reapplying::Idle, false),
            DaemonState::Restarting
        );
    }

    #[test]
    fn the_first_process_is_the_managers_and_each_restart_is_reapplied() {
        let starting = seen(Activity::Inactive, 0, 0);
        let mut applied = Applied::baseline(&starting);
        let first = seen(Activity::Active, 100, 0);
        assert_eq!(next(&first, &applied), Next::FirstProcess(100));
        assert_eq!(
            state(&first, &applied, Reapplying::Idle, false),
            DaemonState::Running
        );
        applied.pid = Some(100);
        assert_eq!(next(&first, &applied), Next::Wait);
        // Killed: systemd waits RestartSec, then starts a new process.
        let waiting = seen(Activity::Activating, 0, 1);
        assert_eq!(next(&waiting, &applied), Next::Wait);
        assert_eq!(
            state(&waiting, &applied, Reapplying::Idle, false),
            DaemonState::Restarting
        );
        let second = seen(Activity::Active, 200, 1);
        assert_eq!(
            next(&second, &applied),
            Next::Reapply {
                pid: 200,
                restarts: 1
            }
        );
        assert_eq!(
            state(&second, &applied, Reapplying::Idle, false),
            DaemonState::Restarting,
            "running, but without its limits yet"
        );
        applied = Applied {
            restarts: 1,
            pid: Some(200),
        };
        assert_eq!(next(&second, &applied), Next::Wait);
        assert_eq!(
            state(&second, &applied, Reapplying::Idle, false),
            DaemonState::Running
        );
        assert_eq!(
            state(&second, &applied, Reapplying::GaveUp, false),
            DaemonState::Failed
        );
    }

    #[test]
    fn a_new_process_without_an_automatic_restart_is_reapplied_too() {
        // `systemctl restart gpuslice-mps-…` starts a new process without
        // counting it in NRestarts.
        let applied = Applied {
            restarts: 0,
            pid: Some(100),
        };
        assert_eq!(
            next(&seen(Activity::Active, 300, 0), &applied),
            Next::Reapply {
                pid: 300,
                restarts: 0
            }
        );
    }

    #[test]
    fn an_adopted_unit_keeps_its_restart_count_as_baseline() {
        let adopted = seen(Activity::Active, 400, 3);
        let applied = Applied::baseline(&adopted);
        assert_eq!(
            applied,
            Applied {
                restarts: 3,
                pid: Some(400)
            }
        );
        assert_eq!(next(&adopted, &applied), Next::Wait);
        assert_eq!(
            state(&adopted, &applied, Reapplying::Idle, false),
            DaemonState::Running
        );
    }

    #[test]
    fn a_unit_that_failed_or_went_away_is_down_and_failed_unless_stopped() {
        let applied = Applied {
            restarts: 5,
            pid: Some(100),
        };
        for down in [seen(Activity::Failed, 0, 5), Observed::GONE] {
            assert_eq!(next(&down, &applied), Next::Down);
            assert_eq!(
                state(&down, &applied, Reapplying::Idle, false),
                DaemonState::Failed
            );
            assert_eq!(
                state(&down, &applied, Reapplying::Idle, true),
                DaemonState::Stopped
            );
        }
        assert_eq!(
            next(&seen(Activity::Deactivating, 100, 5), &applied),
            Next::Wait
        );
    }

    #[test]
    fn active_states_parse() {
        assert_eq!(Activity::parse("active"), Activity::Active);
        assert_eq!(Activity::parse("activating"), Activity::Activating);
        assert_eq!(Activity::parse("failed"), Activity::Failed);
        assert_eq!(Activity::parse("maintenance"), Activity::Inactive);
    }
}
