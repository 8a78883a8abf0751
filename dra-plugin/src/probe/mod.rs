//! Every dry run the plugin sends, and the reading of every API answer.
//!
//! Two questions are put to the API server before the plugin relies on
//! the answer, each as a server-side dry run (`dryRun=All`: defaulting,
//! the registry strategy, validation, authorization and admission run,
//! nothing is stored) of the request the plugin will really send:
//! - [`mig_form`]: does it keep ResourceSlices' shared counters (the form
//!   of MIG slices, [`crate::advertise`])? Discovery, then a dry-run
//!   create of each of the two slices a partitionable pool is made of.
//! - [`claim_status`]: may we write a claim's status entries, and are they
//!   kept ([`crate::claim_status::access`])? A dry-run server-side apply.
//!
//! Both read what comes back the same way: an answer is a [`Finding`]
//! (taken with what we sent, taken without it, or refused for good, as
//! [`answer`] reads the code), or nothing decided (408, 409, 429, 5xx, no
//! answer), which is retried with backoff and never taken for a verdict.
//! Real writes are read with the same [`answer::refusal`].
//!
//! A verdict is kept by whoever asked ([`MigFormProbe`] for the publisher,
//! the access state for the claim-status writer) until something that can
//! change it happens; a question half answered keeps what it found, so a
//! retry asks only what is still open.

pub mod answer;
mod claim_status;
mod mig_form;

use kube::api::PostParams;

pub use answer::{Refusal, Verdict, refusal};
pub use claim_status::claim_status;
pub use mig_form::{MigFormProbe, ProbeError, ProbeTarget, probe_slices};

/// What one write (a dry run, or a real write read the same way) found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Taken, and the answer holds what we sent.
    Kept,
    /// Taken, and the answer lacks it: the API server dropped it (a
    /// feature gate off clears its fields silently).
    Dropped,
    /// Refused for good.
    Refused(Refusal),
}

impl Finding {
    /// The finding of an answer: taken (`kept` says whether what we sent
    /// is in it) or refused; the error itself when it decides nothing.
    pub fn of<T>(
        answer: Result<T, kube::Error>,
        kept: impl FnOnce(&T) -> bool,
    ) -> Result<Self, kube::Error> {
        match answer {
            Ok(answer) if kept(&answer) => Ok(Self::Kept),
            Ok(_) => Ok(Self::Dropped),
            Err(error) => refusal(&error).map(Self::Refused).ok_or(error),
        }
    }
}

/// The parameters of a dry-run create.
fn dry_run_create() -> PostParams {
    PostParams {
        dry_run: true,
        ..PostParams::default()
    }
}

#[cfg(test)]
mod tests;
