//! The plan's rules, each a property over generated runs on a virtual clock.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::{
    ClaimUid, ConditionKey, Desired, MINUTE, Millis, Outcome, Planner, Reason, WriteBudget,
};

/// A claim's state in a generated step: absent (unprepared), or a condition
/// value and a figure value from small sets, so changes and repeats happen.
type Step = (Millis, Vec<Option<(u8, u8)>>, Vec<bool>);

fn desired(conditions: u8, figures: u8) -> Desired {
    Desired {
        conditions: vec![ConditionKey {
            entry: "gpu/gpu-0".to_owned(),
            type_: "Idle".to_owned(),
            status: if conditions == 0 { "True" } else { "False" }.to_owned(),
            reason: format!("R{conditions}"),
        }],
        figures: format!("{{\"memory\":{figures}}}"),
    }
}

fn uid(i: usize) -> ClaimUid {
    format!("uid-{i}")
}

fn desired_set(claims: &[Option<(u8, u8)>]) -> BTreeMap<ClaimUid, Desired> {
    claims
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.map(|(k, f)| (uid(i), desired(k, f))))
        .collect()
}

/// Steps: a time advance (0..40 s), four claims' states, and whether each
/// write of the step fails.
fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        (
            0..40_000u64,
            prop::collection::vec(prop::option::weighted(0.85, (0..2u8, 0..3u8)), 4),
            prop::collection::vec(prop::bool::weighted(0.1), 4),
        ),
        1..60,
    )
}

/// One write as it happened.
#[derive(Debug, Clone)]
struct Done {
    at: Millis,
    uid: ClaimUid,
    reason: Reason,
}

/// Runs the steps; every planned write gets its outcome at once.
fn run(limits: WriteBudget, steps: &[Step]) -> (Planner, Vec<Done>) {
    let mut planner = Planner::new(limits);
    let mut now = 0;
    let mut log = Vec::new();
    for (advance, claims, fails) in steps {
        now += advance;
        let want = desired_set(claims);
        for (n, write) in planner.plan(&want, now).into_iter().enumerate() {
            let fail = fails.get(n % fails.len().max(1)).copied().unwrap_or(false);
            let outcome = if fail {
                Outcome::Failed
            } else {
                Outcome::Applied
            };
            planner.record(&write.uid, outcome);
            log.push(Done {
                at: now,
                uid: write.uid,
                reason: write.reason,
            });
        }
    }
    (planner, log)
}

fn limits() -> impl Strategy<Value = WriteBudget> {
    (10_000..400_000u64, 1..10u32).prop_map(|(refresh, max)| WriteBudget {
        refresh,
        max_writes_per_minute: max,
    })
}

proptest! {
    /// Rule 5: no 60 s window holds more than `max_writes_per_minute` writes.
    #[test]
    fn no_minute_holds_more_writes_than_the_limit(limits in limits(), steps in steps()) {
        let (_, log) = run(limits, &steps);
        for (i, first) in log.iter().enumerate() {
            let within = log[i..].iter().take_while(|w| w.at - first.at < MINUTE).count();
            prop_assert!(within <= limits.max_writes_per_minute as usize,
                "{within} writes from {} ms: {log:?}", first.at);
        }
    }

    /// Rule 2: a figures write of a claim comes at least `refresh` after
    /// that claim's previous write.
    #[test]
    fn figures_are_written_at_most_once_per_refresh(limits in limits(), steps in steps()) {
        let (_, log) = run(limits, &steps);
        let mut last: BTreeMap<&str, Millis> = BTreeMap::new();
        for write in &log {
            if write.reason == Reason::Figures {
                let previous = last.get(write.uid.as_str()).copied();
                prop_assert!(previous.is_some_and(|p| write.at - p >= limits.refresh),
                    "{write:?} after {previous:?}");
            }
            last.insert(&write.uid, write.at);
        }
    }

    /// Rule 1: with room in the window, a condition change (or a new claim)
    /// is written in the step that shows it, and the API server then holds
    /// the new conditions.
    #[test]
    fn condition_changes_are_written_at_once(refresh in 10_000..400_000u64, steps in steps()) {
        // Room for every claim in every step of a minute.
        let limits = WriteBudget { refresh, max_writes_per_minute: 4 * 60 };
        let mut planner = Planner::new(limits);
        let mut now = 0;
        for (advance, claims, _) in &steps {
            now += advance;
            let want = desired_set(claims);
            let before: BTreeMap<ClaimUid, Option<Vec<ConditionKey>>> = want
                .keys()
                .map(|u| (u.clone(), planner.applied(u).map(|d| d.conditions.clone())))
                .collect();
            let writes = planner.plan(&want, now);
            for write in &writes {
                planner.record(&write.uid, Outcome::Applied);
            }
            for (u, d) in &want {
                if before[u].as_ref() != Some(&d.conditions) {
                    prop_assert!(writes.iter().any(|w| &w.uid == u && w.reason == Reason::Conditions),
                        "{u} changed conditions at {now}, writes {writes:?}");
                    prop_assert_eq!(planner.applied(u).map(|a| &a.conditions), Some(&d.conditions));
                }
            }
        }
    }

    /// Rules 3 and 4: once every claim is unprepared, each claim that held
    /// entries gets exactly one removal, and afterwards nothing is written,
    /// however long the quiet lasts; a steady desired state likewise ends
    /// in silence.
    #[test]
    fn removal_is_one_empty_apply_and_quiet_is_silent(limits in limits(), steps in steps()) {
        let (mut planner, _) = run(limits, &steps);
        let last = steps.last().map(|s| desired_set(&s.1)).unwrap_or_default();
        // Steady: after enough time every difference is written, then nothing.
        let mut now = steps.iter().map(|s| s.0).sum::<Millis>();
        for _ in 0..40 {
            now += limits.refresh.max(MINUTE);
            for write in planner.plan(&last, now) {
                planner.record(&write.uid, Outcome::Applied);
            }
        }
        for (u, d) in &last {
            prop_assert_eq!(planner.applied(u), Some(d));
        }
        now += limits.refresh.max(MINUTE);
        prop_assert_eq!(planner.plan(&last, now), vec![]);
        // All unprepared: one removal per claim that held entries.
        let empty = BTreeMap::new();
        let mut removals: BTreeMap<ClaimUid, usize> = BTreeMap::new();
        for _ in 0..10 {
            now += MINUTE;
            for write in planner.plan(&empty, now) {
                prop_assert_eq!(write.reason, Reason::Remove);
                *removals.entry(write.uid.clone()).or_default() += 1;
                planner.record(&write.uid, Outcome::Applied);
            }
        }
        let held: Vec<&ClaimUid> = last.keys().collect();
        prop_assert_eq!(removals.keys().collect::<Vec<_>>(), held);
        prop_assert!(removals.values().all(|n| *n == 1), "{removals:?}");
    }

    /// Rule 5, coalescing and order: a claim denied a write keeps its
    /// latest desired state (what is finally applied is the last desired,
    /// never an older one), and while condition writes wait no figures
    /// write is made.
    #[test]
    fn denied_claims_keep_their_latest_state_and_conditions_go_first(
        steps in steps(),
    ) {
        let limits = WriteBudget { refresh: 10_000, max_writes_per_minute: 1 };
        let mut planner = Planner::new(limits);
        let mut now = 0;
        let mut want = BTreeMap::new();
        for (advance, claims, _) in &steps {
            now += advance;
            want = desired_set(claims);
            let writes = planner.plan(&want, now);
            for write in &writes {
                if write.reason == Reason::Figures {
                    // No claim had a condition write waiting.
                    for (u, d) in &want {
                        prop_assert!(planner.applied(u).is_some_and(|a| a.conditions == d.conditions)
                            || u == &write.uid, "{u} waited behind figures of {}", write.uid);
                    }
                }
                planner.record(&write.uid, Outcome::Applied);
            }
        }
        for _ in 0..20 {
            now += MINUTE;
            for write in planner.plan(&want, now) {
                planner.record(&write.uid, Outcome::Applied);
            }
        }
        for (u, d) in &want {
            prop_assert_eq!(planner.applied(u), Some(d));
        }
    }
}

/// A planner refreshing each claim every `refresh` ms, at most 60 writes a
/// minute.
fn planner_refreshing_every(refresh: Millis) -> Planner {
    Planner::new(WriteBudget {
        refresh,
        max_writes_per_minute: 60,
    })
}

#[test]
fn a_claim_refused_for_good_is_not_written_again_until_its_uid_leaves() {
    let mut planner = planner_refreshing_every(10_000);
    let want = desired_set(&[Some((0, 0))]);
    let writes = planner.plan(&want, 0);
    assert_eq!(writes.len(), 1);
    planner.record(&uid(0), Outcome::Done);
    let changed = desired_set(&[Some((1, 2))]);
    assert_eq!(planner.plan(&changed, MINUTE), vec![]);
    // Gone and back (a new claim would have a new uid; this proves the
    // record was dropped with it).
    assert_eq!(planner.plan(&BTreeMap::new(), 2 * MINUTE), vec![]);
    assert_eq!(planner.plan(&changed, 3 * MINUTE).len(), 1);
}

#[test]
fn a_failed_write_is_planned_again() {
    let mut planner = planner_refreshing_every(300_000);
    let want = desired_set(&[Some((0, 0))]);
    let first = planner.plan(&want, 0);
    planner.record(&first[0].uid, Outcome::Failed);
    let again = planner.plan(&want, 1_000);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].reason, Reason::Conditions);
}
