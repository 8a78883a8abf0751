//! Limits as NVIDIA's control daemon takes and prints them (device
//! ordinals, the lossy read-back), the pipe dir it can bind, the PATH it
//! finds its server on, and where its log is; none of them needs python3.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{BOUND, GPU_A, GPU_B, key};
use crate::claims::mps_daemon::folders::{MAX_PIPE_DIR, strip_log_prefix};
use crate::claims::mps_daemon::limits::Expected;
use crate::claims::mps_daemon::manager::daemon_path;
use crate::claims::mps_daemon::*;

const MIB: u64 = 1024 * 1024;

fn pinned(limits: &[(&str, u64)]) -> MpsLimits {
    MpsLimits {
        active_thread_percentage: None,
        pinned_memory_limits: limits
            .iter()
            .map(|(uuid, mib)| ((*uuid).to_owned(), mib * MIB))
            .collect(),
    }
}

#[test]
fn pinned_limits_go_by_the_ordinal_of_the_daemons_visible_devices() {
    // The key sorts its UUIDs, and CUDA_VISIBLE_DEVICES lists them so: A is
    // device 0 and B device 1 whatever order the claim named them in.
    let k = key(&[GPU_B, GPU_A]);
    let l = pinned(&[(GPU_B, 10240), (GPU_A, 16311)]);
    assert_eq!(
        l.commands(&k).unwrap(),
        [
            "set_default_device_pinned_mem_limit 0 16311M",
            "set_default_device_pinned_mem_limit 1 10240M",
        ]
    );
    let checks = l.checks(&k).unwrap();
    assert_eq!(checks[0].0, "get_default_device_pinned_mem_limit 0");
    assert_eq!(checks[1].0, "get_default_device_pinned_mem_limit 1");
    // What the daemon prints: 16311 MiB rounded down to 15 GiB.
    assert!(checks[0].1.matches("15G"), "{}", checks[0].1);
    assert!(checks[1].1.matches("10G"));
    // A MIG slice alone in its daemon is device 0.
    let slice = "MIG-5d5e6f70-0000-0000-0000-000000000000";
    assert_eq!(
        pinned(&[(slice, 4096)]).commands(&key(&[slice])).unwrap(),
        ["set_default_device_pinned_mem_limit 0 4096M"]
    );
}

#[test]
fn a_pinned_limit_reads_back_exactly_as_the_daemon_prints_it() {
    for (mib, shown) in [
        (1, "1M"),
        (512, "512M"),
        (1023, "1023M"),
        (1024, "1G"),
        (2047, "1G"),
        (2049, "2G"),
        (16311, "15G"),
        (40779, "39G"),
        (81559, "79G"),
        (1_048_576, "1024G"),
    ] {
        let expected = Expected::Mib(mib);
        assert_eq!(expected.shown(), shown);
        assert!(expected.matches(shown), "{mib} MiB: {shown}");
        assert!(expected.matches(&format!("{mib}M")), "{mib} MiB unrounded");
        assert!(!expected.matches(""), "nothing printed means no limit");
    }
    let expected = Expected::Mib(16311);
    for wrong in ["16G", "16311", "15", "15GB", "16311MB", "0"] {
        assert!(!expected.matches(wrong), "{wrong}");
    }
    assert!(Expected::Percentage(50).matches("50.0"));
    assert!(!Expected::Percentage(50).matches("50.5"));
    let said = Expected::Mib(16311).to_string();
    assert!(
        said.contains("\"15G\"") && said.contains("16311 MiB"),
        "{said}"
    );
}

#[test]
fn a_limit_the_daemon_cannot_take_is_refused_by_name() {
    let err = pinned(&[(GPU_B, 1024)])
        .commands(&key(&[GPU_A]))
        .unwrap_err();
    assert!(matches!(err, MpsError::LimitDevice { .. }), "{err}");
    assert!(err.to_string().contains("not one of the daemon's devices"));
    let many: Vec<String> = (0..33).map(|i| format!("GPU-{i:08}-0000")).collect();
    let k = MpsKey::new(many.iter().map(String::as_str));
    let last = k.uuids()[32].clone();
    let err = pinned(&[(last.as_str(), 1024)]).checks(&k).unwrap_err();
    assert!(
        err.to_string().contains("device 32 of the daemon") && err.to_string().contains("0 to 31"),
        "{err}"
    );
    let first = k.uuids()[0].clone();
    pinned(&[(first.as_str(), 1024)]).commands(&k).unwrap();
}

#[test]
fn a_pipe_dir_too_long_for_the_daemon_is_refused_before_anything_starts() {
    let hash_and_pipe = "/0123456789abcdef/pipe".len();
    assert_eq!(MAX_PIPE_DIR, 87);
    assert_eq!(
        crate::config::MAX_MPS_RUN_DIR + "/mps".len() + hash_and_pipe,
        MAX_PIPE_DIR,
        "config's run_dir bound and the daemon's pipe dir bound agree"
    );
    let dir = tempfile::tempdir().unwrap();
    let room = MAX_PIPE_DIR - hash_and_pipe;
    let at = |len: usize| {
        let base = dir.path().join("m");
        let pad = len - base.as_os_str().len();
        base.join("x".repeat(pad - 1))
    };
    let k = key(&[GPU_A]);
    DaemonFolders::new(&at(room), &k).check_pipe_dir().unwrap();
    let fake = Arc::new(FakeMps::default());
    let manager = MpsManager::new(
        MpsSettings {
            control_program: "nvidia-cuda-mps-control".into(),
            mps_dir: at(room + 1),
            ready_bound: BOUND,
            bind_shm: false,
        },
        fake.clone(),
        fake.clone(),
        Arc::new(NoShmMount),
    );
    let err = manager
        .acquire("claim-1", &k, &MpsLimits::default())
        .unwrap_err();
    assert!(
        matches!(err, MpsError::PipeDirTooLong { length: 88, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("[mps] run_dir"), "{err}");
    assert_eq!(fake.starts(), 0, "nothing started");
    assert!(!at(room + 1).exists(), "nothing made");
    // The same bound, at config time.
    let long = format!("/{}", "r".repeat(crate::config::MAX_MPS_RUN_DIR));
    let text = format!("[mps]\nrun_dir = \"{long}\"\n");
    let err = crate::config::Config::parse(&text, "t.toml".as_ref(), "/".as_ref()).unwrap_err();
    assert!(err.to_string().contains("mps.run_dir"), "{err}");
    let fits = format!(
        "[mps]\nrun_dir = \"{}\"\n",
        &long[..crate::config::MAX_MPS_RUN_DIR]
    );
    crate::config::Config::parse(&fits, "t.toml".as_ref(), "/".as_ref()).unwrap();
}

#[test]
fn the_server_is_found_beside_the_control_program() {
    let path = daemon_path("/opt/nv/root/usr/bin/nvidia-cuda-mps-control".as_ref());
    assert_eq!(
        path,
        "/opt/nv/root/usr/bin:/opt/nv/root/usr/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
    );
    assert_eq!(
        daemon_path("/usr/bin/gpuslice-no-such-program".as_ref()),
        "/usr/bin:/usr/sbin:/sbin:/bin"
    );
    // A link (Debian's alternatives): its own folder first, then the real one's.
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real/bin");
    std::fs::create_dir_all(&real).unwrap();
    let program = real.join("nvidia-cuda-mps-control");
    gpuslice_cdi::write_atomic(&real, "nvidia-cuda-mps-control", b"", 0o755).unwrap();
    let link = dir.path().join("nvidia-cuda-mps-control");
    std::os::unix::fs::symlink(&program, &link).unwrap();
    let real = std::fs::canonicalize(&real).unwrap();
    let want = format!(
        "{}:{}:{}",
        dir.path().display(),
        real.display(),
        real.parent().unwrap().join("sbin").display()
    );
    assert!(
        daemon_path(&link).starts_with(&want),
        "{}",
        daemon_path(&link)
    );
}

#[test]
fn a_failed_start_quotes_the_end_of_the_daemons_log() {
    let dir = tempfile::tempdir().unwrap();
    let folders = DaemonFolders::at(dir.path().join("0123456789abcdef"));
    folders.create(&key(&[GPU_A])).unwrap();
    assert!(folders.log_note(None).ends_with("control.log (empty)"));
    let log = "[2026-12-05 14:00:41.534 Control 12773] Starting control daemon using socket /x\n\
               [2026-12-05 14:00:41.534 Other  1280] Using log directory: /y\n\
               An instance of this daemon is already running\n";
    gpuslice_cdi::write_atomic(&folders.log_dir(), "control.log", log.as_bytes(), 0o644).unwrap();
    let note = folders.log_note(None);
    assert!(
        note.ends_with(
            "control.log, which ended: Starting control daemon using socket /x | Using log \
             directory: /y | An instance of this daemon is already running"
        ),
        "{note}"
    );
    assert_eq!(
        folders.log_note(Some("gpuslice-mps-0123456789abcdef.service")),
        "journalctl -u gpuslice-mps-0123456789abcdef.service"
    );
    assert_eq!(
        strip_log_prefix("[not a log prefix] x"),
        "[not a log prefix] x"
    );
    let err = MpsError::DiedDuringStart {
        pipe_dir: folders.pipe_dir(),
        log: note,
    };
    assert!(err.to_string().contains("(its log: "), "{err}");
}

#[test]
fn the_in_process_fake_answers_the_ordinals_as_the_daemon_does() {
    let fake = Arc::new(FakeMps::default());
    let dir = tempfile::tempdir().unwrap();
    let manager = MpsManager::new(
        MpsSettings {
            control_program: "nvidia-cuda-mps-control".into(),
            mps_dir: dir.path().join("mps"),
            ready_bound: BOUND,
            bind_shm: false,
        },
        fake.clone(),
        fake.clone(),
        Arc::new(NoShmMount),
    );
    let k = key(&[GPU_A, GPU_B]);
    let limits = MpsLimits {
        active_thread_percentage: Some(50),
        pinned_memory_limits: BTreeMap::from([(GPU_B.to_owned(), 16311 * MIB)]),
    };
    let daemon = manager.acquire("claim-1", &k, &limits).unwrap();
    assert_eq!(
        fake.send(&daemon.folders, "get_default_device_pinned_mem_limit 1")
            .unwrap(),
        "15G"
    );
    assert_eq!(
        fake.send(&daemon.folders, "get_default_device_pinned_mem_limit 0")
            .unwrap(),
        ""
    );
    manager.release("claim-1", &k).unwrap();
}
