//! Whole-GPU layouts: placements for a wanted multiset of profiles (a static
//! layout from the config, or a benchmark's pre-partitioned GPU), on an empty
//! or partly filled GPU. Held instances stay where they are and count toward
//! what is wanted; foreign instances are obstacles (or reusable under
//! [`ForeignPolicy::Destroy`]); gpuslice's idle instances are reused where
//! they already sit if that still lets everything fit. Exhaustive search over
//! placements (a GPU has at most eight memory slices, so it is small): the
//! most instances reused first (the fewest hardware steps for [`super::diff`]),
//! then the best [`super::Score`] for what is left free. No I/O.

use std::collections::HashSet;

use crate::gpu::Placement;

use super::capacity::Score;
use super::diff::{ForeignPolicy, TargetInstance};
use super::error::MigPlanError;
use super::geometry::MigGeometry;
use super::occupancy::{Occupancy, Ownership, Usage};

/// A target layout holding exactly `wanted` (profile names, repeats allowed)
/// plus, under [`ForeignPolicy::Keep`], nothing else: foreign instances stay
/// and are not part of it. Feed the result to [`super::diff`].
pub fn plan_layout(
    occupancy: &Occupancy<'_>,
    wanted: &[&str],
    foreign: ForeignPolicy,
) -> Result<Vec<TargetInstance>, MigPlanError> {
    let geometry = occupancy.geometry();
    let mut still_wanted = Vec::new();
    for name in wanted {
        still_wanted.push(geometry.position(name)?);
    }
    let mut fixed = Vec::new();
    let mut usage = Usage::EMPTY;
    let mut held_unwanted = Vec::new();
    let mut reusable = HashSet::new();
    for occupant in occupancy.occupants() {
        let position = geometry.position_by_id(occupant.profile_id)?;
        let mask = geometry.mask_of(position, occupant.placement)?;
        match occupant.ownership {
            Ownership::Held => match still_wanted.iter().position(|&p| p == position) {
                Some(i) => {
                    still_wanted.swap_remove(i);
                    fixed.push(TargetInstance::from(occupant));
                    usage = usage.with(geometry, position, mask);
                }
                None => held_unwanted.push(occupancy.describe(occupant)),
            },
            Ownership::Foreign if foreign == ForeignPolicy::Keep => {
                usage = usage.with(geometry, position, mask);
            }
            Ownership::Foreign | Ownership::Ours => {
                reusable.insert((position, occupant.placement));
            }
        }
    }
    if !held_unwanted.is_empty() {
        return Err(MigPlanError::HeldInstanceRemoved {
            instances: held_unwanted.join(", "),
        });
    }
    let rank = |p: &usize| geometry.priority().iter().position(|q| q == p);
    still_wanted.sort_by_key(rank);
    let mut search = Search {
        geometry,
        items: &still_wanted,
        reusable: &reusable,
        chosen: Vec::new(),
        best: None,
    };
    search.run(0, usage, 0, 0);
    let Some(best) = search.best else {
        let names: Vec<&str> = still_wanted
            .iter()
            .map(|&p| geometry.profiles()[p].name.as_str())
            .collect();
        return Err(MigPlanError::LayoutImpossible {
            wanted: names.join(", "),
            fixed: fixed_instances(occupancy),
        });
    };
    fixed.extend(
        best.chosen
            .iter()
            .map(|&(position, placement)| TargetInstance {
                profile_id: geometry.profiles()[position].id,
                placement,
            }),
    );
    Ok(fixed)
}

fn fixed_instances(occupancy: &Occupancy<'_>) -> String {
    let fixed: Vec<String> = occupancy
        .occupants()
        .iter()
        .filter(|o| o.ownership != Ownership::Ours)
        .map(|o| occupancy.describe(o))
        .collect();
    if fixed.is_empty() {
        "no fixed instances".to_owned()
    } else {
        fixed.join(", ")
    }
}

/// The best complete assignment found so far.
struct Best {
    reused: usize,
    score: Score,
    chosen: Vec<(usize, Placement)>,
}

/// Depth-first search over placements of `items` (largest profile first).
struct Search<'a> {
    geometry: &'a MigGeometry,
    items: &'a [usize],
    reusable: &'a HashSet<(usize, Placement)>,
    chosen: Vec<(usize, Placement)>,
    best: Option<Best>,
}

impl Search<'_> {
    /// Places item `next` and the rest. `min_mask_index`: repeats of one
    /// profile take placements in ascending table order (no permutations).
    fn run(&mut self, next: usize, usage: Usage, reused: usize, min_mask_index: usize) {
        let left = self.items.len() - next;
        if self.best.as_ref().is_some_and(|b| reused + left < b.reused) {
            return;
        }
        let Some(&position) = self.items.get(next) else {
            self.offer(&usage, reused);
            return;
        };
        let masks = &self.geometry.row(position).masks;
        for (index, &(placement, mask)) in masks.iter().enumerate().skip(min_mask_index) {
            if !usage.admits(self.geometry, position, mask) {
                continue;
            }
            let reuse = usize::from(self.reusable.contains(&(position, placement)));
            let repeat_next = self.items.get(next + 1) == Some(&position);
            let next_min = if repeat_next { index + 1 } else { 0 };
            self.chosen.push((position, placement));
            self.run(
                next + 1,
                usage.with(self.geometry, position, mask),
                reused + reuse,
                next_min,
            );
            self.chosen.pop();
        }
    }

    fn offer(&mut self, usage: &Usage, reused: usize) {
        let score = Score::of(self.geometry, usage);
        let better = self
            .best
            .as_ref()
            .is_none_or(|b| (reused, score) > (b.reused, b.score));
        if better {
            self.best = Some(Best {
                reused,
                score,
                chosen: self.chosen.clone(),
            });
        }
    }
}
