use proptest::prelude::*;

use super::*;

const DAY: u64 = 86_400;

#[test]
fn memory_buckets_grow_5_percent_from_16_mib_up_to_512_gib() {
    let mib = 1024.0 * 1024.0;
    assert_eq!(MEMORY.bucket(0.0), 0);
    assert_eq!(MEMORY.bucket(16.0 * mib), 0);
    assert_eq!(MEMORY.bucket(16.0 * mib * 1.05), 1);
    assert_eq!(MEMORY.bucket(16.0 * mib * 1.05 - 1.0), 0);
    assert_eq!(MEMORY.bucket(512.0 * 1024.0 * mib), 213);
    assert_eq!(MEMORY.bucket(1e15), 213);
    for i in 1..MEMORY.buckets() {
        assert_eq!(MEMORY.bucket(MEMORY.start(i)), i, "start of bucket {i}");
        assert_eq!(MEMORY.bucket(MEMORY.start(i) * 0.999_999), i - 1);
    }
    assert_eq!(SM_PERCENT.bucket(0.0), 0);
    assert_eq!(SM_PERCENT.bucket(4.9), 0);
    assert_eq!(SM_PERCENT.bucket(5.0), 1);
    assert_eq!(SM_PERCENT.bucket(100.0), 20);
}

#[test]
fn a_sample_counts_twice_as_much_one_half_life_later() {
    let mut h = Histogram::new(SM_PERCENT, DAY);
    h.add(10.0, 0);
    h.add(50.0, 86_400);
    // p = 1/3 of the total lands in the first bucket, anything above in the second.
    assert_eq!(h.percentile_bucket(0.333), Some(2));
    assert_eq!(h.percentile_bucket(0.334), Some(10));
    assert!((h.total() - 3.0).abs() < 1e-9, "{}", h.total());
}

#[test]
fn a_window_peak_replaced_leaves_no_weight_behind() {
    let mut h = Histogram::new(MEMORY, DAY);
    h.add(1e9, 0);
    h.subtract(1e9, 0);
    h.add(2e9, 0);
    assert_eq!(h.percentile_bucket(0.01), Some(MEMORY.bucket(2e9)));
    assert!((h.total() - 1.0).abs() < 1e-9);
}

#[test]
fn old_samples_renormalise_past_the_largest_exponent() {
    let mut h = Histogram::new(SM_PERCENT, 3600);
    h.add(20.0, 0);
    // 101 half lives later the reference moves; the old sample all but vanishes.
    h.add(80.0, 101 * 3600);
    assert_eq!(h.reference(), Some(101 * 3600));
    assert_eq!(h.percentile_bucket(0.5), Some(16));
    assert!(h.total() < 2.0 && h.total() >= 1.0);
}

proptest! {
    /// Without decay (all at one time) the histogram's percentile is the
    /// bucket of the exact quantile, so within 5%.
    #[test]
    fn percentile_is_the_bucket_of_the_exact_quantile(
        values in prop::collection::vec(0u64..(600u64 << 30), 1..300),
        p in 0.01f64..=1.0,
    ) {
        let mut h = Histogram::new(MEMORY, DAY);
        #[expect(clippy::cast_precision_loss, reason = "test values")]
        let as_f = |v: u64| v as f64;
        for v in &values {
            h.add(as_f(*v), 1000);
        }
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let n = as_f(sorted.len() as u64);
        let rank = (1..=sorted.len()).find(|k| as_f(*k as u64) >= p * n).unwrap_or(sorted.len());
        let exact = as_f(sorted[rank - 1]);
        let bucket = h.percentile_bucket(p).unwrap();
        prop_assert_eq!(bucket, MEMORY.bucket(exact));
        let answer = h.percentile(p).unwrap();
        if bucket + 1 < MEMORY.buckets() && exact >= 16.0 * 1024.0 * 1024.0 {
            prop_assert!(answer >= exact && answer <= exact * 1.05 + 1.0, "{} vs {}", answer, exact);
        }
    }

    /// Moving the reference keeps every percentile.
    #[test]
    fn renormalisation_keeps_percentiles(
        samples in prop::collection::vec((0u32..=100, 0i64..(20 * 86_400)), 1..200),
        shift in 0i64..(10 * 86_400),
    ) {
        let mut h = Histogram::new(SM_PERCENT, DAY);
        for (v, at) in &samples {
            h.add(f64::from(*v), *at);
        }
        let before: Vec<_> = (1..=20).map(|i| h.percentile_bucket(f64::from(i) / 20.0)).collect();
        let reference = h.reference().unwrap();
        h.shift_reference(reference + shift);
        let after: Vec<_> = (1..=20).map(|i| h.percentile_bucket(f64::from(i) / 20.0)).collect();
        prop_assert_eq!(before, after);
    }

    /// A checkpoint loads back into a histogram whose checkpoint is the same.
    #[test]
    fn checkpoint_round_trip(
        samples in prop::collection::vec((0u64..(600u64 << 30), 0i64..(30 * 86_400)), 1..300),
    ) {
        let mut h = Histogram::new(MEMORY, DAY);
        #[expect(clippy::cast_precision_loss, reason = "test values")]
        for (v, at) in &samples {
            h.add(*v as f64, *at);
        }
        let saved = h.checkpoint().unwrap();
        prop_assert!(saved.weights.iter().any(|(_, w)| *w == MAX_CHECKPOINT_WEIGHT));
        let loaded = Histogram::from_checkpoint(MEMORY, DAY, &saved).unwrap();
        prop_assert_eq!(loaded.checkpoint().unwrap(), saved);
    }
}

#[test]
fn a_checkpoint_that_does_not_fit_its_scale_is_refused() {
    let past = Checkpoint {
        reference: 0,
        total: 1.0,
        weights: vec![(21, 10)],
    };
    assert_eq!(
        Histogram::from_checkpoint(SM_PERCENT, DAY, &past)
            .unwrap_err()
            .to_string(),
        "bucket 21 is past the last (20)"
    );
    let zero = Checkpoint {
        reference: 0,
        total: 0.0,
        weights: vec![(2, 10)],
    };
    assert!(matches!(
        Histogram::from_checkpoint(SM_PERCENT, DAY, &zero),
        Err(CheckpointError::BadTotal { .. })
    ));
    let negative = Checkpoint {
        reference: 0,
        total: -1.0,
        weights: vec![],
    };
    assert!(matches!(
        Histogram::from_checkpoint(SM_PERCENT, DAY, &negative),
        Err(CheckpointError::BadTotal { .. })
    ));
}
