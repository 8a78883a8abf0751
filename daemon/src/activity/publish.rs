//! [`SampleHook`]: what the sampler hands, after each sample's episodes, to
//! a module above it (`limits`, wired by `run`), and what it publishes back
//! with the snapshot. The hook runs on the sampler's thread: it must not
//! block (the limits hook only queues its decisions for its own thread).

use std::collections::HashMap;

use super::attribute::{Attribution, ProcView};
use super::episodes::SavedEpisode;
use super::held::HeldClaim;
use super::snapshot::LimitsReport;

/// One sample, after its episodes.
#[derive(Debug, Clone, Copy)]
pub struct Sampled<'a> {
    /// Unix seconds of the sample.
    pub now: i64,
    /// The sample's attribution.
    pub attribution: &'a Attribution,
    /// Each listed pid's `/proc` view in this sample.
    pub procs: &'a HashMap<u32, ProcView>,
    /// The episodes open after this sample.
    pub episodes: &'a [SavedEpisode],
    /// The claims the sample saw held (sorted by uid), with their own limits.
    pub claims: &'a [HeldClaim],
}

/// Called by the sampler after each sample.
pub trait SampleHook: Send + std::fmt::Debug {
    /// Takes `sample`; must not block.
    fn after_sample(&mut self, sample: &Sampled<'_>);

    /// What to publish with the snapshot.
    fn report(&self) -> LimitsReport;
}
