//! Geometry diffs: hand-picked cases, then every reachable state of the A30
//! against every other and each H100 state against a deterministic spread of
//! targets, under mixed ownership: the steps replay legally onto the state,
//! reach the target, never touch a held instance, and cost exactly the lower
//! bound (the symmetric difference, less the foreign instances left alone).

use std::collections::HashSet;

use crate::gpu::sim::SimModel;
use crate::mig::{
    ForeignPolicy, GeometryDiff, MigGeometry, MigPlanError, Occupancy, Occupant, Ownership, Step,
    TargetInstance, diff,
};

use super::fixtures::{at, geometry, layout, owned, reachable_states, target};

/// Runs the steps on a copy of `layout`, checking each is legal; the end state.
fn replay(
    layout: &Occupancy<'_>,
    plan: &GeometryDiff,
    policy: ForeignPolicy,
) -> HashSet<TargetInstance> {
    let mut now = layout.clone();
    let mut created = 1000;
    for step in &plan.steps {
        match *step {
            Step::Destroy { gi_id } => {
                let gone = now.remove(gi_id).expect("destroys an existing instance");
                assert_ne!(gone.ownership, Ownership::Held, "destroyed a held instance");
                if policy == ForeignPolicy::Keep {
                    assert_ne!(
                        gone.ownership,
                        Ownership::Foreign,
                        "destroyed a foreign instance"
                    );
                }
            }
            Step::Create {
                profile_id,
                placement,
            } => {
                created += 1;
                let occupant = Occupant {
                    gi_id: created,
                    profile_id,
                    placement,
                    ownership: Ownership::Ours,
                };
                now.insert(occupant).expect("create is legal at its turn");
            }
        }
    }
    now.occupants().iter().map(TargetInstance::from).collect()
}

fn set(items: &[TargetInstance]) -> HashSet<TargetInstance> {
    items.iter().copied().collect()
}

/// Checks one (layout, target, policy) case; returns whether it planned.
fn check(layout: &Occupancy<'_>, target: &[TargetInstance], policy: ForeignPolicy) -> bool {
    let current: HashSet<TargetInstance> = layout
        .occupants()
        .iter()
        .map(TargetInstance::from)
        .collect();
    let wanted = set(target);
    let held_removed = layout
        .occupants()
        .iter()
        .any(|o| o.ownership == Ownership::Held && !wanted.contains(&TargetInstance::from(o)));
    let foreign_left: Vec<Occupant> = layout
        .occupants()
        .iter()
        .filter(|o| o.ownership == Ownership::Foreign && policy == ForeignPolicy::Keep)
        .filter(|o| !wanted.contains(&TargetInstance::from(*o)))
        .copied()
        .collect();
    let mut combined = Occupancy::empty(layout.geometry());
    let fits = target
        .iter()
        .enumerate()
        .map(|(i, t)| Occupant {
            gi_id: u32::try_from(i).expect("small"),
            profile_id: t.profile_id,
            placement: t.placement,
            ownership: Ownership::Ours,
        })
        .chain(foreign_left.iter().copied())
        .all(|o| combined.insert(o).is_ok());
    match diff(layout, target, policy) {
        Ok(plan) => {
            assert!(
                !held_removed && fits,
                "planned a change that removes a held instance or overlaps a foreign one"
            );
            assert_eq!(
                set(&plan
                    .foreign_left
                    .iter()
                    .map(TargetInstance::from)
                    .collect::<Vec<_>>()),
                set(&foreign_left
                    .iter()
                    .map(TargetInstance::from)
                    .collect::<Vec<_>>())
            );
            let mut end_wanted = wanted.clone();
            end_wanted.extend(foreign_left.iter().map(TargetInstance::from));
            assert_eq!(replay(layout, &plan, policy), end_wanted);
            let lower_bound = current.symmetric_difference(&wanted).count() - foreign_left.len();
            assert_eq!(plan.steps.len(), lower_bound, "not minimal");
            true
        }
        Err(MigPlanError::HeldInstanceRemoved { .. }) => {
            assert!(held_removed, "refused although no held instance leaves");
            false
        }
        Err(MigPlanError::ForeignInstanceInTheWay { .. }) => {
            assert!(
                !held_removed && !fits,
                "refused although the foreign instances fit"
            );
            false
        }
        Err(other) => panic!("unexpected diff error: {other}"),
    }
}

/// Instance i of state number `seed`: held, ours or foreign, varied.
fn mixed(seed: usize) -> impl Fn(usize) -> Ownership {
    move |i| match (seed + i) % 3 {
        0 => Ownership::Held,
        1 => Ownership::Ours,
        _ => Ownership::Foreign,
    }
}

/// The held instances of `layout` plus as much of `other` as fits beside them:
/// a target a caller could legally ask for.
fn keeping_held(layout: &Occupancy<'_>, other: &[TargetInstance]) -> Vec<TargetInstance> {
    let held: Vec<Occupant> = layout
        .occupants()
        .iter()
        .filter(|o| o.ownership == Ownership::Held)
        .copied()
        .collect();
    let mut t = Occupancy::new(layout.geometry(), held).expect("legal");
    for (i, item) in other.iter().enumerate() {
        let occupant = Occupant {
            gi_id: 500 + u32::try_from(i).expect("small"),
            profile_id: item.profile_id,
            placement: item.placement,
            ownership: Ownership::Ours,
        };
        if !t
            .occupants()
            .iter()
            .any(|o| o.placement == item.placement && o.profile_id == item.profile_id)
        {
            let _fits_or_skipped = t.insert(occupant);
        }
    }
    t.occupants().iter().map(TargetInstance::from).collect()
}

fn sweep(g: &MigGeometry, targets_per_state: usize) -> (usize, usize) {
    let states = reachable_states(g);
    let n = states.len();
    let step = (n / targets_per_state).max(1);
    let (mut planned, mut refused) = (0, 0);
    for (i, state) in states.iter().enumerate() {
        let all_ours = owned(g, state, |_| Ownership::Ours);
        let mixed_owners = owned(g, state, mixed(i));
        for k in 0..targets_per_state.min(n) {
            let other = &states[(i * 7 + k * step) % n];
            assert!(check(&all_ours, other, ForeignPolicy::Keep));
            let kept = keeping_held(&mixed_owners, other);
            for policy in [ForeignPolicy::Keep, ForeignPolicy::Destroy] {
                for t in [other.as_slice(), kept.as_slice()] {
                    if check(&mixed_owners, t, policy) {
                        planned += 1
                    } else {
                        refused += 1
                    }
                }
            }
        }
    }
    (planned, refused)
}

#[test]
fn every_a30_state_against_every_other_diffs_minimally() {
    let (planned, refused) = sweep(&geometry(SimModel::A30_24GB), usize::MAX);
    println!("planned {planned}, refused {refused}");
    assert!(
        planned > 1000 && refused > 1000,
        "planned {planned}, refused {refused}"
    );
}

#[test]
fn every_h100_state_against_a_spread_of_targets_diffs_minimally() {
    let (planned, refused) = sweep(&geometry(SimModel::H100_80GB), 3);
    println!("planned {planned}, refused {refused}");
    assert!(
        planned > 10_000 && refused > 1000,
        "planned {planned}, refused {refused}"
    );
}

/// The 4-slice Blackwell, with its graphics and media variants (a +me.all
/// beside -me slices only): every state against a spread of targets.
#[test]
fn every_rtx_pro_6000_state_against_a_spread_of_targets_diffs_minimally() {
    let (planned, refused) = sweep(&geometry(SimModel::RTX_PRO_6000_96GB), 3);
    println!("planned {planned}, refused {refused}");
    assert!(
        planned > 1000 && refused > 100,
        "planned {planned}, refused {refused}"
    );
}

#[test]
fn matching_instances_stay_and_destroys_come_first() {
    let g = geometry(SimModel::H100_80GB);
    let l = layout(
        &g,
        &[("3g.40gb", 0), ("1g.10gb", 4), ("1g.10gb", 5)],
        Ownership::Ours,
    );
    let t = [target(&g, "3g.40gb", 0), target(&g, "3g.40gb", 4)];
    let plan = diff(&l, &t, ForeignPolicy::Keep).unwrap();
    let id = g.profile("3g.40gb").unwrap().id;
    assert_eq!(
        plan.steps,
        vec![
            Step::Destroy { gi_id: 2 },
            Step::Destroy { gi_id: 3 },
            Step::Create {
                profile_id: id,
                placement: at(4, 4)
            }
        ]
    );
}

#[test]
fn a_target_without_a_held_instance_names_it() {
    let g = geometry(SimModel::H100_80GB);
    let l = layout(&g, &[("1g.10gb", 0)], Ownership::Held);
    let err = diff(&l, &[target(&g, "7g.80gb", 0)], ForeignPolicy::Destroy).unwrap_err();
    assert!(
        err.to_string()
            .contains("1g.10gb at 0:1 (gi 1, held by a claim)"),
        "{err}"
    );
}

#[test]
fn foreign_instances_are_left_and_reported_unless_destroy_is_allowed() {
    let g = geometry(SimModel::H100_80GB);
    let l = layout(&g, &[("1g.10gb", 6)], Ownership::Foreign);
    let plan = diff(&l, &[target(&g, "3g.40gb", 0)], ForeignPolicy::Keep).unwrap();
    assert_eq!(plan.foreign_left, l.occupants().to_vec());
    assert_eq!(plan.steps.len(), 1);
    let seven = [target(&g, "7g.80gb", 0)];
    assert!(matches!(
        diff(&l, &seven, ForeignPolicy::Keep).unwrap_err(),
        MigPlanError::ForeignInstanceInTheWay { instance } if instance.contains("foreign")
    ));
    let plan = diff(&l, &seven, ForeignPolicy::Destroy).unwrap();
    assert_eq!(plan.steps[0], Step::Destroy { gi_id: 1 });
}

#[test]
fn invalid_targets_are_refused_with_the_rule_they_break() {
    let g = geometry(SimModel::H100_80GB);
    let empty = Occupancy::empty(&g);
    let overlap = [target(&g, "3g.40gb", 0), target(&g, "1g.10gb", 3)];
    assert!(matches!(
        diff(&empty, &overlap, ForeignPolicy::Keep),
        Err(MigPlanError::Overlap { .. })
    ));
    let id = g.profile("3g.40gb").unwrap().id;
    let misplaced = [TargetInstance {
        profile_id: id,
        placement: at(2, 4),
    }];
    assert!(matches!(
        diff(&empty, &misplaced, ForeignPolicy::Keep),
        Err(MigPlanError::PlacementNotAllowed { allowed, .. }) if allowed == "0:4, 4:4"
    ));
    let unknown = [TargetInstance {
        profile_id: 77,
        placement: at(0, 1),
    }];
    assert!(matches!(
        diff(&empty, &unknown, ForeignPolicy::Keep),
        Err(MigPlanError::UnknownProfileId { id: 77, .. })
    ));
}
