use std::collections::BTreeMap;

use super::{FILE_NAME, Persister, WRITE_EVERY_S, load};

fn times(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(u, t)| ((*u).to_owned(), *t)).collect()
}

#[test]
fn a_missing_or_broken_file_loads_as_nothing() {
    let dir = tempfile::tempdir().unwrap();
    assert!(load(dir.path()).is_empty());
    gpuslice_cdi::write_atomic(dir.path(), FILE_NAME, b"{not json", 0o644).unwrap();
    assert!(load(dir.path()).is_empty());
    gpuslice_cdi::write_atomic(
        dir.path(),
        FILE_NAME,
        br#"{"version":9,"last_active":{"a":1}}"#,
        0o644,
    )
    .unwrap();
    assert!(
        load(dir.path()).is_empty(),
        "a newer format is not guessed at"
    );
}

#[test]
fn what_is_saved_loads_back_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut persister = Persister::new(dir.path(), BTreeMap::new());
    let saved = times(&[("a", 100), ("b", 200)]);
    assert!(persister.save(1_000, &saved, false).unwrap());
    assert_eq!(load(dir.path()), saved);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![FILE_NAME.to_owned()]);
}

#[test]
fn times_are_written_at_most_once_a_minute_but_claim_changes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut persister = Persister::new(dir.path(), BTreeMap::new());
    assert!(
        persister.save(0, &times(&[("a", 0)]), false).unwrap(),
        "new claim"
    );
    assert!(
        !persister.save(5, &times(&[("a", 5)]), false).unwrap(),
        "within the minute"
    );
    assert!(
        persister
            .save(5, &times(&[("a", 5), ("b", 5)]), false)
            .unwrap(),
        "claim added"
    );
    assert!(
        !persister
            .save(10, &times(&[("a", 10), ("b", 5)]), false)
            .unwrap()
    );
    assert!(
        persister.save(10, &times(&[("b", 5)]), false).unwrap(),
        "claim gone"
    );
    assert!(
        !persister
            .save(10 + WRITE_EVERY_S, &times(&[("b", 5)]), false)
            .unwrap(),
        "unchanged"
    );
    let later = times(&[("b", 10 + WRITE_EVERY_S)]);
    assert!(
        persister.save(10 + WRITE_EVERY_S, &later, false).unwrap(),
        "a minute on"
    );
    assert_eq!(load(dir.path()), later);
}

#[test]
fn a_forced_save_writes_only_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let on_disk = times(&[("a", 1)]);
    let mut persister = Persister::new(dir.path(), on_disk.clone());
    assert!(!persister.save(2, &on_disk, true).unwrap());
    assert!(!dir.path().join(FILE_NAME).exists(), "nothing new to write");
    assert!(persister.save(2, &times(&[("a", 2)]), true).unwrap());
    assert_eq!(load(dir.path()), times(&[("a", 2)]));
}

#[test]
fn a_write_into_a_missing_folder_fails_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("nope");
    let mut persister = Persister::new(&gone, BTreeMap::new());
    let err = persister.save(0, &times(&[("a", 0)]), false).unwrap_err();
    assert!(err.path.starts_with(&gone), "{err}");
}
