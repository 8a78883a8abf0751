//! What the node's MIG slices are doing, for the metrics: held by a claim,
//! free to make, made ahead, or foreign.
//!
//! Taken in two steps, like every engine read that touches hardware: the
//! table lock is held only to copy what the claims hold, never across the
//! backend's `gpu_instances` calls that follow. A GPU whose instances cannot
//! be listed contributes its held slices only (logged at debug: a scrape
//! every 15 s must not flood the journal; the engine's own paths report it).
//! A slice that a prepare in flight has just made, before its claim enters
//! the table, shows as foreign for that one snapshot.

use std::collections::HashSet;

use super::{Mig, slice_placement};
use crate::claims::access::Cx;
use crate::claims::lock;
use crate::claims::table::Share;
use crate::gpu::{GpuInstance, Placement};
use crate::inventory::{GpuMig, Inventory};

/// What a MIG slice is doing. Its text is the metric label: "held", "free",
/// "made_ahead", "foreign".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[derive(strum::Display, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum SliceState {
    /// A claim holds it.
    Held,
    /// Offered and placeable now, not made yet (made at prepare). In
    /// partitionable mode these overlap: each is one placement still open.
    Free,
    /// Made ahead from the layout (`create = "ahead"`), idle, ready to hand out.
    MadeAhead,
    /// A GPU instance gpusliced did not make and no claim holds.
    Foreign,
}

/// One MIG slice of the node.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SliceUse {
    /// The parent GPU's inventory name, "gpu-0".
    pub gpu: String,
    /// The profile, "3g.40gb".
    pub profile: String,
    /// What it is doing.
    pub state: SliceState,
}

/// An advertised slice no claim blocks: (parent GPU uuid, profile, placement).
type Open = (String, String, Placement);

impl Mig {
    /// Every MIG slice of the node's GPUs in MIG mode, sorted.
    pub(in crate::claims) fn slice_uses(
        &self,
        cx: &Cx<'_>,
        inventory: &Inventory,
    ) -> Vec<SliceUse> {
        let (mut slices, held, open) = {
            let table = lock(cx.table);
            let mut held_slices = Vec::new();
            let mut held = HashSet::new();
            for device in table.iter().flat_map(|r| &r.devices) {
                let (Some(slice), Some(gpu)) = (&device.mig, inventory.gpu_by_uuid(&device.uuid))
                else {
                    continue;
                };
                held.insert((device.uuid.clone(), slice_placement(slice)));
                held_slices.push(SliceUse {
                    gpu: gpu.name.clone(),
                    profile: slice.profile.clone(),
                    state: SliceState::Held,
                });
            }
            let open: Vec<Open> = inventory
                .mig
                .iter()
                .filter_map(|m| {
                    let uuid = &inventory.gpus.get(m.parent)?.info.uuid;
                    let share = Share::Slice(m.placement);
                    table
                        .blockers(uuid, share)
                        .is_empty()
                        .then(|| (uuid.clone(), m.profile.name.clone(), m.placement))
                })
                .collect();
            (held_slices, held, open)
        };
        let ledger = self.made_ahead(cx);
        for gpu in &inventory.gpus {
            let Some(gpu_mig) = &gpu.mig else { continue };
            let instances = match cx.env.backend.gpu_instances(gpu.info.index) {
                Ok(list) => list,
                Err(err) => {
                    tracing::debug!(gpu = %gpu.name, error = %err, "metrics: cannot list MIG instances");
                    continue;
                }
            };
            let uuid = gpu.info.uuid.as_str();
            let held_here: HashSet<Placement> = held
                .iter()
                .filter(|(u, _)| u == uuid)
                .map(|(_, p)| *p)
                .collect();
            let open_here: Vec<(&str, Placement)> = open
                .iter()
                .filter(|(u, _, _)| u == uuid)
                .map(|(_, name, p)| (name.as_str(), *p))
                .collect();
            let ahead = |gi: &GpuInstance| ledger.iter().any(|m| m.is(uuid, gi));
            slices.extend(unheld_slices(
                &gpu.name, gpu_mig, &instances, &held_here, &ahead, &open_here,
            ));
        }
        slices.sort();
        slices
    }
}

/// The slices of one GPU that no claim holds: instances that exist (made
/// ahead or foreign), and offered placements that are free to make now
/// (no instance there or overlapping). Pure.
pub(in crate::claims) fn unheld_slices(
    gpu: &str,
    mig: &GpuMig,
    instances: &[GpuInstance],
    held: &HashSet<Placement>,
    made_ahead: &dyn Fn(&GpuInstance) -> bool,
    open: &[(&str, Placement)],
) -> Vec<SliceUse> {
    let slice = |profile: &str, state| SliceUse {
        gpu: gpu.to_owned(),
        profile: profile.to_owned(),
        state,
    };
    let idle = instances
        .iter()
        .filter(|gi| !held.contains(&gi.placement))
        .map(|gi| {
            let profile = mig.profile_by_id(gi.profile_id).map_or_else(
                || format!("profile-id-{}", gi.profile_id),
                |p| p.name.clone(),
            );
            let state = if made_ahead(gi) {
                SliceState::MadeAhead
            } else {
                SliceState::Foreign
            };
            slice(&profile, state)
        });
    let free = open
        .iter()
        .filter(|(_, p)| !instances.iter().any(|gi| gi.placement.overlaps(*p)))
        .map(|(profile, _)| slice(profile, SliceState::Free));
    idle.chain(free).collect()
}
