//! The advice of the node as it stands: the engine's claim records and
//! inventory, the usage history, and what the node offers, handed to
//! [`super::node::node_advice`], and the node's GPUs handed with that
//! advice to [`super::whatif::what_if`]. The one place the API and the
//! metrics get advice from.

use super::keeper::SharedHistory;
use super::node::{ClaimAdvice, node_advice};
use super::offer::{NodeOffer, Usable, in_mig_mode, node_offer};
use super::rule::RuleSettings;
use super::whatif::{GpuState, WhatIf, what_if};
use crate::claims::Engine;
use crate::config::AdviceConfig;
use crate::gpu::Placement;
use crate::inventory::Inventory;
use crate::state::ClaimRecord;

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

/// The node's advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeAdvice {
    /// Every prepared claim's, by uid.
    pub claims: Vec<ClaimAdvice>,
    /// What accepting all of it would do.
    pub what_if: WhatIf,
}

/// The node's advice now (the history locked meanwhile).
pub fn advice_now(
    engine: &Engine,
    history: &SharedHistory,
    settings: AdviceSettings,
) -> NodeAdvice {
    let inventory = engine.inventory();
    let records = engine.claims();
    let offer = node_offer(&inventory, settings.usable);
    let claims = {
        let history = history.lock();
        node_advice(&records, &inventory, &history, &offer, settings.rule)
    };
    let gpus = gpu_states(&inventory, &records, &offer);
    NodeAdvice {
        what_if: what_if(&gpus, &claims),
        claims,
    }
}

/// Each GPU of `inventory` as the what-if sees it: its model's profile
/// table, its mode, the slices `records` hold on it.
pub fn gpu_states(
    inventory: &Inventory,
    records: &[ClaimRecord],
    _offer: &NodeOffer,
) -> Vec<GpuState> {
    inventory
        .gpus
        .iter()
        .map(|gpu| GpuState {
            name: gpu.name.clone(),
            product_name: gpu.info.product_name.clone(),
            memory_bytes: gpu.info.memory_bytes,
            profiles: gpu.model_profiles.clone(),
            mig_mode: in_mig_mode(gpu),
            held_slices: records
                .iter()
                .flat_map(|r| r.devices.iter().map(move |d| (r, d)))
                .filter(|(_, d)| d.uuid == gpu.info.uuid)
                .filter_map(|(r, d)| {
                    let slice = d.mig.as_ref()?;
                    let placement = Placement {
                        start: slice.start,
                        size: slice.size,
                    };
                    Some((r.uid.clone(), slice.profile_id, placement))
                })
                .collect(),
        })
        .collect()
}
