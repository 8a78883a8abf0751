use super::*;
use std::os::unix::fs::MetadataExt;

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o7777
}

#[test]
fn write_creates_the_file_with_the_exact_mode() {
    let dir = tempfile::tempdir().unwrap();
    for (name, mode) in [("a.json", 0o644), ("b.json", 0o600), ("c.json", 0o666)] {
        write_atomic(dir.path(), name, b"{}\n", mode).unwrap();
        let path = dir.path().join(name);
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
        // 0o666 would be narrowed by a 022 umask without the fchmod.
        assert_eq!(mode_of(&path), mode, "{name}");
    }
}

#[test]
fn overwrite_replaces_contents_and_mode() {
    let dir = tempfile::tempdir().unwrap();
    write_atomic(dir.path(), "spec.json", b"old contents, longer", 0o600).unwrap();
    write_atomic(dir.path(), "spec.json", b"new", 0o644).unwrap();
    let path = dir.path().join("spec.json");
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
    assert_eq!(mode_of(&path), 0o644);
}

#[test]
fn no_temp_file_is_left_behind() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5 {
        write_atomic(dir.path(), "spec.json", format!("{i}").as_bytes(), 0o644).unwrap();
    }
    assert_eq!(names(dir.path()), ["spec.json"]);
}

#[test]
fn failed_write_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let err = write_atomic(&missing, "spec.json", b"x", 0o644).unwrap_err();
    assert!(
        matches!(
            err,
            AtomicError::Io {
                step: "create temp file",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("missing"), "{err}");
    // Renaming over a directory fails after the temp file was written.
    std::fs::create_dir(dir.path().join("taken")).unwrap();
    let err = write_atomic(dir.path(), "taken", b"x", 0o644).unwrap_err();
    assert!(
        matches!(
            err,
            AtomicError::Io {
                step: "rename into place",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(names(dir.path()), ["taken"]);
}

#[test]
fn bad_names_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a/b", "..", ".", "", "/abs", "a\0b"] {
        let err = write_atomic(dir.path(), name, b"x", 0o644).unwrap_err();
        assert!(
            matches!(err, AtomicError::BadName { .. }),
            "{name:?}: {err}"
        );
        let err = remove_durable(dir.path(), name).unwrap_err();
        assert!(
            matches!(err, AtomicError::BadName { .. }),
            "{name:?}: {err}"
        );
    }
    assert!(names(dir.path()).is_empty());
}

#[test]
fn remove_returns_true_then_false() {
    let dir = tempfile::tempdir().unwrap();
    write_atomic(dir.path(), "spec.json", b"x", 0o644).unwrap();
    assert!(remove_durable(dir.path(), "spec.json").unwrap());
    assert!(!remove_durable(dir.path(), "spec.json").unwrap());
    assert!(names(dir.path()).is_empty());
}

#[test]
fn a_planted_symlink_is_replaced_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    write_atomic(outside.path(), "victim", b"untouched", 0o600).unwrap();
    let link = dir.path().join("spec.json");
    std::os::unix::fs::symlink(&victim, &link).unwrap();

    write_atomic(dir.path(), "spec.json", b"new", 0o644).unwrap();

    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_file()
    );
    assert_eq!(std::fs::read(&link).unwrap(), b"new");
    assert_eq!(std::fs::read(&victim).unwrap(), b"untouched");
    assert_eq!(mode_of(&victim), 0o600);
}

#[test]
fn stale_temp_files_from_the_same_pid_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let next = COUNTER.load(Ordering::Relaxed);
    let pid = std::process::id();
    let stale: Vec<String> = (next..next + 4)
        .map(|n| format!(".spec.json.tmp-{pid}-{n}"))
        .collect();
    for name in &stale {
        write_atomic(dir.path(), name, b"stale", 0o600).unwrap();
    }
    write_atomic(dir.path(), "spec.json", b"fresh", 0o644).unwrap();
    assert_eq!(
        std::fs::read(dir.path().join("spec.json")).unwrap(),
        b"fresh"
    );
    for name in &stale {
        assert_eq!(std::fs::read(dir.path().join(name)).unwrap(), b"stale");
    }
}

#[test]
fn temp_names_are_recognised() {
    assert!(is_temp_name(".spec.json.tmp-12-0"));
    assert!(!is_temp_name("spec.json"));
    assert!(!is_temp_name(".hidden.json"));
    assert!(!is_temp_name("spec.tmp-1-2"));
}

#[test]
fn sync_dir_reports_a_missing_dir() {
    let dir = tempfile::tempdir().unwrap();
    sync_dir(dir.path()).unwrap();
    let err = sync_dir(&dir.path().join("missing")).unwrap_err();
    assert!(err.to_string().starts_with("fsync directory "), "{err}");
}

#[test]
fn read_regular_reads_files_and_says_none_when_missing() {
    let dir = tempfile::tempdir().unwrap();
    write_atomic(dir.path(), "a.json", b"{\"a\":1}", 0o644).unwrap();
    let read = read_regular(dir.path(), "a.json", 1024).unwrap();
    assert_eq!(read.as_deref(), Some(&b"{\"a\":1}"[..]));
    assert_eq!(
        read_regular(dir.path(), "missing.json", 1024).unwrap(),
        None
    );
    assert!(matches!(
        read_regular(dir.path(), "../a.json", 1024),
        Err(AtomicError::BadName { .. })
    ));
}

#[test]
fn read_regular_refuses_a_symlink_even_to_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    write_atomic(dir.path(), "victim", b"secret", 0o600).unwrap();
    std::os::unix::fs::symlink(&victim, dir.path().join("spec.json")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.json")).unwrap();
    for name in ["spec.json", "zero.json"] {
        let err = read_regular(dir.path(), name, 1 << 20).unwrap_err();
        assert!(
            matches!(
                err,
                AtomicError::NotRegular {
                    what: "a symbolic link",
                    ..
                }
            ),
            "{name}: {err}"
        );
        assert!(err.to_string().contains(name), "{err}");
    }
}

#[test]
fn read_regular_neither_blocks_on_a_fifo_nor_reads_a_directory_or_socket() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        // Without O_NONBLOCK the open would wait for a writer forever.
        let err = read_regular(dir.path(), "fifo.json", 1024).unwrap_err();
        assert!(
            matches!(err, AtomicError::NotRegular { what: "a FIFO", .. }),
            "{err}"
        );
    } else {
        eprintln!("mkfifo not available: FIFO case not checked");
    }
    std::fs::create_dir(dir.path().join("dir.json")).unwrap();
    let err = read_regular(dir.path(), "dir.json", 1024).unwrap_err();
    assert!(
        matches!(
            err,
            AtomicError::NotRegular {
                what: "a directory",
                ..
            }
        ),
        "{err}"
    );
    let _listener = std::os::unix::net::UnixListener::bind(dir.path().join("sock.json")).unwrap();
    let err = read_regular(dir.path(), "sock.json", 1024).unwrap_err();
    // A socket cannot be opened at all (ENXIO) or is refused as one.
    assert!(
        matches!(
            err,
            AtomicError::NotRegular {
                what: "a socket",
                ..
            } | AtomicError::Io { .. }
        ),
        "{err}"
    );
}

#[test]
fn read_regular_refuses_a_file_over_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    write_atomic(dir.path(), "big.json", &[b'x'; 2048], 0o644).unwrap();
    let err = read_regular(dir.path(), "big.json", 1024).unwrap_err();
    assert!(
        matches!(
            err,
            AtomicError::TooLarge {
                size: 2048,
                max: 1024,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        read_regular(dir.path(), "big.json", 2048)
            .unwrap()
            .map(|b| b.len()),
        Some(2048)
    );
}

#[test]
fn the_observer_sees_each_step_with_the_files_as_a_crash_there_would_leave_them() {
    let dir = tempfile::tempdir().unwrap();
    write_atomic(dir.path(), "spec.json", b"old", 0o644).unwrap();
    let seen = std::cell::RefCell::new(Vec::new());
    let observe = |step: AtomicStep| {
        let files = names(dir.path());
        let target = std::fs::read(dir.path().join("spec.json")).ok();
        seen.borrow_mut().push((step, files, target));
    };
    write_atomic_observed(dir.path(), "spec.json", b"new", 0o644, &observe).unwrap();
    remove_durable_observed(dir.path(), "spec.json", &observe).unwrap();
    // Nothing to remove: no step.
    remove_durable_observed(dir.path(), "spec.json", &observe).unwrap();
    let seen = seen.into_inner();
    assert_eq!(seen.len(), 3, "{seen:?}");
    let (step, files, target) = &seen[0];
    assert_eq!(*step, AtomicStep::TempSynced);
    assert_eq!(files.len(), 2, "the temp file beside the target: {files:?}");
    assert!(files.iter().any(|f| is_temp_name(f)), "{files:?}");
    assert_eq!(target.as_deref(), Some(&b"old"[..]), "target unchanged");
    let (step, files, target) = &seen[1];
    assert_eq!(*step, AtomicStep::Renamed);
    assert_eq!(files, &["spec.json"]);
    assert_eq!(target.as_deref(), Some(&b"new"[..]));
    let (step, files, target) = &seen[2];
    assert_eq!(*step, AtomicStep::Unlinked);
    assert!(files.is_empty());
    assert!(target.is_none());
}
