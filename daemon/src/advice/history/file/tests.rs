use proptest::prelude::*;

use super::super::tests::figures;
use super::super::{PEAK_WINDOW_S, histogram};
use super::*;

const SETTINGS: HistorySettings = HistorySettings {
    interval_s: 5,
    half_life_s: 86_400,
    max_claims: 16,
};

fn sample_history() -> History {
    let mut h = History::new(SETTINGS);
    for i in 0..500i64 {
        let bytes = 1u64 << (20 + (i % 13));
        let sm = u32::try_from(i % 101).unwrap();
        h.observe(i * 5, &[figures("uid-1", "gpu-3", Some(bytes), Some(sm))]);
        h.observe(
            i * 5,
            &[figures(
                "uid-2",
                "gpu-0-mig-1g10gb-6",
                Some(bytes / 2),
                None,
            )],
        );
    }
    h
}

fn warning_of(bytes: &[u8]) -> LoadWarning {
    let dir = tempfile::tempdir().unwrap();
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.path().join(FILE_NAME))
        .unwrap();
    std::io::Write::write_all(&mut out, bytes).unwrap();
    let (history, warning) = load(dir.path(), SETTINGS);
    assert!(history.claims().is_empty());
    warning.expect("a warning")
}

#[test]
fn a_missing_file_is_an_empty_history_without_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let (history, warning) = load(dir.path(), SETTINGS);
    assert!(history.claims().is_empty());
    assert!(warning.is_none());
}

#[test]
fn save_then_load_gives_the_same_history_and_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let h = sample_history();
    let written = save(dir.path(), &h).unwrap();
    let on_disk = std::fs::read(dir.path().join(FILE_NAME)).unwrap();
    assert_eq!(written, on_disk.len());
    let (loaded, warning) = load(dir.path(), SETTINGS);
    assert!(warning.is_none());
    assert_eq!(to_bytes(&loaded), on_disk);
    let (a, b) = (
        h.device("uid-1", "gpu-3").unwrap(),
        loaded.device("uid-1", "gpu-3").unwrap(),
    );
    assert_eq!(
        (a.first, a.last, a.observed_s, a.samples),
        (b.first, b.last, b.observed_s, b.samples)
    );
    assert_eq!(a.memory_peak, b.memory_peak);
    assert_eq!(a.sm.percentile(0.95), b.sm.percentile(0.95));
    assert!(b.sm.percentile(0.95).is_some());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "no temp file left");
}

#[test]
fn garbage_truncated_unknown_version_and_bad_buckets_start_empty_with_one_warning() {
    let good = to_bytes(&sample_history());
    let garbage = warning_of(b"not json at all");
    assert!(matches!(garbage, LoadWarning::Garbage { .. }), "{garbage}");
    let truncated = warning_of(&good[..good.len() / 2]);
    assert!(
        matches!(truncated, LoadWarning::Truncated { .. }),
        "{truncated}"
    );
    assert!(
        truncated.to_string().contains("is cut short"),
        "{truncated}"
    );
    let future = warning_of(br#"{"version":2,"whatever":[]}"#);
    assert!(
        future
            .to_string()
            .contains("has format version 2, this gpusliced reads 1; starting empty"),
        "{future}"
    );
    let bad_bucket = br#"{"version":1,"half_life_s":86400,"claims":{"u":{"ns":"n","name":"c",
        "devices":{"gpu-0":{"first":0,"last":0,"obs":0,"n":1,"act":1,
        "sh":{"ref":0,"t":1.0,"w":[[21,10000]]}}}}}}"#;
    let invalid = warning_of(bad_bucket);
    assert_eq!(
        invalid
            .to_string()
            .split(": ")
            .skip(1)
            .collect::<Vec<_>>()
            .join(": "),
        "claim u device gpu-0: bucket 21 is past the last (20); starting empty, it is \
         replaced at the next save"
    );
}

#[test]
fn an_unreadable_file_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(FILE_NAME)).unwrap();
    let (history, warning) = load(dir.path(), SETTINGS);
    assert!(history.claims().is_empty());
    assert!(
        matches!(warning, Some(LoadWarning::Unreadable { .. })),
        "{warning:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any history survives a save and a load byte for byte, and no device
    /// record passes its bound.
    #[test]
    fn round_trip_and_size_bound(
        samples in prop::collection::vec(
            (0i64..(40 * 86_400), prop::option::of(0u64..(900u64 << 30)), prop::option::of(0u32..=100)),
            1..400,
        ),
    ) {
        let mut sorted = samples.clone();
        sorted.sort_by_key(|s| s.0);
        let mut h = History::new(SETTINGS);
        for (now, memory, sm) in &sorted {
            h.observe(*now, &[figures("u", "g", *memory, *sm)]);
        }
        let bytes = to_bytes(&h);
        let loaded = parse(&bytes, Path::new("x"), SETTINGS).unwrap();
        prop_assert_eq!(to_bytes(&loaded), bytes.clone());
        let envelope = br#"{"version":1,"half_life_s":86400,"claims":{"u":{"ns":"ml","name":"claim-u","devices":{"g":}}}}"#.len() + 1;
        prop_assert!(bytes.len() - envelope <= MAX_DEVICE_RECORD_BYTES, "{}", bytes.len());
    }
}

#[test]
fn the_worst_case_record_fits_its_bound() {
    let mut h = History::new(SETTINGS);
    // Every memory bucket and every SM bucket, one window each, same weight.
    for i in 0..histogram::MEMORY.buckets() {
        let now = i64::try_from(i).unwrap() * PEAK_WINDOW_S;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "test"
        )]
        let bytes = (histogram::MEMORY.start(i) * 1.01) as u64;
        let sm = u32::try_from(i % 21).unwrap() * 5;
        h.observe(
            now,
            &[figures("u", "g", Some(bytes.max(1)), Some(sm.max(1)))],
        );
    }
    let d = h.device("u", "g").unwrap();
    assert_eq!(
        d.memory.checkpoint().unwrap().weights.len(),
        histogram::MEMORY.buckets()
    );
    assert_eq!(d.sm.checkpoint().unwrap().weights.len(), 21);
    let bytes = to_bytes(&h).len();
    assert!(bytes <= MAX_DEVICE_RECORD_BYTES + 100, "{bytes}");
    assert!(
        bytes > MAX_DEVICE_RECORD_BYTES - 600,
        "the bound is not loose: {bytes}"
    );
}
