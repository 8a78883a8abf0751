//! The usage history the sampler feeds: what a sample adds, the claims
//! dropped at their unprepare, the saves, a restart, the cap.

use super::*;
use crate::advice::HistorySettings;
use crate::advice::history::file::{FILE_NAME, load};
use crate::advice::keeper::{HistoryKeeper, SAVE_EVERY_S};

const SETTINGS: HistorySettings = HistorySettings {
    interval_s: 5,
    half_life_s: 86_400,
    max_claims: 16,
};

impl Node {
    /// A sampler feeding the history kept in the node's state dir.
    fn sampler_with_history(&self, settings: HistorySettings) -> Sampler {
        let keeper = HistoryKeeper::load(Some(&self.state_dir()), settings);
        self.sampler()
            .with_subscriber(Box::new(crate::activity::history_feed::HistoryFeed::new(
                keeper,
            )))
    }

    /// The history file as it is on disk now.
    fn saved_history(&self) -> crate::advice::History {
        let (history, warning) = load(&self.state_dir(), SETTINGS);
        assert!(warning.is_none(), "{warning:?}");
        history
    }

    fn history_bytes(&self) -> Vec<u8> {
        std::fs::read(self.state_dir().join(FILE_NAME)).unwrap()
    }
}

/// `T0` plus `s` seconds.
fn at(s: u64) -> Duration {
    T0 + Duration::from_secs(s)
}

/// Samples at each of `seconds` past `T0`, then flushes (saves the history).
fn sample_and_save(sampler: &mut Sampler, seconds: &[u64]) {
    for &s in seconds {
        sampler.sample_at(at(s));
    }
    sampler.flush();
}

#[test]
fn sim_each_sample_adds_the_claims_memory_and_observed_time() {
    let node = Node::held_by_a();
    let process = Sleeper::in_claim(A);
    node.run(&process, 0, 4 * GIB, 5, false);
    let mut sampler = node.sampler_with_history(SETTINGS);
    sample_and_save(&mut sampler, &[0, 5, 10]);
    let history = node.saved_history();
    let device = history.device(A, "gpu-0").expect("gpu-0 of A");
    assert_eq!(device.samples, 3);
    assert_eq!(device.observed_s, 10);
    assert_eq!(device.memory_peak, Some(4 * GIB));
    assert_eq!(history.claims()[A].name, "claim-a");
}

#[test]
fn sim_an_idle_claim_is_observed_at_zero_memory_and_never_active() {
    let node = Node::held_by_a();
    let mut sampler = node.sampler_with_history(SETTINGS);
    sample_and_save(&mut sampler, &[0, 5]);
    let history = node.saved_history();
    let device = history.device(A, "gpu-0").unwrap();
    assert_eq!(device.memory_peak, Some(0));
    assert_eq!((device.samples, device.active_samples), (2, 0));
}

#[test]
fn sim_an_unprepared_claim_loses_its_history_at_the_next_sample() {
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    let mut sampler = node.sampler_with_history(SETTINGS);
    sampler.sample_at(at(0));
    assert_eq!(node.saved_history().claims().len(), 2);
    node.engine.unprepare(B).unwrap();
    sampler.sample_at(at(5));
    let saved = node.saved_history();
    let uids: Vec<&String> = saved.claims().keys().collect();
    assert_eq!(uids, vec![A], "saved at once: the claim set changed");
}

#[test]
fn sim_the_file_is_saved_when_the_claims_change_else_every_few_minutes() {
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    let mut sampler = node.sampler_with_history(SETTINGS);
    sampler.sample_at(at(0));
    let first = node.history_bytes();
    sampler.sample_at(at(5));
    assert_eq!(node.history_bytes(), first, "same claims, saved 5 s ago");
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    sampler.sample_at(at(10));
    let with_b = node.history_bytes();
    assert_ne!(with_b, first, "a claim came");
    assert!(node.saved_history().claims().contains_key(B));
    let last_quiet = u64::try_from(SAVE_EVERY_S).unwrap() + 5;
    let mut step = 15;
    while step < last_quiet {
        sampler.sample_at(at(step));
        assert_eq!(node.history_bytes(), with_b, "at {step} s");
        step += 5;
    }
    sampler.sample_at(at(last_quiet + 5));
    assert_ne!(
        node.history_bytes(),
        with_b,
        "saved again after the interval"
    );
}

#[test]
fn sim_the_history_continues_after_a_restart() {
    let node = Node::held_by_a();
    let mut before = node.sampler_with_history(SETTINGS);
    sample_and_save(&mut before, &[0, 5]);
    drop(before);
    let mut after = node.sampler_with_history(SETTINGS);
    sample_and_save(&mut after, &[10]);
    let device = node.saved_history().device(A, "gpu-0").unwrap().clone();
    assert_eq!((device.samples, device.observed_s), (3, 10));
}

#[test]
fn sim_an_unusable_file_starts_an_empty_history_and_is_replaced() {
    let node = Node::held_by_a();
    let cut_short = b"{\"version\":1,\"claims\":";
    gpuslice_cdi::write_atomic(&node.state_dir(), FILE_NAME, cut_short, 0o644).unwrap();
    let mut sampler = node.sampler_with_history(SETTINGS);
    sampler.sample_at(at(0));
    let device = node.saved_history().device(A, "gpu-0").unwrap().clone();
    assert_eq!(device.samples, 1);
}

#[test]
fn sim_past_max_claims_the_least_recently_seen_goes() {
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    let settings = HistorySettings {
        max_claims: 1,
        ..SETTINGS
    };
    let mut sampler = node.sampler_with_history(settings);
    sampler.sample_at(at(0));
    let (saved, _) = load(&node.state_dir(), settings);
    let uids: Vec<&String> = saved.claims().keys().collect();
    assert_eq!(uids, vec![B], "A came first and was dropped for B");
}

#[test]
fn sim_the_handle_shows_the_history_the_task_feeds() {
    let node = Node::held_by_a();
    let (handle, task) = node.start_sampling(3600);
    // The loop takes a first sample before it looks for the stop.
    task.unwrap().stop();
    let history = handle.history().expect("sampling on").lock();
    assert_eq!(history.device(A, "gpu-0").unwrap().samples, 1);
    drop(history);
    assert!(node.saved_history().claims().contains_key(A), "saved");
}
