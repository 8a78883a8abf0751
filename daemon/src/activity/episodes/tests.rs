use proptest::prelude::*;

use super::{Condition, Counter, Episodes};
use crate::activity::snapshot::{EpisodeCounts, WarningKind};

fn unclaimed(pid: u32, gpu: &str) -> Condition {
    Condition {
        kind: WarningKind::Unclaimed,
        counter: Counter::Unclaimed,
        claim_uid: String::new(),
        scope: gpu.to_owned(),
        device: gpu.to_owned(),
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
            overshare("a", "gpu-0", Counter::OverShareMps),
            overshare("b", "gpu-0", Counter::OverShareTimeslicing),
        ],
    );
    assert_eq!(episodes.open().len(), 4);
    assert_eq!(
        episodes.counts(),
        EpisodeCounts {
            overshare_mps: 1,
            overshare_timeslicing: 1,
            unclaimed: 2,
        }
    );
    // A second episode of the same key after a gap counts again.
    episodes.observe(2, vec![]);
    let back = episodes.observe(3, vec![overshare("a", "gpu-0", Counter::OverShareMps)]);
    assert_eq!(back.opened.len(), 1);
    assert_eq!(episodes.counts().overshare_mps, 2);
}

proptest! {
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
        for _ in 0..n { step(&mut episodes, vec![overshare("a", "gpu-0", Counter::OverShareMps)]); }
        for _ in 0..after { step(&mut episodes, vec![]); }
        prop_assert_eq!(opened, 1);
        prop_assert_eq!(closed, 1);
        prop_assert_eq!(episodes.counts().overshare_mps, 1);
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
