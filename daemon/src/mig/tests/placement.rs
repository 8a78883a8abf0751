//! Hand-picked placement cases: the fragmentation case, the driver's
//! own habits, every error, and why the planner beats first-fit.

use crate::gpu::sim::SimModel;
use crate::mig::{
    MigPlanError, Occupancy, Occupant, Ownership, choose_gpu, choose_placement, first_fit,
};

use super::fixtures::{at, geometry, layout};

/// Runs `requests` through `pick`, inserting each placement; how many fit.
fn accepted(
    mut layout: Occupancy<'_>,
    requests: &[&str],
    pick: fn(&Occupancy<'_>, &str) -> Result<crate::gpu::Placement, MigPlanError>,
) -> usize {
    let mut count = 0;
    for (name, gi_id) in requests.iter().zip(50..) {
        if let Ok(placement) = pick(&layout, name) {
            let profile_id = layout.geometry().profile(name).expect("known").id;
            let occupant = Occupant {
                gi_id,
                profile_id,
                placement,
                ownership: Ownership::Held,
            };
            layout.insert(occupant).expect("chosen placement is legal");
            count += 1;
        }
    }
    count
}

#[test]
fn a_1g_next_to_a_1g_at_0_never_takes_slice_4_while_a_3g_fits_there() {
    let g = geometry(SimModel::H100_80GB);
    for (taken, forbidden) in [(0, 4), (4, 0)] {
        let mut l = layout(&g, &[("1g.10gb", taken)], Ownership::Foreign);
        let chosen = choose_placement(&l, "1g.10gb").unwrap();
        assert_ne!(
            chosen.start, forbidden,
            "1g at {taken}: the next 1g broke the other half"
        );
        let id = g.profile("1g.10gb").unwrap().id;
        l.insert(Occupant {
            gi_id: 9,
            profile_id: id,
            placement: chosen,
            ownership: Ownership::Held,
        })
        .unwrap();
        assert!(
            choose_placement(&l, "3g.40gb").is_ok(),
            "a 3g must still fit"
        );
    }
}

#[test]
fn on_an_empty_gpu_small_profiles_pack_down_from_the_top() {
    let g = geometry(SimModel::H100_80GB);
    let empty = Occupancy::empty(&g);
    let expect = [
        ("1g.10gb", 6),
        ("1g.10gb+me", 6),
        ("1g.20gb", 6),
        ("2g.20gb", 4),
        ("3g.40gb", 4),
        ("4g.40gb", 0),
        ("7g.80gb", 0),
    ];
    for (name, start) in expect {
        assert_eq!(
            choose_placement(&empty, name).unwrap().start,
            start,
            "{name}"
        );
    }
    let a30 = geometry(SimModel::A30_24GB);
    let empty = Occupancy::empty(&a30);
    assert_eq!(choose_placement(&empty, "1g.6gb").unwrap(), at(3, 1));
    assert_eq!(choose_placement(&empty, "2g.12gb").unwrap(), at(2, 2));
}

#[test]
fn planner_takes_1g_2g_4g_where_first_fit_refuses_the_4g() {
    let g = geometry(SimModel::H100_80GB);
    let requests = ["1g.10gb", "2g.20gb", "4g.40gb"];
    assert_eq!(
        accepted(Occupancy::empty(&g), &requests, choose_placement),
        3
    );
    assert_eq!(accepted(Occupancy::empty(&g), &requests, first_fit), 2);
}

#[test]
fn planner_keeps_a_3g_home_where_first_fit_breaks_the_last_one() {
    // A foreign 1g at 4 leaves one 3g home (0:4): first-fit puts the next 1g
    // at 0 and loses it; the planner puts it next to the foreign one.
    let g = geometry(SimModel::A100_40GB);
    let start = layout(&g, &[("1g.5gb", 4)], Ownership::Foreign);
    let requests = ["1g.5gb", "3g.20gb"];
    assert_eq!(accepted(start.clone(), &requests, choose_placement), 2);
    assert_eq!(accepted(start, &requests, first_fit), 1);
}

#[test]
fn errors_name_the_profile_and_what_is_in_the_way() {
    let g = geometry(SimModel::H100_80GB);
    let unknown = choose_placement(&Occupancy::empty(&g), "5g.50gb").unwrap_err();
    assert!(
        matches!(&unknown, MigPlanError::UnknownProfile { valid, .. } if valid.contains("3g.40gb"))
    );

    let full_low = layout(&g, &[("3g.40gb", 0), ("1g.10gb", 4)], Ownership::Held);
    let no_room = choose_placement(&full_low, "3g.40gb").unwrap_err();
    assert!(
        no_room
            .to_string()
            .contains("1g.10gb at 4:1 (gi 2, held by a claim)"),
        "{no_room}"
    );

    let media = layout(&g, &[("1g.10gb+me", 0)], Ownership::Foreign);
    assert!(matches!(
        choose_placement(&media, "1g.10gb+me").unwrap_err(),
        MigPlanError::MediaExtensionsInUse { holder, .. } if holder.contains("foreign")
    ));

    let sevens: Vec<(&str, u32)> = (0..7).map(|s| ("1g.10gb", s)).collect();
    let seven = layout(&g, &sevens, Ownership::Held);
    assert_eq!(
        choose_placement(&seven, "1g.10gb").unwrap_err(),
        MigPlanError::MaxCountReached {
            profile: "1g.10gb".to_owned(),
            max: 7
        }
    );
}

#[test]
fn a30_allows_one_media_instance_across_both_me_profiles() {
    let g = geometry(SimModel::A30_24GB);
    let l = layout(&g, &[("1g.6gb+me", 0)], Ownership::Held);
    assert!(matches!(
        choose_placement(&l, "2g.12gb+me").unwrap_err(),
        MigPlanError::MediaExtensionsInUse { .. }
    ));
    assert_eq!(choose_placement(&l, "2g.12gb").unwrap(), at(2, 2));
}

#[test]
fn choose_gpu_prefers_a_broken_gpu_over_an_empty_one() {
    let g = geometry(SimModel::H100_80GB);
    let layouts = [
        Occupancy::empty(&g),
        layout(&g, &[("3g.40gb", 4)], Ownership::Held),
    ];
    assert_eq!(choose_gpu(&layouts, "1g.10gb"), Some((1, at(3, 1))));
    // A 4g completes the broken GPU exactly rather than breaking the empty one.
    assert_eq!(choose_gpu(&layouts, "4g.40gb"), Some((1, at(0, 4))));
    assert_eq!(choose_gpu(&layouts, "7g.80gb"), Some((0, at(0, 8))));
    assert_eq!(choose_gpu(&layouts[1..], "7g.80gb"), None);
}
