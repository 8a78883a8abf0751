//! Per-claim GPU use: which process on which GPU or MIG slice belongs to
//! which claim, what it uses, which claims sit idle, and which overrun their
//! share or run without a claim.
//!
//! Reading order: [`snapshot`] (what a sample publishes; plain data).
//! The sampler, the attribution and the episode rules follow in this room.

pub mod handle;
pub mod snapshot;

pub use handle::ActivityHandle;
pub use snapshot::{
    ActivitySnapshot, ClaimActivity, DeviceActivity, EpisodeCounts, ProcessActivity,
    UnclaimedProcess, Warning, WarningKind,
};
