use std::collections::BTreeMap;

use super::{FILE_NAME, Persister, Saved, WRITE_EVERY_S, load};
use crate::activity::episodes::SavedEpisode;
use crate::activity::snapshot::WarningKind;

fn times(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(u, t)| ((*u).to_owned(), *t)).collect()
}

#[test]
fn a_missing_or_broken_file_loads_as_nothing() {
    let dir = tempfile::tempdir().unwrap();
    assert!(load(dir.path()) == Saved::default());
    gpuslice_cdi::write_atomic(dir.path(), FILE_NAME, b"{not json", 0o644).unwrap();
    assert!(load(dir.path()) == Saved::default());
    gpuslice_cdi::write_atomic(
        dir.path(),
        FILE_NAME,
        br#"{"version":9,"last_active":{"a":1}}"#,
        0o644,
    )
    .unwrap();
    assert!(
        load(dir.path()) == Saved::default(),
        "a newer format is not guessed at"
    );
}

#[test]
fn what_is_saved_loads_back_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut persister = Persister::new(dir.path(), Saved::default());
    let saved = times(&[("a", 100), ("b", 200)]);
    assert!(persister.save(1_000, &saved, &[], false).unwrap());
    assert_eq!(load(dir.path()).last_active, saved);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![FILE_NAME.to_owned()]);
}

#[test]
fn times_are_written_at_most_once_a_minute_but_claim_changes_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut persister = Persister::new(dir.path(), Saved::default());
    assert!(
        persister.save(0, &times(&[("a", 0)]), &[], false).unwrap(),
        "new claim"
    );
    assert!(
        !persister.save(5, &times(&[("a", 5)]), &[], false).unwrap(),
        "within the minute"
    );
    assert!(
        persister
            .save(5, &times(&[("a", 5), ("b", 5)]), &[], false)
            .unwrap(),
        "claim added"
    );
    assert!(
        !persister
            .save(10, &times(&[("a", 10), ("b", 5)]), &[], false)
            .unwrap()
    );
    assert!(
        persister.save(10, &times(&[("b", 5)]), &[], false).unwrap(),
        "claim gone"
    );
    assert!(
        !persister
            .save(10 + WRITE_EVERY_S, &times(&[("b", 5)]), &[], false)
            .unwrap(),
        "unchanged"
    );
    let later = times(&[("b", 10 + WRITE_EVERY_S)]);
    assert!(
        persister
            .save(10 + WRITE_EVERY_S, &later, &[], false)
            .unwrap(),
        "a minute on"
    );
    assert_eq!(load(dir.path()).last_active, later);
}

#[test]
fn a_forced_save_writes_only_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let on_disk = times(&[("a", 1)]);
    let mut persister = Persister::new(
        dir.path(),
        Saved {
            last_active: on_disk.clone(),
            episodes: Vec::new(),
        },
    );
    assert!(!persister.save(2, &on_disk, &[], true).unwrap());
    assert!(!dir.path().join(FILE_NAME).exists(), "nothing new to write");
    assert!(persister.save(2, &times(&[("a", 2)]), &[], true).unwrap());
    assert_eq!(load(dir.path()).last_active, times(&[("a", 2)]));
}

#[test]
fn a_write_into_a_missing_folder_fails_with_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("nope");
    let mut persister = Persister::new(&gone, Saved::default());
    let err = persister
        .save(0, &times(&[("a", 0)]), &[], false)
        .unwrap_err();
    assert!(err.path.starts_with(&gone), "{err}");
}

fn episode(pid: u32) -> SavedEpisode {
    SavedEpisode {
        kind: WarningKind::Unclaimed,
        claim_uid: String::new(),
        scope: "gpu-1".to_owned(),
        device: "gpu-1".to_owned(),
        gpu: "gpu-1".to_owned(),
        pid,
        since: 40,
        message: format!("process {pid} on gpu-1 belongs to no gpuslice claim"),
    }
}

#[test]
fn open_episodes_are_written_at_once_and_load_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut persister = Persister::new(dir.path(), Saved::default());
    let claims = times(&[("a", 0)]);
    assert!(persister.save(0, &claims, &[], false).unwrap());
    assert!(
        persister.save(5, &claims, &[episode(7)], false).unwrap(),
        "an episode opened: written within the minute"
    );
    assert_eq!(
        load(dir.path()),
        Saved {
            last_active: claims.clone(),
            episodes: vec![episode(7)],
        }
    );
    assert!(!persister.save(6, &claims, &[episode(7)], false).unwrap());
    assert!(
        persister.save(7, &claims, &[], false).unwrap(),
        "it closed: written at once"
    );
    assert!(load(dir.path()).episodes.is_empty());
}

#[test]
fn a_file_from_before_episodes_were_kept_loads_with_none_open() {
    let dir = tempfile::tempdir().unwrap();
    gpuslice_cdi::write_atomic(
        dir.path(),
        FILE_NAME,
        br#"{"version":1,"last_active":{"a":1}}"#,
        0o644,
    )
    .unwrap();
    let saved = load(dir.path());
    assert_eq!(saved.last_active, times(&[("a", 1)]));
    assert!(saved.episodes.is_empty());
}

#[test]
fn a_file_that_still_holds_limit_actions_loads_its_times_and_is_written_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let before = br#"{"version":1,"last_active":{"a":1},"open_episodes":[],"last_actions":[{"kind":"overshare","mode":"end","outcome":"terminated","claim_uid":"a","device":"gpu-0","pid":7,"comm":"x","memory_used":1,"over_for_s":1,"at_ms":1}]}"#;
    gpuslice_cdi::write_atomic(dir.path(), FILE_NAME, before, 0o644).unwrap();
    let loaded = load(dir.path());
    assert_eq!(loaded.last_active, times(&[("a", 1)]));
    let mut persister = Persister::new(dir.path(), loaded);
    assert!(
        persister
            .save(1_000, &times(&[("a", 2)]), &[], true)
            .unwrap()
    );
    let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
    assert!(!text.contains("last_actions"), "{text}");
}
