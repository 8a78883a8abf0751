//! Limits that hold on shared GPUs (`[limits]`): an MPS or time-sliced
//! claim over its memory share, or a process that belongs to no claim, gets
//! a process ended once the condition outlasts its grace, or is only named
//! ("dry-run"); by default nothing but the episode warning happens.
//!
//! Reading order: [`report`] (what was done, plain data); [`decide`] (which
//! process, from one sample, pure); [`process`] (the pidfd boundary);
//! [`enforce`] (the thread that opens, checks and signals); [`journal`]
//! (the one line per action); [`saved`] (the last actions across a
//! restart); [`board`] (where what was done is published, for the API and
//! the metrics); [`LimitsSubscriber`] (a subscriber of the samples, wired by
//! `run`). Nothing here intercepts CUDA: the only lever is a signal to a
//! process. Whether a claim's own `LimitsConfig` may stand is checked at
//! prepare ([`crate::opaque::admit`]).

pub mod board;
pub mod decide;
pub mod enforce;
#[cfg(any(test, feature = "testkit"))]
pub mod fake;
pub mod journal;
pub mod process;
pub mod report;
pub mod saved;

use std::path::Path;
use std::time::Duration;

pub use board::LimitsBoard;
pub use decide::{Decider, Decision, Policy};
pub use enforce::{Enforcer, Ledger, Outcome};
pub use process::{Pidfds, ProcessControl};
pub use report::{LimitAction, LimitActionKey, LimitsReport};

use crate::activity::publish::{Sample, SampleSubscriber};
use crate::config::LimitsConfig;
use saved::ActionsFile;

/// `[limits]` as a subscriber of the samples: when it acts, decides on each
/// sample and queues to the enforcer; always keeps the board's restored
/// actions to the claims still held and the last actions' file up to date.
#[derive(Debug)]
pub struct LimitsSubscriber {
    board: LimitsBoard,
    acting: Option<Acting>,
    file: Option<ActionsFile>,
}

/// What acting needs: the rule, its memory between samples, the thread.
#[derive(Debug)]
struct Acting {
    policy: Policy,
    decider: Decider,
    enforcer: Enforcer,
}

impl LimitsSubscriber {
    /// Publishing into `board`, keeping its file in `state_dir` (if any);
    /// acting as `config` says, signalling through `control` (only warning
    /// when `config` does not act or the thread cannot start).
    pub fn start<P>(
        config: &LimitsConfig,
        control: P,
        board: LimitsBoard,
        state_dir: Option<&Path>,
    ) -> Self
    where
        P: ProcessControl + Send + 'static,
        P::Handle: Send,
    {
        let acting = config.acts().then(|| {
            let grace = Duration::from_secs(config.term_grace_s);
            let enforcer = Enforcer::start(control, grace, board.ledger())?;
            tracing::info!(
                overshare = %config.overshare,
                unclaimed = %config.unclaimed,
                grace_s = config.grace_s,
                "[limits] acts on over-shares and unclaimed processes once they outlast the grace"
            );
            Some(Acting {
                policy: Policy::new(config, std::process::id()),
                decider: Decider::default(),
                enforcer,
            })
        });
        Self {
            board,
            acting: acting.flatten(),
            file: state_dir.map(ActionsFile::new),
        }
    }

    fn save(&mut self) {
        if let Some(file) = &mut self.file
            && let Err(err) = file.save(self.board.report().last.values())
        {
            tracing::warn!(error = %err, "the last [limits] actions not saved; a restart shows none");
        }
    }
}

impl SampleSubscriber for LimitsSubscriber {
    fn on_sample(&mut self, sample: &Sample<'_>) {
        if let Some(acting) = &mut self.acting {
            for decision in acting.decider.decide(&acting.policy, sample) {
                acting.enforcer.submit(decision);
            }
        }
        self.board.keep_claims(sample.claims);
        self.save();
    }

    fn flush(&mut self, _now: i64) {
        self.save();
    }
}
