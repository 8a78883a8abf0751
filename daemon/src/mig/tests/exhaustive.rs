//! Placement over every reachable state of every modelled GPU (the 8-slice
//! A100, H100, H100 NVL and H200, and the 4-slice A30), for every profile:
//! the choice is legal, exists iff some legal placement does, has the best
//! score any legal placement reaches (so never worse than first-fit), and the
//! error says the right reason. Deterministic: states are enumerated, not drawn.

use crate::gpu::sim::SimModel;
use crate::gpu::{MediaEngines, Placement};
use crate::mig::{
    MigGeometry, MigPlanError, Occupancy, Occupant, Ownership, Score, choose_placement, first_fit,
};

use super::fixtures::{geometry, owned, reachable_states};

/// The layout after adding `profile` at `placement`, if NVML would allow it.
fn after<'g>(
    layout: &Occupancy<'g>,
    profile_id: u32,
    placement: Placement,
) -> Option<Occupancy<'g>> {
    let mut next = layout.clone();
    let occupant = Occupant {
        gi_id: 999,
        profile_id,
        placement,
        ownership: Ownership::Held,
    };
    next.insert(occupant).ok().map(|()| next)
}

fn check_state(g: &MigGeometry, layout: &Occupancy<'_>) {
    for profile in g.profiles() {
        let legal: Vec<(Placement, Score)> = profile
            .placements
            .iter()
            .filter_map(|&p| after(layout, profile.id, p).map(|l| (p, l.score())))
            .collect();
        let chosen = choose_placement(layout, &profile.name);
        let first = first_fit(layout, &profile.name);
        let Some(best) = legal.iter().map(|(_, s)| *s).max() else {
            let err = chosen.expect_err("no legal placement, yet one was chosen");
            assert_eq!(first.expect_err("first-fit found one"), err);
            check_refusal(g, layout, &profile.name, &err);
            continue;
        };
        let chosen = chosen.expect("a legal placement exists");
        let chosen_score = legal.iter().find(|(p, _)| *p == chosen).map(|(_, s)| *s);
        assert_eq!(
            chosen_score,
            Some(best),
            "{}: not the best legal placement",
            profile.name
        );
        let first = first.expect("a legal placement exists");
        assert_eq!(
            Some(first),
            legal.iter().map(|(p, _)| *p).min_by_key(|p| p.start)
        );
        let first_score = legal.iter().find(|(p, _)| *p == first).map(|(_, s)| *s);
        assert!(chosen_score >= first_score, "worse than first-fit");
    }
}

/// The error names the real reason, checked from the occupants themselves.
fn check_refusal(g: &MigGeometry, layout: &Occupancy<'_>, name: &str, err: &MigPlanError) {
    let profile = g.profile(name).expect("known");
    let media_of = |want: MediaEngines| {
        layout.occupants().iter().any(|o| {
            g.profile_by_id(o.profile_id)
                .is_ok_and(|p| p.media() == want)
        })
    };
    let media_held = layout.occupants().iter().any(|o| {
        g.profile_by_id(o.profile_id)
            .is_ok_and(|p| p.media() != MediaEngines::None)
    });
    let count = layout
        .occupants()
        .iter()
        .filter(|o| o.profile_id == profile.id)
        .count();
    match err {
        MigPlanError::MediaExtensionsInUse { .. } => {
            assert!(profile.media_extensions() && media_of(MediaEngines::Extensions));
        }
        MigPlanError::AllMediaEnginesTaken { .. } => {
            assert!(profile.media() != MediaEngines::None && media_of(MediaEngines::All));
        }
        MigPlanError::MediaEnginesInUse { .. } => {
            assert!(profile.media() == MediaEngines::All && media_held);
        }
        MigPlanError::MaxCountReached { .. } => {
            assert_eq!(u32::try_from(count).expect("small"), profile.max_count);
        }
        MigPlanError::NoRoom { .. } => {}
        other => panic!("unexpected refusal {other}"),
    }
}

#[test]
fn every_reachable_state_of_every_model_places_legally_and_optimally() {
    for model in SimModel::with_mig() {
        let g = geometry(model);
        let states = reachable_states(&g);
        println!("{model}: {} reachable states", states.len());
        assert!(states.len() > 50, "{model}: only {} states", states.len());
        for state in &states {
            check_state(&g, &owned(&g, state, |_| Ownership::Held));
        }
    }
}

#[test]
fn reachable_state_counts_match_a_hand_count() {
    // A30, per half (slices 0-1 and 2-3) without "+me": empty, 1g at either
    // slice, both, or a 2g = 5; with the GPU's one "+me" in that half: 1g+me
    // alone at either slice, with a 1g beside it (2 ways), or 2g+me = 5.
    // 5 x 5 + 2 halves x 5 x 5 + the 4g alone = 76.
    assert_eq!(reachable_states(&geometry(SimModel::A30_24GB)).len(), 76);
    // RTX PRO 6000, per half: a 2g, 2g+gfx or 2g-me (3) or two slots of
    // nothing, 1g, 1g+gfx or 1g-me (16) without "+me"; with it, 1g+me at
    // either slot beside one of those 4 (8). Two halves with at most one
    // "+me": 19 x 19 + 2 x 8 x 19 = 665. With one "+me.all" (only "-me"
    // beside it; the other half: nothing, a 2g-me or slots of nothing or
    // 1g-me, 5 ways): 2g+me.all at 0 or 2, 2 x 5; 1g+me.all at any of 4
    // slots, its neighbour nothing or 1g-me, 4 x 2 x 5; 50. Plus 4g and
    // 4g+gfx alone: 665 + 50 + 2 = 717.
    assert_eq!(
        reachable_states(&geometry(SimModel::RTX_PRO_6000_96GB)).len(),
        717
    );
    // The 8-slice models share one placement table, hence one count.
    for model in SimModel::with_mig().filter(|m| m.spec().memory_slices == 8) {
        assert_eq!(reachable_states(&geometry(model)).len(), 2319, "{model}");
    }
}
