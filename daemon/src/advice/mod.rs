//! Right-sizing advice: per claim and device, the smallest form on this node
//! that the claim's observed use fits with headroom (a MIG profile of its
//! GPU's model, an MPS share, a time-slice), "give it back" when it was never
//! active, or no advice while too little was seen.
//!
//! Reading order: [`history`] (the per-claim record: decaying histograms in
//! [`history::histogram`], the file in [`history::file`]), then [`rule`]
//! (the choice, pure), [`offer`] (what the node offers per GPU model,
//! pure); [`keeper`] (the history while the daemon runs:
//! loaded, fed by the activity sampler, saved).
//!
//! Owns the history and the rule; does not sample (the activity sampler
//! feeds [`keeper::HistoryKeeper::record`] with [`history::ClaimFigures`]
//! after each sample), and does not serve (the API, metrics and gpuslicectl
//! read [`rule::advise`]'s answer). Only [`history::file`] and [`keeper`]
//! do I/O.

pub mod history;
pub mod keeper;
pub mod node;
pub mod offer;
pub mod rule;
pub mod view;
pub mod whatif;

pub use history::{ClaimFigures, DeviceFigures, History, HistorySettings};
pub use rule::{Advice, CurrentForm, Form, GpuModel, Need, Offer, RuleSettings, advise};
