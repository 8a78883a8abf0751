//! What the sampler publishes after each sample, and to whom: the
//! [`SampleSubscriber`]s `run` wires in (the usage history the advice reads,
//! `[limits]`), called in order on the sampler's thread with the same
//! [`Sample`], one way: a subscriber returns nothing into the sample, and
//! what it makes of it, it publishes itself (the history its
//! `SharedHistory`, `[limits]` its board). The snapshot for the API, the
//! metrics and the claim-status feed is published through the
//! [`super::ActivityHandle`]. A subscriber must not block: `[limits]` only
//! queues its decisions for its own thread.

use std::collections::{BTreeSet, HashMap};

use super::attribute::{Attribution, ProcView};
use super::episodes::SavedEpisode;
use super::held::HeldClaim;

/// One sample, as every subscriber sees it.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// Unix seconds of the sample.
    pub now: i64,
    /// The sample's attribution: each claim's use, the unclaimed processes.
    pub attribution: &'a Attribution,
    /// Each listed pid's `/proc` view in this sample.
    pub procs: &'a HashMap<u32, ProcView>,
    /// The episodes open after this sample.
    pub episodes: &'a [SavedEpisode],
    /// The claims the sample saw held (sorted by uid), with their own limits.
    pub claims: &'a [HeldClaim],
    /// The GPUs (by name) the sample could not read: their devices have no
    /// figures this time.
    pub unread: &'a BTreeSet<String>,
}

/// Takes each sample the sampler publishes.
pub trait SampleSubscriber: Send + std::fmt::Debug {
    /// Takes `sample`; must not block.
    fn on_sample(&mut self, sample: &Sample<'_>);

    /// Sampling stops at `now` (Unix seconds): write what is kept.
    fn flush(&mut self, _now: i64) {}
}
