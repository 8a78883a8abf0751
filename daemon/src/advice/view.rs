//! The advice of the node as it stands: the engine's claim records and
//! inventory, the usage history, and what the node offers, handed to
//! [`super::node::node_advice`]. The one place the API and the metrics get
//! advice from.

use super::keeper::SharedHistory;
use super::node::{ClaimAdvice, node_advice};
use super::offer::{Usable, node_offer};
use super::rule::RuleSettings;
use crate::claims::Engine;
use crate::config::AdviceConfig;

/// What the advice needs besides the engine and the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdviceSettings {
    /// `[advice]`.
    pub rule: RuleSettings,
    /// The sharing tools the node can run.
    pub usable: Usable,
}

impl Default for AdviceSettings {
    /// `[advice]`'s defaults, no sharing tools.
    fn default() -> Self {
        Self::new(&AdviceConfig::default(), Usable::default())
    }
}

impl AdviceSettings {
    /// From `[advice]` and the tools found.
    pub fn new(config: &AdviceConfig, usable: Usable) -> Self {
        Self {
            rule: RuleSettings {
                min_observed_s: config.min_observed_s,
                headroom_percent: config.headroom_percent,
            },
            usable,
        }
    }
}

/// Every prepared claim's advice now (the history locked meanwhile).
pub fn advice_now(
    engine: &Engine,
    history: &SharedHistory,
    settings: AdviceSettings,
) -> Vec<ClaimAdvice> {
    let inventory = engine.inventory();
    let records = engine.claims();
    let offer = node_offer(&inventory, settings.usable);
    let history = history.lock();
    node_advice(&records, &inventory, &history, &offer, settings.rule)
}
