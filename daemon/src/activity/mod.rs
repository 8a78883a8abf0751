//! Per-claim GPU use: which process on which GPU or MIG slice belongs to
//! which claim, what it uses, which claims sit idle, and which overrun their
//! share or run without a claim.
//!
//! Reading order: [`snapshot`] (what a sample publishes; plain data) and
//! [`handle`] (where it is published); [`marker`] (the reading back from a
//! process's environment of the claim variable the CDI spec sets, pure);
//! [`held`] (what each claim holds and its share, pure); [`attribute`]
//! (processes to claims, active claims, over-shares, unclaimed processes,
//! pure); [`warnings`] (the conditions of a sample and the lines logged,
//! pure); [`episodes`] (warnings once per episode, pure); [`series`] (the
//! metrics cardinality cap, pure); [`procfs`] (`/proc` reads, cached);
//! [`persist`] (last active times across restarts); [`publish`] (each
//! sample handed to its subscribers, one way); [`history_feed`] (the usage
//! history as a subscriber, and what a sample gives it, pure); [`sampler`]
//! (one sample of the node, read through the claim engine's `NodeReads`);
//! [`task`] (the loop, started and stopped by `run`, and the fresh samples
//! asked for through the handle); [`current`] (the
//! latest sample brought up to the claim table, for the API, pure);
//! [`window`] (each claim and device's last `summary_window_s` of samples,
//! pure) and [`summary`] (per claim and device the window's figures, idle
//! and over-share since when, and the conditions generation, pure).

pub mod attribute;
pub mod current;
pub mod episodes;
pub mod handle;
pub mod held;
pub mod history_feed;
pub mod marker;
pub mod persist;
pub mod procfs;
pub mod publish;
pub mod sampler;
pub mod series;
pub mod snapshot;
pub mod summary;
pub mod task;
pub mod warnings;
pub mod window;

#[cfg(test)]
pub(crate) mod fixtures;

pub use current::current;
pub use handle::ActivityHandle;
pub use sampler::{Sampler, SamplerSettings};
pub use series::{kept_series, series_dropped};
pub use snapshot::{
    ActivitySnapshot, ClaimActivity, DeviceActivity, DeviceSummary, EpisodeCounts, ProcessActivity,
    UnclaimedProcess, Warning, WarningKind,
};
pub use task::{ActivityTask, start, stop};
