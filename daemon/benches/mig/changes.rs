//! The geometry-change half of the bench: seeded (current, target) layouts,
//! `diff` op counts against the lower bound and teardown-and-rebuild.

use std::collections::HashSet;

use gpuslice::gpu::sim::SimModel;
use gpuslice::mig::{
    ForeignPolicy, Occupancy, Occupant, Ownership, TargetInstance, diff, legal_placements,
    plan_layout,
};

use super::{Rng, SEED, geometry, ratio};

/// Adds up to `attempts` random legal instances to `layout`.
fn fill(
    layout: &mut Occupancy<'_>,
    rng: &mut Rng,
    attempts: u64,
    held_one_in: u64,
    next_id: &mut u32,
) {
    let g = layout.geometry();
    for _ in 0..rng.below(attempts + 1) {
        let profile = &g.profiles()[rng.index(g.profiles().len())];
        let legal = legal_placements(layout, &profile.name).unwrap_or_default();
        if legal.is_empty() {
            continue;
        }
        let held = held_one_in > 0 && rng.below(held_one_in) == 0;
        *next_id += 1;
        let occupant = Occupant {
            gi_id: *next_id,
            profile_id: profile.id,
            placement: legal[rng.index(legal.len())],
            ownership: if held {
                Ownership::Held
            } else {
                Ownership::Ours
            },
        };
        let _always_legal = layout.insert(occupant);
    }
}

/// Sums over the pairs of one kind of geometry change.
#[derive(Default)]
struct Totals {
    pairs: usize,
    diff_ops: usize,
    lower_bound: usize,
    teardown_ops: usize,
    at_bound: usize,
    held_teardown_destroys: usize,
}

impl Totals {
    fn print(&self, what: &str) {
        println!(
            "  {what:<34} pairs={} diff ops={} lower bound={} ({} of pairs at it) teardown+rebuild ops={} \
             diff/bound={} diff/teardown={} held instances teardown would destroy={}",
            self.pairs,
            self.diff_ops,
            self.lower_bound,
            ratio(self.at_bound, self.pairs),
            self.teardown_ops,
            ratio(self.diff_ops, self.lower_bound),
            ratio(self.diff_ops, self.teardown_ops),
            self.held_teardown_destroys,
        );
    }

    fn add(&mut self, current: &Occupancy<'_>, target: &[TargetInstance], ops: usize) {
        let now: HashSet<TargetInstance> = current
            .occupants()
            .iter()
            .map(TargetInstance::from)
            .collect();
        let want: HashSet<TargetInstance> = target.iter().copied().collect();
        let bound = now.symmetric_difference(&want).count();
        self.pairs += 1;
        self.diff_ops += ops;
        self.lower_bound += bound;
        self.at_bound += usize::from(ops == bound);
        self.teardown_ops += now.len() + want.len();
        self.held_teardown_destroys += current
            .occupants()
            .iter()
            .filter(|o| o.ownership == Ownership::Held)
            .count();
    }
}

pub(super) fn geometry_changes(model: SimModel, pairs: usize) {
    let g = geometry(model);
    let mut rng = Rng(SEED ^ 0x9e0);
    let (mut placed, mut mixes) = (Totals::default(), Totals::default());
    let mut next_id = 0;
    for _ in 0..pairs {
        let mut current = Occupancy::empty(&g);
        fill(&mut current, &mut rng, 8, 3, &mut next_id);
        let held: Vec<Occupant> = current
            .occupants()
            .iter()
            .filter(|o| o.ownership == Ownership::Held)
            .copied()
            .collect();
        // A target with placements: the held instances plus a random fill.
        let mut target = Occupancy::new(&g, held).unwrap_or_else(|e| panic!("{e}"));
        fill(&mut target, &mut rng, 8, 0, &mut next_id);
        let explicit: Vec<TargetInstance> = target
            .occupants()
            .iter()
            .map(TargetInstance::from)
            .collect();
        if let Ok(plan) = diff(&current, &explicit, ForeignPolicy::Keep) {
            placed.add(&current, &explicit, plan.steps.len());
        }
        // A target as a profile mix (a static layout): plan_layout picks places.
        let names: Vec<&str> = explicit
            .iter()
            .filter_map(|t| g.profile_by_id(t.profile_id).ok().map(|p| p.name.as_str()))
            .collect();
        if let Ok(chosen) = plan_layout(&current, &names, ForeignPolicy::Keep)
            && let Ok(plan) = diff(&current, &chosen, ForeignPolicy::Keep)
        {
            mixes.add(&current, &chosen, plan.steps.len());
        }
    }
    println!("{model}: geometry changes, 1 in 3 current instances held by a claim");
    placed.print("target given with placements:");
    mixes.print("target given as a profile mix:");
}
