//! MPS as a kind of access, one file per part: what a claim uses
//! ([`held`]), prepare's and unprepare's steps ([`verbs`]), start-up and a
//! claim asked again ([`restore`]), the CDI edits ([`cdi`]), what is
//! reported ([`view`]). The daemons themselves are [`crate::claims::mps_daemon`]'s.
//!
//! The steps: reserve (the claim joins the GPU's policy as MPS, never
//! beside time-slicing, and its memory share is promised), apply (compute
//! mode EXCLUSIVE_PROCESS on the key's whole GPUs, then the daemon, which [`crate::claims::mps_daemon::MpsManager::acquire`] returns only once it
//! answers with its limits read back), release (take the claim off the
//! daemon; after the last claim the daemon quits and the GPUs return to
//! DEFAULT) and restore at start-up (the same daemons, by key hash: a live
//! one is adopted, a missing one started again).
//!
//! A MIG slice's daemon is keyed by the slice's UUID, known only once the
//! slice is made: apply runs after the MIG steps, and MIG devices keep
//! their compute mode.

mod cdi;
pub(crate) mod config;
pub mod control_daemon;
mod held;
pub(crate) mod opaque;
pub(crate) mod resolve;
mod restore;
mod verbs;
pub(in crate::claims) mod view;

/// MPS: the [`super::Access`] of a claim on devices shared through an MPS
/// control daemon (whole GPUs or MIG slices).
#[derive(Debug, Default)]
pub(in crate::claims) struct Mps;

impl Mps {
    /// The state of every MPS control daemon of the node, for the metrics.
    pub(in crate::claims) fn daemon_states(
        &self,
        cx: &super::Cx<'_>,
    ) -> Vec<crate::claims::mps_daemon::DaemonState> {
        view::daemon_states(cx)
    }

    /// Every MPS control daemon of the node, as GetSharing shows it.
    pub(in crate::claims) fn daemon_views(&self, cx: &super::Cx<'_>) -> Vec<view::DaemonView> {
        view::daemon_views(cx)
    }

    /// The pids of the node's MPS control daemons that run now.
    pub(in crate::claims) fn daemon_pids(&self, cx: &super::Cx<'_>) -> Vec<u32> {
        view::daemon_pids(cx)
    }
}

#[cfg(test)]
mod tests;
