use std::collections::BTreeSet;

use proptest::prelude::*;

use super::{Summaries, SummarySettings};
use crate::activity::attribute::empty_claim;
use crate::activity::fixtures::{A, B, GIB, record, timesliced, whole};
use crate::activity::held::held_claims;
use crate::activity::{ClaimActivity, DeviceSummary, Warning, WarningKind};

const IDLE_AFTER: u64 = 60;

/// The records' prepare time (`fixtures::record`).
const PREPARED: i64 = 1_000;

fn summaries() -> Summaries {
    Summaries::new(SummarySettings {
        idle_after_s: IDLE_AFTER,
        window_s: 30,
        interval_s: 5,
    })
}

/// Claim A holding gpu-0 whole, B time-slicing gpu-1; nothing read yet.
fn claims() -> Vec<ClaimActivity> {
    let inv = crate::testkit::inventory(2);
    let uuid = |i: usize| inv.gpus[i].info.uuid.clone();
    let records = [
        record(A, vec![whole("gpu-0", &uuid(0))]),
        record(B, vec![timesliced("gpu-1", &uuid(1))]),
    ];
    held_claims(&records, &inv)
        .iter()
        .map(empty_claim)
        .collect()
}

/// What one sample found of one claim.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    active: bool,
    memory: u64,
    sm: Option<u32>,
}

/// One sample at `now`: each claim as `seen` says, `warnings` open.
fn sample(
    s: &mut Summaries,
    claims: &mut [ClaimActivity],
    now: i64,
    seen: &[Seen],
    warnings: &[Warning],
    unread: &BTreeSet<String>,
) -> u64 {
    for (claim, seen) in claims.iter_mut().zip(seen) {
        if seen.active {
            claim.last_active = Some(now);
        }
        for d in &mut claim.devices {
            d.memory_used = seen.memory;
            d.sm_percent = seen.sm;
        }
    }
    s.observe(now, claims, warnings, unread)
}

fn summary(claims: &[ClaimActivity], claim: usize) -> DeviceSummary {
    claims[claim].devices[0].summary.expect("summarised")
}

fn overshare(uid: &str, device: &str, since: i64) -> Warning {
    Warning {
        kind: WarningKind::OverShare,
        since,
        claim_uid: uid.to_owned(),
        device: device.to_owned(),
        pid: 0,
        message: String::new(),
    }
}

fn active() -> Seen {
    Seen {
        active: true,
        memory: GIB,
        sm: Some(20),
    }
}

fn quiet() -> Seen {
    Seen {
        sm: Some(0),
        ..Seen::default()
    }
}

#[test]
fn idle_sets_exactly_at_idle_after_dated_from_when_idleness_began_and_clears_on_activity() {
    let (mut s, mut c, none) = (summaries(), claims(), BTreeSet::new());
    let t1 = 2_000;
    assert_eq!(
        sample(&mut s, &mut c, t1, &[active(), active()], &[], &none),
        0
    );
    assert_eq!(summary(&c, 0).idle_since, None);
    let limit = t1 + i64::try_from(IDLE_AFTER).unwrap();
    assert_eq!(
        sample(&mut s, &mut c, limit - 1, &[quiet(), active()], &[], &none),
        0
    );
    assert_eq!(summary(&c, 0).idle_since, None, "one second short");
    assert_eq!(
        sample(&mut s, &mut c, limit, &[quiet(), active()], &[], &none),
        1
    );
    assert_eq!(summary(&c, 0).idle_since, Some(t1), "when it began");
    assert_eq!(summary(&c, 1).idle_since, None);
    assert_eq!(
        sample(
            &mut s,
            &mut c,
            limit + 500,
            &[quiet(), active()],
            &[],
            &none
        ),
        1,
        "still idle, same date: no move"
    );
    assert_eq!(summary(&c, 0).idle_since, Some(t1));
    assert_eq!(
        sample(
            &mut s,
            &mut c,
            limit + 505,
            &[active(), active()],
            &[],
            &none
        ),
        2
    );
    assert_eq!(
        summary(&c, 0).idle_since,
        None,
        "activity clears it at once"
    );
}

#[test]
fn a_claim_never_active_is_idle_since_its_prepare() {
    let (mut s, mut c, none) = (summaries(), claims(), BTreeSet::new());
    let at = PREPARED + i64::try_from(IDLE_AFTER).unwrap();
    sample(&mut s, &mut c, at - 1, &[quiet(), quiet()], &[], &none);
    assert_eq!(summary(&c, 0).idle_since, None);
    assert_eq!(
        sample(&mut s, &mut c, at, &[quiet(), quiet()], &[], &none),
        1
    );
    assert_eq!(summary(&c, 0).idle_since, Some(PREPARED));
    assert_eq!(summary(&c, 1).idle_since, Some(PREPARED));
}

#[test]
fn idle_after_0_is_idle_at_the_first_sample_without_activity_only() {
    let mut s = Summaries::new(SummarySettings {
        idle_after_s: 0,
        window_s: 30,
        interval_s: 5,
    });
    let (mut c, none) = (claims(), BTreeSet::new());
    sample(&mut s, &mut c, 2_000, &[active(), quiet()], &[], &none);
    assert_eq!(summary(&c, 0).idle_since, None, "active in this sample");
    assert_eq!(summary(&c, 1).idle_since, Some(PREPARED));
    sample(&mut s, &mut c, 2_005, &[quiet(), quiet()], &[], &none);
    assert_eq!(summary(&c, 0).idle_since, Some(2_000));
}

#[test]
fn a_gpu_not_read_neither_sets_nor_clears_idle() {
    let (mut s, mut c) = (summaries(), claims());
    let none = BTreeSet::new();
    let gpu0 = BTreeSet::from(["gpu-0".to_owned()]);
    sample(&mut s, &mut c, 2_000, &[active(), active()], &[], &none);
    let g = sample(&mut s, &mut c, 9_000, &[quiet(), quiet()], &[], &gpu0);
    assert_eq!(summary(&c, 0).idle_since, None, "gpu-0 unread: not set");
    assert_eq!(summary(&c, 1).idle_since, Some(2_000));
    sample(&mut s, &mut c, 9_005, &[quiet(), quiet()], &[], &none);
    assert_eq!(summary(&c, 0).idle_since, Some(2_000), "read again: set");
    let kept = sample(&mut s, &mut c, 9_010, &[quiet(), quiet()], &[], &gpu0);
    assert_eq!(summary(&c, 0).idle_since, Some(2_000), "unread: kept");
    assert_eq!(kept, g + 1);
    assert_eq!(
        summary(&c, 0).memory_peak,
        0,
        "no point added for the unread GPU"
    );
}

#[test]
fn overshare_since_is_the_open_episode_and_moves_the_generation_as_it_opens_and_closes() {
    let (mut s, mut c, none) = (summaries(), claims(), BTreeSet::new());
    let all = [active(), active()];
    assert_eq!(sample(&mut s, &mut c, 2_000, &all, &[], &none), 0);
    let open = [overshare(B, "gpu-1", 2_005)];
    assert_eq!(sample(&mut s, &mut c, 2_005, &all, &open, &none), 1);
    assert_eq!(summary(&c, 1).overshare_since, Some(2_005));
    assert_eq!(summary(&c, 0).overshare_since, None, "another claim's");
    assert_eq!(sample(&mut s, &mut c, 2_010, &all, &open, &none), 1);
    assert_eq!(sample(&mut s, &mut c, 2_015, &all, &[], &none), 2);
    assert_eq!(summary(&c, 1).overshare_since, None);
}

#[test]
fn the_figures_are_the_windows_and_the_process_count_the_samples() {
    let (mut s, mut c, none) = (summaries(), claims(), BTreeSet::new());
    let seen = |memory, sm| Seen {
        active: true,
        memory,
        sm,
    };
    sample(
        &mut s,
        &mut c,
        2_000,
        &[seen(4 * GIB, Some(80)), seen(GIB, None)],
        &[],
        &none,
    );
    sample(
        &mut s,
        &mut c,
        2_005,
        &[seen(GIB, Some(20)), seen(GIB, None)],
        &[],
        &none,
    );
    let a = summary(&c, 0);
    assert_eq!(
        (
            a.window_s,
            a.memory_peak,
            a.sm_mean,
            a.sm_peak,
            a.process_count
        ),
        (30, 4 * GIB, Some(50), Some(80), 0)
    );
    let b = summary(&c, 1);
    assert_eq!(
        (b.sm_mean, b.sm_peak),
        (None, None),
        "not sampled: no SM figures"
    );
    sample(
        &mut s,
        &mut c,
        2_031,
        &[seen(GIB, Some(20)), seen(GIB, None)],
        &[],
        &none,
    );
    assert_eq!(
        summary(&c, 0).memory_peak,
        GIB,
        "2000 fell out of the window"
    );
}

/// One generated sample: per claim whether active and its figures, and
/// whether B's over-share episode is open.
#[derive(Debug, Clone)]
struct Step {
    dt: i64,
    active: [bool; 2],
    overshare: bool,
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (1i64..40, any::<[bool; 2]>(), any::<bool>()).prop_map(|(dt, active, overshare)| Step {
            dt,
            active,
            overshare,
        }),
        1..60,
    )
}

fn figures() -> impl Strategy<Value = Vec<(u64, Option<u32>)>> {
    prop::collection::vec((0..80 * GIB, prop::option::of(0u32..=100)), 120)
}

/// Runs `steps` with each sample's figures from `figures`; returns each
/// sample's generation and its open conditions.
fn run(steps: &[Step], figures: &[(u64, Option<u32>)]) -> Vec<(u64, Vec<[Option<i64>; 2]>)> {
    let (mut s, mut c, none) = (summaries(), claims(), BTreeSet::new());
    let mut now = 2_000;
    let mut since = None;
    steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            now += step.dt;
            since = step.overshare.then(|| since.unwrap_or(now));
            let warnings: Vec<Warning> = since
                .map(|t| overshare(B, "gpu-1", t))
                .into_iter()
                .collect();
            let seen: Vec<Seen> = (0..2)
                .map(|k| {
                    let (memory, sm) = figures[(2 * i + k) % figures.len()];
                    Seen {
                        active: step.active[k],
                        memory,
                        // Activity as the attribution judges it, figures apart.
                        sm: sm.map(|sm| if step.active[k] { sm.max(1) } else { 0 }),
                    }
                })
                .collect();
            let generation = sample(&mut s, &mut c, now, &seen, &warnings, &none);
            let open = c
                .iter()
                .map(|claim| {
                    let d = claim.devices[0].summary.unwrap();
                    [d.idle_since, d.overshare_since]
                })
                .collect();
            (generation, open)
        })
        .collect()
}

proptest! {
    #[test]
    fn figures_never_move_the_generation_and_conditions_move_it_by_one(
        steps in steps(),
        first in figures(),
        second in figures(),
    ) {
        let one = run(&steps, &first);
        let two = run(&steps, &second);
        prop_assert_eq!(&one, &two, "same conditions, other figures: same generations");
        let mut before: (u64, Vec<[Option<i64>; 2]>) = (0, vec![[None, None]; 2]);
        for (generation, open) in one {
            let moved = generation - before.0;
            prop_assert_eq!(moved, u64::from(open != before.1), "{:?} → {:?}", before.1, open);
            before = (generation, open);
        }
    }
}

#[test]
fn the_quiet_side_of_each_condition_is_dated_from_the_prepare_then_from_the_sample_that_ended_the_other()
 {
    let (mut s, mut c, none) = (summaries(), claims(), BTreeSet::new());
    let all = [active(), active()];
    sample(&mut s, &mut c, 2_000, &all, &[], &none);
    assert_eq!(summary(&c, 0).active_since, Some(PREPARED));
    assert_eq!(summary(&c, 1).within_share_since, Some(PREPARED));
    let idle_at = 2_000 + i64::try_from(IDLE_AFTER).unwrap();
    sample(&mut s, &mut c, idle_at, &[quiet(), active()], &[], &none);
    assert_eq!(summary(&c, 0).active_since, None, "idle: no active side");
    assert_eq!(summary(&c, 1).active_since, Some(PREPARED), "kept");
    sample(&mut s, &mut c, idle_at + 5, &all, &[], &none);
    assert_eq!(
        summary(&c, 0).active_since,
        Some(idle_at + 5),
        "the sample that ended it"
    );
    sample(&mut s, &mut c, idle_at + 10, &all, &[], &none);
    assert_eq!(summary(&c, 0).active_since, Some(idle_at + 5), "kept after");

    let open = [overshare(B, "gpu-1", idle_at + 12)];
    sample(&mut s, &mut c, idle_at + 15, &all, &open, &none);
    assert_eq!(
        summary(&c, 1).within_share_since,
        None,
        "over: no within side"
    );
    sample(&mut s, &mut c, idle_at + 20, &all, &[], &none);
    assert_eq!(summary(&c, 1).within_share_since, Some(idle_at + 20));
    sample(&mut s, &mut c, idle_at + 25, &all, &[], &none);
    assert_eq!(summary(&c, 1).within_share_since, Some(idle_at + 20));
    assert_eq!(
        summary(&c, 0).within_share_since,
        Some(PREPARED),
        "another claim's"
    );
}
