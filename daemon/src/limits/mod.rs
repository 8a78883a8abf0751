//! Limits that hold on shared GPUs (`[limits]`): an MPS or time-sliced
//! claim over its memory share, or a process that belongs to no claim, gets
//! a process ended once the condition outlasts its grace, or is only named
//! ("dry-run"); by default nothing but the episode warning happens.
//!
//! Reading order: [`decide`] (which process, from one sample, pure);
//! [`process`] (the pidfd boundary); [`enforce`] (the thread that opens,
//! checks and signals); [`journal`] (the one line per action); [`Limits`]
//! (the sampler's hook, wired by `run`). Nothing here intercepts CUDA: the
//! only lever is a signal to a process. Whether a claim's own
//! `LimitsConfig` may stand is checked at prepare ([`crate::sharing::admit`]).

pub mod decide;
pub mod enforce;
#[cfg(any(test, feature = "testkit"))]
pub mod fake;
pub mod journal;
pub mod process;

use std::time::Duration;

pub use decide::{Decider, Decision, Policy};
pub use enforce::{Enforcer, Ledger, Outcome};
pub use process::{Pidfds, ProcessControl};

use crate::activity::LimitsReport;
use crate::activity::hook::{SampleHook, Sampled};
use crate::config::LimitsConfig;

/// The sampler's hook: decides on each sample, queues to the enforcer.
#[derive(Debug)]
pub struct Limits {
    policy: Policy,
    decider: Decider,
    enforcer: Enforcer,
}

impl Limits {
    /// The hook for `config`, signalling through `control`; `None` when
    /// `[limits]` only warns (nothing to hook) or the thread cannot start.
    pub fn start<P>(config: &LimitsConfig, control: P) -> Option<Self>
    where
        P: ProcessControl + Send + 'static,
        P::Handle: Send,
    {
        if !config.acts() {
            return None;
        }
        let enforcer = Enforcer::start(control, Duration::from_secs(config.term_grace_s))?;
        tracing::info!(
            overshare = %config.overshare,
            unclaimed = %config.unclaimed,
            grace_s = config.grace_s,
            "[limits] acts on over-shares and unclaimed processes once they outlast the grace"
        );
        Some(Self {
            policy: Policy::new(config, std::process::id()),
            decider: Decider::default(),
            enforcer,
        })
    }
}

impl SampleHook for Limits {
    fn after_sample(&mut self, sample: &Sampled<'_>) {
        for decision in self.decider.decide(&self.policy, sample) {
            self.enforcer.submit(decision);
        }
    }

    fn report(&self) -> LimitsReport {
        self.enforcer.ledger().report()
    }
}
