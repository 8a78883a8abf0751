//! What the manager holds of one fake daemon ([`Handle`], a
//! [`Supervised`]: alive, status, stop, restarts waited for) and the gate
//! that holds starts ([`StartGate`]).

use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use super::{FakeDaemon, Shared, lock};
use crate::claims::mps_daemon::MpsError;
use crate::claims::mps_daemon::supervisor::{DaemonState, DaemonStatus, Supervised};

/// Holds starts until opened (see [`FakeMps::gate_starts`]).
#[derive(Debug)]
pub struct StartGate {
    pub(super) shared: Arc<Shared>,
}

impl StartGate {
    /// Waits until a start is held at the gate.
    pub fn wait_started(&self) {
        let mut state = lock(&self.shared);
        while state.gate.waiting == 0 {
            state = self
                .shared
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Lets every held start, and every later one, through.
    pub fn open(&self) {
        lock(&self.shared).gate.closed = false;
        self.shared.changed.notify_all();
    }
}

/// One daemon as the manager holds it.
#[derive(Debug)]
pub(super) struct Handle {
    pub(super) shared: Arc<Shared>,
    pub(super) hash: String,
    /// `None`: a start that failed (the process exited at once).
    pub(super) generation: Option<u64>,
}

impl Handle {
    fn with_mine<T>(&self, f: impl FnOnce(Option<&mut FakeDaemon>) -> T) -> T {
        let mut state = lock(&self.shared);
        let mine = state
            .daemons
            .get_mut(&self.hash)
            .filter(|d| Some(d.generation) == self.generation);
        f(mine)
    }
}

impl Supervised for Handle {
    fn is_alive(&self) -> bool {
        self.with_mine(|d| d.is_some())
    }

    fn status(&self) -> DaemonStatus {
        let (state, restarts) =
            self.with_mine(|d| d.map_or((DaemonState::Stopped, 0), |d| (d.state, d.restarts)));
        DaemonStatus {
            pid: None,
            unit: None,
            state,
            restarts,
        }
    }

    fn stop(&self, quit: &dyn Fn()) -> Result<(), MpsError> {
        quit();
        let mut state = lock(&self.shared);
        let mine = state
            .daemons
            .get(&self.hash)
            .is_some_and(|d| Some(d.generation) == self.generation);
        if mine {
            state.daemons.remove(&self.hash);
        }
        drop(state);
        self.shared.changed.notify_all();
        Ok(())
    }

    fn wait_for_restarts(&self, count: u32, bound: Duration) -> DaemonStatus {
        let deadline = Instant::now() + bound;
        let mut state = lock(&self.shared);
        loop {
            let done = state
                .daemons
                .get(&self.hash)
                .filter(|d| Some(d.generation) == self.generation)
                .is_none_or(|d| d.restarts >= count && d.state != DaemonState::Restarting);
            let left = deadline.saturating_duration_since(Instant::now());
            if done || left.is_zero() {
                break;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        drop(state);
        self.status()
    }
}
