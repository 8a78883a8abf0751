use std::collections::HashSet;
use std::io::ErrorKind;
use std::path::Path;

use super::{ProcError, ProcFs, read_error, start_time};
use crate::cdi_build::marker::claim_env;

const UID: &str = "0d5f2a1c-3b4e-4f60-8a9b-1c2d3e4f5a6b";

fn stat_line(pid: u32, name: &str, start: u64) -> String {
    // Fields 3..21, then the start time (22), then more.
    format!("{pid} ({name}) S 1 1 1 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 {start} 100 200 300\n")
}

fn fake(root: &Path, pid: u32, name: &str, start: u64, env: &[String]) {
    let dir = root.join("proc").join(pid.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let mut environ = Vec::new();
    for var in env {
        environ.extend_from_slice(var.as_bytes());
        environ.push(0);
    }
    gpuslice_cdi::write_atomic(&dir, "environ", &environ, 0o644).unwrap();
    gpuslice_cdi::write_atomic(&dir, "comm", format!("{name}\n").as_bytes(), 0o644).unwrap();
    gpuslice_cdi::write_atomic(&dir, "stat", stat_line(pid, name, start).as_bytes(), 0o644)
        .unwrap();
}

#[test]
fn start_time_is_field_22_even_with_odd_names() {
    assert_eq!(start_time(&stat_line(7, "python3", 872_574)), Some(872_574));
    assert_eq!(start_time(&stat_line(7, "a) b (c", 5)), Some(5));
    assert_eq!(start_time("7 (x) S 1 2"), None);
    assert_eq!(start_time("garbage"), None);
}

#[test]
fn the_real_proc_gives_this_process_a_start_time_and_its_environment() {
    let mut procfs = ProcFs::default();
    let info = procfs.inspect(std::process::id()).unwrap();
    assert!(!info.name.is_empty());
    assert!(info.start_time > 0);
    assert_eq!(
        procfs.start_time_of(std::process::id()).unwrap(),
        info.start_time
    );
    assert!(
        !info.own_daemon,
        "only the sampler knows gpusliced's daemons"
    );
    assert_eq!(info.parent, std::os::unix::process::parent_id());
}

#[test]
fn name_and_markers_are_read_under_the_root() {
    let dir = tempfile::tempdir().unwrap();
    fake(
        dir.path(),
        42,
        "python",
        100,
        &["A=1".into(), claim_env(UID)],
    );
    let info = ProcFs::new(dir.path()).inspect(42).unwrap();
    assert_eq!(info.name, "python");
    assert!(info.marks.claims.contains(UID));
    assert_eq!(info.start_time, 100);
}

#[test]
fn the_cache_holds_while_the_start_time_does_and_a_reused_pid_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut procfs = ProcFs::new(dir.path());
    fake(dir.path(), 42, "first", 100, &[claim_env(UID)]);
    assert_eq!(procfs.inspect(42).unwrap().name, "first");
    // Same start time: the environment is not read again.
    fake(dir.path(), 42, "changed", 100, &[]);
    let cached = procfs.inspect(42).unwrap();
    assert_eq!(cached.name, "first");
    assert_eq!(cached.start_time, 100);
    assert!(cached.marks.claims.contains(UID));
    // A new process with the same pid.
    fake(dir.path(), 42, "second", 101, &[]);
    let fresh = procfs.inspect(42).unwrap();
    assert_eq!(fresh.name, "second");
    assert_eq!(fresh.start_time, 101);
    assert_eq!(procfs.start_time_of(42).unwrap(), 101);
    assert!(matches!(
        procfs.start_time_of(43),
        Err(ProcError::NotFound { pid: 43 })
    ));
    assert!(fresh.marks.claims.is_empty());
}

#[test]
fn pids_not_seen_are_evicted() {
    let dir = tempfile::tempdir().unwrap();
    let mut procfs = ProcFs::new(dir.path());
    fake(dir.path(), 1, "a", 1, &["A=1".into()]);
    fake(dir.path(), 2, "b", 1, &["B=1".into()]);
    procfs.inspect(1).unwrap();
    procfs.inspect(2).unwrap();
    assert_eq!(procfs.cached(), 2);
    procfs.retain(&HashSet::from([2]));
    assert_eq!(procfs.cached(), 1);
    procfs.retain(&HashSet::new());
    assert_eq!(procfs.cached(), 0);
}

#[test]
fn a_missing_process_is_not_found_and_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let mut procfs = ProcFs::new(dir.path());
    let err = procfs.inspect(9).unwrap_err();
    assert!(matches!(err, ProcError::NotFound { pid: 9 }), "{err:?}");
    assert!(err.unclaimed_reason().contains("CAP_SYS_PTRACE"));
    assert_eq!(procfs.cached(), 0);
}

#[test]
fn a_malformed_stat_is_its_own_error() {
    let dir = tempfile::tempdir().unwrap();
    let proc_dir = dir.path().join("proc/5");
    std::fs::create_dir_all(&proc_dir).unwrap();
    gpuslice_cdi::write_atomic(&proc_dir, "stat", b"5 (x) S", 0o644).unwrap();
    let err = ProcFs::new(dir.path()).inspect(5).unwrap_err();
    assert!(matches!(err, ProcError::Stat { pid: 5 }), "{err:?}");
}

#[test]
fn eacces_says_what_gpusliced_needs() {
    let err = read_error(
        3,
        "environ",
        std::io::Error::from(ErrorKind::PermissionDenied),
    );
    assert!(matches!(
        err,
        ProcError::PermissionDenied {
            pid: 3,
            file: "environ"
        }
    ));
    assert_eq!(
        err.unclaimed_reason(),
        "environment unreadable: permission denied (gpusliced needs CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH)"
    );
    let other = read_error(3, "environ", std::io::Error::from_raw_os_error(libc::EIO));
    assert!(matches!(other, ProcError::Read { .. }));
    assert!(
        other
            .unclaimed_reason()
            .starts_with("environment unreadable: ")
    );
}

#[test]
fn an_empty_environment_is_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let mut procfs = ProcFs::new(dir.path());
    fake(dir.path(), 42, "sh", 100, &[]);
    assert!(procfs.inspect(42).unwrap().marks.claims.is_empty());
    assert_eq!(procfs.cached(), 0, "caught mid-exec, or a zombie");
    // The same process, its environment set up now.
    fake(dir.path(), 42, "sh", 100, &[claim_env(UID)]);
    assert!(procfs.inspect(42).unwrap().marks.claims.contains(UID));
    assert_eq!(procfs.cached(), 1);
}
