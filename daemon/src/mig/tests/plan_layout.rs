//! Static layouts: a balanced mix fits where it can, impossible mixes say so,
//! held instances stay, idle ones are reused, and for every reachable state
//! the layout of its own profiles is found from scratch and costs no step
//! from the state itself.

use std::collections::HashSet;

use crate::gpu::sim::SimModel;
use crate::mig::{
    ForeignPolicy, MigPlanError, Occupancy, Ownership, TargetInstance, diff, plan_layout,
};

use super::fixtures::{geometry, layout, owned, reachable_states, target};

fn names<'g>(g: &'g crate::mig::MigGeometry, state: &[TargetInstance]) -> Vec<&'g str> {
    state
        .iter()
        .map(|t| g.profile_by_id(t.profile_id).expect("known").name.as_str())
        .collect()
}

#[test]
fn mig_parted_all_balanced_fits_an_a100_and_leaves_the_3g_home_whole() {
    let g = geometry(SimModel::A100_40GB);
    let wanted = ["1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"];
    let t = plan_layout(&Occupancy::empty(&g), &wanted, ForeignPolicy::Keep).unwrap();
    let got: HashSet<TargetInstance> = t.iter().copied().collect();
    let expect: HashSet<TargetInstance> = [
        target(&g, "3g.20gb", 4),
        target(&g, "2g.10gb", 0),
        target(&g, "1g.5gb", 2),
        target(&g, "1g.5gb", 3),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, expect);
}

#[test]
fn a_mix_that_needs_a_2g_at_6_is_impossible() {
    // 4 + 2 + 2 memory slices fill the GPU only with a 2g at 6:2, which no table allows.
    let g = geometry(SimModel::H100_80GB);
    let wanted = ["4g.40gb", "2g.20gb", "2g.20gb"];
    let err = plan_layout(&Occupancy::empty(&g), &wanted, ForeignPolicy::Keep).unwrap_err();
    assert!(
        matches!(err, MigPlanError::LayoutImpossible { .. }),
        "{err}"
    );
}

#[test]
fn held_instances_stay_and_idle_ones_are_reused_where_they_sit() {
    let g = geometry(SimModel::H100_80GB);
    let mut l = layout(&g, &[("3g.40gb", 0), ("1g.10gb", 4)], Ownership::Ours);
    let t = plan_layout(&l, &["3g.40gb", "2g.20gb"], ForeignPolicy::Keep).unwrap();
    assert!(
        t.contains(&target(&g, "3g.40gb", 0)),
        "idle 3g reused in place"
    );
    assert_eq!(diff(&l, &t, ForeignPolicy::Keep).unwrap().steps.len(), 2);

    let t = plan_layout(&l, &["4g.40gb", "3g.40gb"], ForeignPolicy::Keep).unwrap();
    assert_eq!(t.len(), 2, "the idle 3g moves to make room for the 4g");

    l = layout(&g, &[("3g.40gb", 0)], Ownership::Held);
    let err = plan_layout(&l, &["4g.40gb", "3g.40gb"], ForeignPolicy::Keep).unwrap_err();
    assert!(matches!(err, MigPlanError::LayoutImpossible { fixed, .. } if fixed.contains("held")));
    let err = plan_layout(&l, &["7g.80gb"], ForeignPolicy::Keep).unwrap_err();
    assert!(
        matches!(err, MigPlanError::HeldInstanceRemoved { .. }),
        "{err}"
    );
}

#[test]
fn foreign_instances_are_obstacles_unless_destroy_is_allowed() {
    let g = geometry(SimModel::H100_80GB);
    let l = layout(&g, &[("1g.10gb", 0)], Ownership::Foreign);
    let blocked = plan_layout(&l, &["4g.40gb", "3g.40gb"], ForeignPolicy::Keep).unwrap_err();
    assert!(
        matches!(blocked, MigPlanError::LayoutImpossible { .. }),
        "{blocked}"
    );
    let t = plan_layout(&l, &["4g.40gb", "3g.40gb"], ForeignPolicy::Destroy).unwrap();
    assert_eq!(diff(&l, &t, ForeignPolicy::Destroy).unwrap().steps.len(), 3);
}

#[test]
fn every_reachable_layout_is_found_from_scratch_and_kept_in_place() {
    for model in SimModel::with_mig() {
        let g = geometry(model);
        let states = reachable_states(&g);
        for (i, state) in states.iter().enumerate() {
            let wanted = names(&g, state);
            let fresh = plan_layout(&Occupancy::empty(&g), &wanted, ForeignPolicy::Keep);
            assert_eq!(
                fresh.map(|t| t.len()),
                Ok(state.len()),
                "{model}: {wanted:?}"
            );
            let here = owned(&g, state, |_| Ownership::Ours);
            let kept = plan_layout(&here, &wanted, ForeignPolicy::Keep).unwrap();
            assert!(
                diff(&here, &kept, ForeignPolicy::Keep)
                    .unwrap()
                    .steps
                    .is_empty()
            );
            // Reshaping to another state's mix costs no more than that state.
            let other = &states[(i * 31 + 7) % states.len()];
            let planned = plan_layout(&here, &names(&g, other), ForeignPolicy::Keep).unwrap();
            let ops = diff(&here, &planned, ForeignPolicy::Keep)
                .unwrap()
                .steps
                .len();
            let direct = diff(&here, other, ForeignPolicy::Keep).unwrap().steps.len();
            assert!(
                ops <= direct,
                "{model}: {ops} steps where {direct} would do"
            );
        }
    }
}
