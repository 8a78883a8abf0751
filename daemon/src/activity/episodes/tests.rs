use proptest::prelude::*;

use std::collections::{BTreeMap, BTreeSet};

use super::{Condition, Counter, Episodes, Unread};
use crate::activity::snapshot::{EpisodeCounts, WarningKind};
use crate::state::AccessKind;

fn unclaimed(pid: u32, gpu: &str) -> Condition {
    Condition {
        kind: WarningKind::Unclaimed,
        counter: Counter::Unclaimed,
        claim_uid: String::new(),
        scope: gpu.to_owned(),
        device: gpu.to_owned(),
        gpu: gpu.to_owned(),
        pid,
        message: format!("process {pid} on {gpu}"),
    }
}

fn overshare(uid: &str, device: &str, counter: Counter) -> Condition {
    Condition {
        kind: WarningKind::OverShare,
        counter,
        claim_uid: uid.to_owned(),
        scope: device.to_owned(),
        device: device.to_owned(),
        gpu: device.split("-mig-").next().unwrap_or(device).to_owned(),
        pid: 0,
        message: format!("{uid} over on {device}"),
    }
}

#[test]
fn an_episode_opens_once_stays_open_and_closes_when_gone() {
    let mut episodes = Episodes::default();
    let first = episodes.observe(10, vec![unclaimed(7, "gpu-0")]);
    assert_eq!(first.opened.len(), 1);
    assert_eq!(first.opened[0].since, 10);
    assert!(first.closed.is_empty());
    let again = episodes.observe(15, vec![unclaimed(7, "gpu-0"), unclaimed(7, "gpu-0")]);
    assert!(again.opened.is_empty() && again.closed.is_empty());
    assert_eq!(episodes.open()[0].since, 10, "the episode's start is kept");
    let gone = episodes.observe(20, vec![]);
    assert_eq!(gone.closed.len(), 1);
    assert_eq!(gone.closed[0].pid, 7);
    assert!(episodes.open().is_empty());
    assert_eq!(episodes.counts().unclaimed, 1);
}

#[test]
fn keys_keep_episodes_apart_and_counters_by_kind() {
    let mut episodes = Episodes::default();
    episodes.observe(
        1,
        vec![
            unclaimed(7, "gpu-0"),
            unclaimed(7, "gpu-1"),
            overshare("a", "gpu-0", Counter::OverShare(AccessKind::Mps)),
            overshare("b", "gpu-0", Counter::OverShare(AccessKind::TimeSlicing)),
        ],
    );
    assert_eq!(episodes.open().len(), 4);
    assert_eq!(
        episodes.counts(),
        EpisodeCounts {
            overshare: BTreeMap::from([(AccessKind::Mps, 1), (AccessKind::TimeSlicing, 1)]),
            unclaimed: 2,
        }
    );
    // A second episode of the same key after a gap counts again.
    episodes.observe(2, vec![]);
    let back = episodes.observe(
        3,
        vec![overshare("a", "gpu-0", Counter::OverShare(AccessKind::Mps))],
    );
    assert_eq!(back.opened.len(), 1);
    assert_eq!(episodes.counts().overshare(AccessKind::Mps), 2);
}

fn unread(gpus: &[&str], held: &[&str]) -> Unread {
    Unread {
        gpus: gpus.iter().map(|g| (*g).to_owned()).collect(),
        held: held
            .iter()
            .map(|c| (*c).to_owned())
            .collect::<BTreeSet<_>>(),
    }
}

#[test]
fn a_gpu_left_out_of_a_sample_keeps_its_episodes_as_they_were() {
    let mut episodes = Episodes::default();
    episodes.observe(
        1,
        vec![
            unclaimed(7, "gpu-0"),
            unclaimed(8, "gpu-1"),
            overshare(
                "a",
                "gpu-0-mig-3g40gb-0",
                Counter::OverShare(AccessKind::Mps),
            ),
        ],
    );
    // gpu-0 could not be read: its two episodes stay; gpu-1's ends.
    let skipped = episodes.observe_partial(2, vec![], &unread(&["gpu-0"], &["a"]));
    assert!(skipped.opened.is_empty());
    assert_eq!(skipped.closed.len(), 1);
    assert_eq!(skipped.closed[0].pid, 8);
    assert_eq!(episodes.open().len(), 2);
    // Read again and still there: no second warning, the start kept.
    let back = episodes.observe(
        3,
        vec![
            unclaimed(7, "gpu-0"),
            overshare(
                "a",
                "gpu-0-mig-3g40gb-0",
                Counter::OverShare(AccessKind::Mps),
            ),
        ],
    );
    assert!(back.opened.is_empty() && back.closed.is_empty());
    assert!(episodes.open().iter().all(|w| w.since == 1));
    assert_eq!(episodes.counts().unclaimed, 2);
    assert_eq!(episodes.counts().overshare(AccessKind::Mps), 1);
}

#[test]
fn an_unread_gpu_does_not_keep_the_episode_of_a_claim_gone() {
    let mut episodes = Episodes::default();
    episodes.observe(
        1,
        vec![overshare("a", "gpu-0", Counter::OverShare(AccessKind::Mps))],
    );
    let gone = episodes.observe_partial(2, vec![], &unread(&["gpu-0"], &[]));
    assert_eq!(
        gone.closed.len(),
        1,
        "claim a was unprepared: its episode ends"
    );
    assert!(episodes.open().is_empty());
}

proptest! {
    /// A condition that holds throughout, on a GPU some samples cannot
    /// read, opens one episode and never closes it.
    #[test]
    fn unread_samples_never_reopen_a_lasting_condition(reads in prop::collection::vec(any::<bool>(), 1..60)) {
        let mut episodes = Episodes::default();
        let (mut opened, mut closed) = (0, 0);
        for (i, read) in reads.iter().enumerate() {
            let now = i64::try_from(i).unwrap();
            let changes = if *read {
                episodes.observe(now, vec![unclaimed(3, "gpu-2")])
            } else {
                episodes.observe_partial(now, vec![], &unread(&["gpu-2"], &[]))
            };
            opened += changes.opened.len();
            closed += changes.closed.len();
        }
        let first_read = reads.iter().any(|r| *r);
        prop_assert_eq!(opened, usize::from(first_read));
        prop_assert_eq!(closed, 0);
    }

    /// A condition held for N consecutive samples opens exactly one episode
    /// (one warning logged), and closes it exactly once when it ends.
    #[test]
    fn n_consecutive_samples_log_one_warning(n in 1usize..50, before in 0usize..5, after in 1usize..5) {
        let mut episodes = Episodes::default();
        let (mut opened, mut closed) = (0, 0);
        let mut now = 0;
        let mut step = |episodes: &mut Episodes, conditions: Vec<Condition>| {
            now += 5;
            let changes = episodes.observe(now, conditions);
            opened += changes.opened.len();
            closed += changes.closed.len();
        };
        for _ in 0..before { step(&mut episodes, vec![]); }
        for _ in 0..n { step(&mut episodes, vec![overshare("a", "gpu-0", Counter::OverShare(AccessKind::Mps))]); }
        for _ in 0..after { step(&mut episodes, vec![]); }
        prop_assert_eq!(opened, 1);
        prop_assert_eq!(closed, 1);
        prop_assert_eq!(episodes.counts().overshare(AccessKind::Mps), 1);
    }

    /// Over any on/off sequence, openings equal the rising edges.
    #[test]
    fn openings_are_the_rising_edges(seq in prop::collection::vec(any::<bool>(), 0..60)) {
        let mut episodes = Episodes::default();
        let mut opened = 0;
        for (i, on) in seq.iter().enumerate() {
            let conditions = if *on { vec![unclaimed(3, "gpu-0")] } else { vec![] };
            opened += episodes.observe(i64::try_from(i).unwrap(), conditions).opened.len();
        }
        let edges = seq.iter().enumerate().filter(|(i, on)| **on && (*i == 0 || !seq[i - 1])).count();
        prop_assert_eq!(opened, edges);
        prop_assert_eq!(episodes.counts().unclaimed, u64::try_from(edges).unwrap());
    }
}
