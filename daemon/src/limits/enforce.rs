//! Carrying out a [`Decision`]: on one thread of its own, which owns the
//! pidfds, so the sampler only queues and never waits.
//!
//! Per decision, in order: open the pid (`ESRCH`: `gone`); read its start
//! time again, and if it is not the sampled one stop (`pid-reused`, nothing
//! sent); a dry-run stops here (`would-end`); SIGTERM (`EPERM`:
//! `not-permitted`, an ERROR line naming CAP_KILL); wait up to
//! `term_grace_s` for it to exit (`terminated`), else SIGKILL (`killed`).
//! Any other OS error: `failed`. Exactly one journal line per decision,
//! written when its outcome is known, and one count in the [`Ledger`], with
//! the last action per claim and device.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::decide::Decision;
use super::journal;
use super::process::{ControlError, EndSignal, ProcessControl};
use super::report::{LimitAction, LimitsReport};
use crate::config::LimitMode;

/// How long the thread waits on its pending processes before it looks for
/// new decisions again.
const TICK: Duration = Duration::from_millis(50);

/// Last actions kept (one per claim and device); the oldest goes first, so
/// claims come and go without the ledger growing.
pub const MAX_LAST_ACTIONS: usize = 4096;

/// How an action ended; its text is the metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
#[derive(strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "kebab-case")]
pub enum Outcome {
    /// Exited after SIGTERM.
    Terminated,
    /// Still there after `term_grace_s`: SIGKILL sent.
    Killed,
    /// Dry-run: nothing sent.
    WouldEnd,
    /// Exited before the pidfd was opened.
    Gone,
    /// The pid names another process now.
    PidReused,
    /// gpusliced may not signal it (`CAP_KILL`).
    NotPermitted,
    /// Another OS error.
    Failed,
}

/// What the enforcer did, shared through the [`super::LimitsBoard`].
#[derive(Debug, Clone, Default)]
pub struct Ledger(Arc<Mutex<LimitsReport>>);

impl Ledger {
    /// A copy of what was done so far.
    pub fn report(&self) -> LimitsReport {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, decision: &Decision, outcome: Outcome) {
        let mode: &'static str = decision.mode.into();
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let action = LimitAction {
            kind: decision.kind,
            mode,
            outcome: outcome.into(),
            claim_uid: decision.claim_uid.clone(),
            device: decision.device.clone(),
            pid: decision.pid,
            comm: decision.comm.clone(),
            memory_used: decision.memory_used,
            over_for_s: decision.over_for_s,
            at_ms,
        };
        self.note(action);
    }

    /// Counts `action` and keeps it as its claim and device's last.
    pub(crate) fn note(&self, action: LimitAction) {
        let mut report = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *report
            .counts
            .entry((action.kind, action.mode, action.outcome))
            .or_default() += 1;
        let key = (action.claim_uid.clone(), action.device.clone());
        report.last.insert(key, action);
        if report.last.len() > MAX_LAST_ACTIONS
            && let Some(oldest) = report
                .last
                .iter()
                .min_by_key(|(_, a)| a.at_ms)
                .map(|(k, _)| k.clone())
        {
            report.last.remove(&oldest);
        }
    }
}

/// A process sent SIGTERM, waited on.
#[derive(Debug)]
struct Pending<H> {
    decision: Decision,
    handle: H,
    deadline: Instant,
}

/// The steps of the module doc, without a thread (tests drive it).
#[derive(Debug)]
pub struct Executor<P: ProcessControl> {
    control: P,
    term_grace: Duration,
    ledger: Ledger,
    pending: Vec<Pending<P::Handle>>,
}

impl<P: ProcessControl> Executor<P> {
    /// Signals through `control`, waiting `term_grace` before SIGKILL.
    pub fn new(control: P, term_grace: Duration, ledger: Ledger) -> Self {
        Self {
            control,
            term_grace,
            ledger,
            pending: Vec::new(),
        }
    }

    /// Processes sent SIGTERM and not yet exited.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Steps 1 to 4 for `decision` at `now`: an outcome, or the process
    /// pending after SIGTERM.
    pub fn start(&mut self, decision: Decision, now: Instant) {
        let pid = decision.pid;
        let handle = match self.control.open(pid) {
            Ok(handle) => handle,
            Err(err) => return self.finish(&decision, failure(&err), Some(&err)),
        };
        match self.control.start_time(pid) {
            Ok(start) if start == decision.start_time => {}
            Ok(_) => return self.finish(&decision, Outcome::PidReused, None),
            Err(ControlError::Gone { .. }) => return self.finish(&decision, Outcome::Gone, None),
            Err(err) => return self.finish(&decision, Outcome::Failed, Some(&err)),
        }
        if decision.mode != LimitMode::End {
            return self.finish(&decision, Outcome::WouldEnd, None);
        }
        let first = if self.term_grace.is_zero() {
            EndSignal::Kill
        } else {
            EndSignal::Term
        };
        match self.control.signal(&handle, first) {
            Ok(()) if first == EndSignal::Kill => self.finish(&decision, Outcome::Killed, None),
            Ok(()) => self.pending.push(Pending {
                decision,
                handle,
                deadline: now + self.term_grace,
            }),
            Err(err) => self.finish(&decision, failure(&err), Some(&err)),
        }
    }

    /// Step 5: waits up to `timeout` for a pending process to exit; those
    /// that did are `terminated`, those past their deadline at `now` get
    /// SIGKILL.
    pub fn wait(&mut self, timeout: Duration, now: Instant) {
        if self.pending.is_empty() {
            return;
        }
        let handles: Vec<&P::Handle> = self.pending.iter().map(|p| &p.handle).collect();
        let exited = self.control.wait(&handles, timeout);
        let mut still = Vec::new();
        for (p, exited) in std::mem::take(&mut self.pending).into_iter().zip(exited) {
            if exited {
                self.finish(&p.decision, Outcome::Terminated, None);
            } else if now >= p.deadline {
                match self.control.signal(&p.handle, EndSignal::Kill) {
                    Ok(()) => self.finish(&p.decision, Outcome::Killed, None),
                    Err(ControlError::Gone { .. }) => {
                        self.finish(&p.decision, Outcome::Terminated, None);
                    }
                    Err(err) => self.finish(&p.decision, Outcome::Failed, Some(&err)),
                }
            } else {
                still.push(p);
            }
        }
        self.pending = still;
    }

    fn finish(&mut self, decision: &Decision, outcome: Outcome, error: Option<&ControlError>) {
        let owner = match outcome {
            Outcome::NotPermitted => self.control.owner(decision.pid),
            _ => None,
        };
        journal::log(decision, outcome, self.term_grace, owner, error);
        self.ledger.record(decision, outcome);
    }
}

fn failure(err: &ControlError) -> Outcome {
    match err {
        ControlError::Gone { .. } => Outcome::Gone,
        ControlError::NotPermitted { .. } => Outcome::NotPermitted,
        ControlError::Stat { .. } | ControlError::Os { .. } => Outcome::Failed,
    }
}

/// The enforcer's thread: decisions in, outcomes into the ledger.
#[derive(Debug)]
pub struct Enforcer {
    decisions: Sender<Decision>,
    ledger: Ledger,
}

impl Enforcer {
    /// Starts the thread, signalling through `control` and recording into
    /// `ledger`. `None` when the thread cannot start (logged).
    pub fn start<P>(control: P, term_grace: Duration, ledger: Ledger) -> Option<Self>
    where
        P: ProcessControl + Send + 'static,
        P::Handle: Send,
    {
        let (decisions, inbox) = mpsc::channel();
        let mut executor = Executor::new(control, term_grace, ledger.clone());
        let spawned = std::thread::Builder::new()
            .name("limits".to_owned())
            .spawn(move || run(&mut executor, &inbox));
        match spawned {
            Ok(_) => Some(Self { decisions, ledger }),
            Err(err) => {
                tracing::error!(error = %err, "cannot start the limits thread; [limits] only warns");
                None
            }
        }
    }

    /// Queues `decision`; never blocks.
    pub fn submit(&self, decision: Decision) {
        if self.decisions.send(decision).is_err() {
            tracing::error!("the limits thread has stopped; nothing is ended");
        }
    }

    /// What was done so far.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }
}

/// Takes decisions until the sender is dropped and nothing is pending.
fn run<P: ProcessControl>(executor: &mut Executor<P>, inbox: &Receiver<Decision>) {
    let mut open = true;
    loop {
        if executor.pending() == 0 {
            if !open {
                return;
            }
            match inbox.recv() {
                Ok(d) => executor.start(d, Instant::now()),
                Err(_) => return,
            }
            continue;
        }
        executor.wait(TICK, Instant::now());
        if open {
            match inbox.recv_timeout(Duration::ZERO) {
                Ok(d) => executor.start(d, Instant::now()),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => open = false,
            }
        }
    }
}

#[cfg(test)]
mod tests;
