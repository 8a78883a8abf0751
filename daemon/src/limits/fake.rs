//! [`FakeProcesses`]: a [`ProcessControl`] for tests. It records each call
//! (`open 100`, `start_time 100`, `SIGTERM 100`, `SIGKILL 100`), answers
//! with the processes it was given (a start time each, and which signal
//! ends them), refuses signals to the processes it is told gpusliced may
//! not signal (`EPERM`), and answers `ESRCH` for any other pid. It signals
//! nothing anywhere. Clones share their state, so a test keeps one while
//! the enforcer owns another.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::process::{ControlError, EndSignal, ProcessControl};

/// Which signal ends a fake process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndsOn {
    /// SIGTERM (or SIGKILL).
    Term,
    /// Only SIGKILL.
    Kill,
}

#[derive(Debug, Clone)]
struct Fake {
    start_time: u64,
    ends_on: EndsOn,
    denied: bool,
    ended: bool,
}

#[derive(Debug, Default)]
struct State {
    processes: BTreeMap<u32, Fake>,
    calls: Vec<String>,
}

/// A recording, error-injecting process table.
#[derive(Debug, Clone, Default)]
pub struct FakeProcesses {
    state: Arc<Mutex<State>>,
}

impl FakeProcesses {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds process `pid`, started at `start_time`, ended by `ends_on`.
    pub fn spawn(&self, pid: u32, start_time: u64, ends_on: EndsOn) {
        let fake = Fake {
            start_time,
            ends_on,
            denied: false,
            ended: false,
        };
        self.lock().processes.insert(pid, fake);
    }

    /// From now on a signal to `pid` fails with `EPERM`.
    pub fn deny(&self, pid: u32) {
        if let Some(p) = self.lock().processes.get_mut(&pid) {
            p.denied = true;
        }
    }

    /// Whether `pid` runs (was added and not ended).
    pub fn alive(&self, pid: u32) -> bool {
        self.lock().processes.get(&pid).is_some_and(|p| !p.ended)
    }

    /// Every call so far, oldest first.
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }

    fn running(&self, pid: u32) -> Result<Fake, ControlError> {
        let state = self.lock();
        let p = state.processes.get(&pid).filter(|p| !p.ended);
        p.cloned().ok_or(ControlError::Gone { pid })
    }
}

impl ProcessControl for FakeProcesses {
    type Handle = u32;

    fn open(&mut self, pid: u32) -> Result<u32, ControlError> {
        self.lock().calls.push(format!("open {pid}"));
        self.running(pid).map(|_| pid)
    }

    fn start_time(&mut self, pid: u32) -> Result<u64, ControlError> {
        self.lock().calls.push(format!("start_time {pid}"));
        self.running(pid).map(|p| p.start_time)
    }

    fn owner(&mut self, _pid: u32) -> Option<u32> {
        Some(1000)
    }

    fn signal(&mut self, &pid: &u32, signal: EndSignal) -> Result<(), ControlError> {
        let mut state = self.lock();
        state.calls.push(format!("{signal} {pid}"));
        let p = state.processes.get_mut(&pid).filter(|p| !p.ended);
        let p = p.ok_or(ControlError::Gone { pid })?;
        if p.denied {
            return Err(ControlError::NotPermitted { pid });
        }
        if signal == EndSignal::Kill || p.ends_on == EndsOn::Term {
            p.ended = true;
        }
        Ok(())
    }

    fn wait(&mut self, handles: &[&u32], _timeout: Duration) -> Vec<bool> {
        handles.iter().map(|&&pid| !self.alive(pid)).collect()
    }
}
