use super::*;

const SETTINGS: HistorySettings = HistorySettings {
    interval_s: 5,
    half_life_s: 86_400,
    max_claims: 3,
};

pub(crate) fn figures(
    uid: &str,
    device: &str,
    memory: Option<u64>,
    sm: Option<u32>,
) -> ClaimFigures {
    ClaimFigures {
        uid: uid.to_owned(),
        namespace: "ml".to_owned(),
        name: format!("claim-{uid}"),
        devices: vec![DeviceFigures {
            device: device.to_owned(),
            memory_used: memory,
            sm_percent: sm,
            active: sm.is_some_and(|s| s > 0),
        }],
    }
}

#[test]
fn observed_time_counts_only_gaps_of_at_most_two_intervals() {
    let mut h = History::new(SETTINGS);
    for now in [100, 105, 110, 120, 131, 200, 205] {
        h.observe(now, &[figures("a", "gpu-0", Some(1 << 30), Some(10))]);
    }
    let d = h.device("a", "gpu-0").unwrap();
    // 5 + 5 + 10 (= 2 × 5) + 5; 11 and 69 are gaps.
    assert_eq!(d.observed_s, 25);
    assert_eq!(
        (d.first, d.last, d.samples, d.active_samples),
        (100, 205, 7, 7)
    );
}

#[test]
fn the_memory_peak_is_exact_and_missing_figures_leave_it_unset() {
    let mut h = History::new(SETTINGS);
    h.observe(0, &[figures("a", "gpu-0", None, None)]);
    assert_eq!(h.device("a", "gpu-0").unwrap().memory_peak, None);
    for (now, bytes) in [(5, 3_000_000_001), (10, 7), (15, 2_999_999_999)] {
        h.observe(now, &[figures("a", "gpu-0", Some(bytes), Some(0))]);
    }
    let d = h.device("a", "gpu-0").unwrap();
    assert_eq!(d.memory_peak, Some(3_000_000_001));
    assert_eq!(d.active_samples, 0);
    assert_eq!(d.sm_peak, Some(0));
    assert!(
        d.sm.is_empty(),
        "SM goes into the histogram for active samples only"
    );
}

#[test]
fn one_peak_per_ten_minute_window_goes_into_the_memory_histogram() {
    let mut h = History::new(SETTINGS);
    // Two windows: peaks 2 GB (0..600) and 1 GB (600..).
    for (now, bytes) in [
        (0, 1_000_000_000u64),
        (300, 2_000_000_000),
        (600, 1_000_000_000),
        (900, 500),
    ] {
        h.observe(now, &[figures("a", "gpu-0", Some(bytes), Some(10))]);
    }
    let d = h.device("a", "gpu-0").unwrap();
    assert_eq!(d.window, Some((600, 1_000_000_000)));
    let m = &d.memory;
    assert!(
        (m.total() - (1.0 + (600.0f64 / 86_400.0).exp2())).abs() < 1e-9,
        "{}",
        m.total()
    );
    assert_eq!(
        m.percentile_bucket(0.4),
        Some(histogram::MEMORY.bucket(1e9))
    );
    assert_eq!(
        m.percentile_bucket(1.0),
        Some(histogram::MEMORY.bucket(2e9))
    );
}

#[test]
fn the_least_recently_seen_claim_is_evicted_at_max_claims() {
    let mut h = History::new(SETTINGS);
    h.observe(10, &[figures("a", "gpu-0", Some(1), None)]);
    h.observe(20, &[figures("b", "gpu-1", Some(1), None)]);
    h.observe(30, &[figures("c", "gpu-2", Some(1), None)]);
    h.observe(40, &[figures("a", "gpu-0", Some(1), None)]);
    assert_eq!(h.claims().len(), 3);
    let evicted = h.observe(50, &[figures("d", "gpu-3", Some(1), None)]);
    assert_eq!(evicted, ["b"]);
    let kept: Vec<&String> = h.claims().keys().collect();
    assert_eq!(kept, ["a", "c", "d"]);
    assert!(h.forget("c"));
    assert!(!h.forget("c"));
    assert!(
        h.observe(60, &[figures("e", "gpu-4", Some(1), None)])
            .is_empty()
    );
}

#[test]
fn a_loaded_history_beyond_max_claims_keeps_the_most_recent() {
    let mut big = History::new(HistorySettings {
        max_claims: 10,
        ..SETTINGS
    });
    for (i, uid) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        big.observe(
            i64::try_from(i).unwrap(),
            &[figures(uid, "gpu-0", Some(1), None)],
        );
    }
    let small = History::with_claims(SETTINGS, big.claims().clone());
    let kept: Vec<&String> = small.claims().keys().collect();
    assert_eq!(kept, ["c", "d", "e"]);
}

#[test]
fn a_sample_older_than_the_last_is_ignored() {
    let mut h = History::new(SETTINGS);
    h.observe(100, &[figures("a", "gpu-0", Some(5), Some(5))]);
    h.observe(50, &[figures("a", "gpu-0", Some(9), Some(5))]);
    let d = h.device("a", "gpu-0").unwrap();
    assert_eq!((d.samples, d.memory_peak, d.last), (1, Some(5), 100));
}
