use super::{ActionsFile, FILE_NAME, load};
use crate::activity::WarningKind;
use crate::limits::LimitAction;

fn action(claim_uid: &str, outcome: &'static str) -> LimitAction {
    LimitAction {
        kind: WarningKind::OverShare,
        mode: "end",
        outcome,
        claim_uid: claim_uid.to_owned(),
        device: "gpu-0".to_owned(),
        pid: 4242,
        comm: "python".to_owned(),
        memory_used: 12 << 30,
        over_for_s: 3,
        at_ms: 1_000_500,
    }
}

#[test]
fn the_last_actions_are_written_when_they_change_and_load_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = ActionsFile::new(dir.path());
    assert!(
        !file.save([].iter()).unwrap(),
        "nothing to keep, nothing written"
    );
    assert!(!dir.path().join(FILE_NAME).exists());
    let ended = action("a", "terminated");
    let unclaimed = action("", "killed");
    assert!(file.save([&ended, &unclaimed].into_iter()).unwrap());
    assert!(
        !file.save([&ended, &unclaimed].into_iter()).unwrap(),
        "unchanged"
    );
    assert_eq!(load(dir.path()), [ended], "claims' actions only");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name != FILE_NAME)
        .collect();
    assert!(leftovers.is_empty(), "no temp file left: {leftovers:?}");
    assert!(
        file.save([].iter()).unwrap(),
        "the last one gone is written too"
    );
    assert!(load(dir.path()).is_empty());
}

#[test]
fn an_unknown_outcome_is_dropped_and_the_rest_stands() {
    let dir = tempfile::tempdir().unwrap();
    let mut file = ActionsFile::new(dir.path());
    let mut other = action("b", "killed");
    other.device = "gpu-1".to_owned();
    file.save([&action("a", "terminated"), &other].into_iter())
        .unwrap();
    let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
    let newer = text.replace("\"terminated\"", "\"frozen\"");
    gpuslice_cdi::write_atomic(dir.path(), FILE_NAME, newer.as_bytes(), 0o644).unwrap();
    assert_eq!(load(dir.path()), [other]);
}

#[test]
fn without_the_file_the_actions_activity_json_kept_are_read_and_then_written_here() {
    let dir = tempfile::tempdir().unwrap();
    let old = br#"{"version":1,"last_active":{"a":1},"open_episodes":[],"last_actions":[{"kind":"overshare","mode":"end","outcome":"terminated","claim_uid":"a","device":"gpu-0","pid":4242,"comm":"python","memory_used":12884901888,"over_for_s":3,"at_ms":1000500}]}"#;
    gpuslice_cdi::write_atomic(dir.path(), "activity.json", old, 0o644).unwrap();
    let found = load(dir.path());
    assert_eq!(found, [action("a", "terminated")]);
    let mut file = ActionsFile::new(dir.path());
    assert!(file.save(found.iter()).unwrap(), "moved into limits.json");
    gpuslice_cdi::write_atomic(
        dir.path(),
        "activity.json",
        br#"{"version":1,"last_active":{"a":1},"open_episodes":[]}"#,
        0o644,
    )
    .unwrap();
    assert_eq!(load(dir.path()), [action("a", "terminated")]);
}

#[test]
fn the_file_wins_over_activity_json_and_a_broken_one_loads_as_none() {
    let dir = tempfile::tempdir().unwrap();
    let old = br#"{"version":1,"last_active":{},"last_actions":[{"kind":"overshare","mode":"end","outcome":"terminated","claim_uid":"a","device":"gpu-0","pid":1,"comm":"x","memory_used":1,"over_for_s":1,"at_ms":1}]}"#;
    gpuslice_cdi::write_atomic(dir.path(), "activity.json", old, 0o644).unwrap();
    gpuslice_cdi::write_atomic(dir.path(), FILE_NAME, b"{\"version\":1}", 0o644).unwrap();
    assert!(load(dir.path()).is_empty(), "limits.json holds none");
    gpuslice_cdi::write_atomic(dir.path(), FILE_NAME, b"{not json", 0o644).unwrap();
    assert!(load(dir.path()).is_empty());
    gpuslice_cdi::write_atomic(dir.path(), FILE_NAME, b"{\"version\":9}", 0o644).unwrap();
    assert!(load(dir.path()).is_empty());
}
