//! A real systemd: the gpuslice .deb installed in a Debian 12 rootfs booted
//! with systemd-nspawn (systemd 252 as PID 1). Each test is one boot whose
//! `systemd.run=` is a script of this folder, after `common.sh` (the log, the
//! helpers, the system bus, the stand-ins, the unit's drop-in):
//!
//! - `service.rs` (`in_container.sh`): the service's life, MPS control
//!   daemons as transient units, the metrics drop-ins, remove and purge;
//! - `upgrade.rs` (`upgrade.sh`): an upgrade of the installed .deb to a newer
//!   version of itself and the downgrade back, with a claim of every kind
//!   prepared and MPS daemons running;
//! - `limits.rs` (`limits.sh`): `[limits] overshare = "end"` ending another
//!   user's process with the unit's `CAP_KILL`, and refused without it;
//! - `rack.rs` (`rack.sh`, after `rack_common.sh`): several containers at
//!   once, a rack of simulated GB200 nodes on a network of their own
//!   (`machines.rs` boots them);
//! - `compute_domain.rs` (`compute_domain.sh`, after `rack_common.sh`): a ComputeDomain on
//!   a rack of three, its IMEX daemons run by gpusliced as instances of the
//!   shipped `gpuslice-imex@.service`.
//!
//! This module owns what the tests share: the .deb, the cached rootfs, the
//! skip rules and the boot. The .deb comes from `packaging/build.sh` (GPUSLICE_DEB,
//! else the newest `<target>/debian/gpuslice_*_<this host's architecture>.deb`;
//! `build.sh --amd64` makes only that one); the MPS control program,
//! nvidia-smi and the IMEX daemon and its client are the stand-ins of
//! tests/tools (python3 is in the rootfs). The rootfs is made once by
//! debootstrap (about 40 s, 290 MB) and cached in /var/cache/gpuslice-test
//! (or GPUSLICE_NSPAWN_CACHE) under a name that changes with its package
//! list; each boot runs on a throwaway overlay of it, one boot (or one rack
//! of boots) at a time.

mod compute_domain;
mod limits;
mod machines;
mod rack;
mod service;
mod upgrade;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

use crate::tools::{first_missing, is_root, repo_root, run, skip};

/// What every script sources first.
const COMMON: &str = include_str!("common.sh");
/// debootstrap, boot, install and all checks of one test (a bound, not a wait).
const NSPAWN_TIMEOUT_S: &str = "600";
/// Packages debootstrap adds to minbase: systemd as PID 1, the system bus
/// (sd_notify needs neither, the MPS units need it), python3 for the
/// stand-ins (the IMEX daemon's needs more of the standard library than
/// python3-minimal has: concurrent.futures, secrets).
const ROOTFS_PACKAGES: &str = "systemd,systemd-sysv,dbus,python3";
/// The cached rootfs's folder: a new name whenever ROOTFS_PACKAGES changes,
/// so an older cache (with less of python3) is never taken for this one.
const ROOTFS_NAME: &str = "bookworm-rootfs-3";
/// The stand-ins of tests/tools every test folder gets.
const STAND_INS: [&str; 5] = [
    "fake-mps-control",
    "fake-nvidia-smi",
    "fake-nvidia-imex",
    "fake-nvidia-imex-ctl",
    "fake-imex-workload",
];
/// One boot (or one rack of them) at a time: the tests use one rootfs, made
/// once, and two cores.
static ONE_BOOT: Mutex<()> = Mutex::new(());

/// The .deb to install: GPUSLICE_DEB, else the newest one packaging/build.sh
/// left in the target dir for this host's architecture (it builds amd64 and
/// arm64; the rootfs is the host's).
fn deb() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GPUSLICE_DEB") {
        return Some(PathBuf::from(path));
    }
    let suffix = match std::env::consts::ARCH {
        "x86_64" => "_amd64.deb",
        "aarch64" => "_arm64.deb",
        _ => return None,
    };
    let debian = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()?
        .join("debian");
    std::fs::read_dir(debian)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("gpuslice_") && name.ends_with(suffix)
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
}

/// The cached bookworm rootfs, made by debootstrap the first time.
fn rootfs(test: &str) -> Result<PathBuf, String> {
    let cache = std::env::var_os("GPUSLICE_NSPAWN_CACHE")
        .map_or_else(|| PathBuf::from("/var/cache/gpuslice-test"), PathBuf::from);
    let root = cache.join(ROOTFS_NAME);
    if root.join("usr/lib/systemd/systemd").is_file() && root.join("usr/bin/python3").exists() {
        return Ok(root);
    }
    std::fs::create_dir_all(&cache).map_err(|e| format!("create {}: {e}", cache.display()))?;
    // Built aside and renamed, so a cut-short debootstrap is never taken
    // for a rootfs and two test runs never share a half-made one.
    let partial = cache.join(format!("{ROOTFS_NAME}.partial-{}", std::process::id()));
    let mirror = std::env::var("GPUSLICE_DEBIAN_MIRROR")
        .unwrap_or_else(|_| "http://deb.debian.org/debian".to_owned());
    eprintln!(
        "{test}: debootstrap of Debian 12 into {} (once)",
        root.display()
    );
    run(Command::new("debootstrap")
        .arg("--variant=minbase")
        .arg(format!("--include={ROOTFS_PACKAGES}"))
        .arg("bookworm")
        .arg(&partial)
        .arg(&mirror))
    .map_err(|e| {
        let _ = std::fs::remove_dir_all(&partial);
        format!("debootstrap failed (network to {mirror}?): {e}")
    })?;
    if std::fs::rename(&partial, &root).is_err() {
        // Another run finished first; use its rootfs.
        let _ = std::fs::remove_dir_all(&partial);
    }
    Ok(root)
}

/// Writes `text` as the new file `path` with `mode`.
fn write_file(path: &Path, text: &str, mode: u32) {
    crate::common::files::write_new(path, text);
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}

/// Writes `text` as the executable `path`.
fn write_script(path: &Path, text: &str) {
    write_file(path, text, 0o755);
}

/// The test's folder, bound at /out: the .deb, the stand-ins, a driver root
/// (examples/sim-root), common.sh and the test's script as `name`.
fn test_folder(deb: &Path, name: &str, script: &str) -> tempfile::TempDir {
    let out = tempfile::tempdir().expect("temp dir");
    std::fs::copy(deb, out.path().join("gpuslice.deb")).expect("copy the .deb");
    for stand_in in STAND_INS {
        std::fs::copy(
            repo_root().join("tests/tools").join(stand_in),
            out.path().join(stand_in),
        )
        .unwrap_or_else(|e| panic!("copy the stand-in {stand_in}: {e}"));
    }
    run(Command::new("cp")
        .arg("-a")
        .arg(repo_root().join("examples/sim-root"))
        .arg(out.path().join("sim-root")))
    .unwrap_or_else(|e| panic!("{e}"));
    write_script(&out.path().join("common.sh"), COMMON);
    write_script(&out.path().join(name), script);
    out
}

/// The .deb, once the tests can run here: root, the `tools` and a .deb;
/// without one of them, `None` after [`skip`] said why (it panics instead
/// under GPUSLICE_REQUIRE_TOOLS=1).
fn ready(test: &str, tools: &[&str]) -> Option<PathBuf> {
    if !is_root() {
        skip(test, "systemd-nspawn and dpkg in a container need root");
        return None;
    }
    if let Some(tool) = first_missing(tools) {
        skip(
            test,
            &format!(
                "`{tool}` is not installed (apt-get install systemd-container debootstrap iproute2)"
            ),
        );
        return None;
    }
    let deb = deb().filter(|d| d.is_file());
    if deb.is_none() {
        skip(
            test,
            "no gpuslice .deb: run packaging/build.sh (or build.sh --amd64) first, or set GPUSLICE_DEB",
        );
    }
    deb
}

/// Boots the cached rootfs with the .deb and `script` (saved as `name`) as
/// its `systemd.run=`, and asserts it ends with PASS; skips (or, under
/// GPUSLICE_REQUIRE_TOOLS=1, fails) without root, the tools or a .deb.
fn boot(test: &str, name: &str, script: &str) {
    let Some(deb) = ready(test, &["systemd-nspawn", "debootstrap", "timeout"]) else {
        return;
    };
    let _one_boot = ONE_BOOT.lock().unwrap_or_else(PoisonError::into_inner);
    eprintln!("{test}: installing {}", deb.display());
    let root = rootfs(test).unwrap_or_else(|e| panic!("{e}"));
    let out = test_folder(&deb, name, script);
    let status = Command::new("timeout")
        .args([
            "--kill-after=30",
            NSPAWN_TIMEOUT_S,
            "systemd-nspawn",
            "--quiet",
            "--directory",
        ])
        .arg(&root)
        .args([
            "--volatile=overlay",
            "--register=no",
            "--keep-unit",
            "--console=pipe",
        ])
        .arg(format!("--bind={}:/out", out.path().display()))
        .args(["--boot", "--"])
        .arg(format!("systemd.run=/out/{name}"))
        .output()
        .expect("run systemd-nspawn");
    let log = std::fs::read_to_string(out.path().join("log")).unwrap_or_default();
    eprintln!("{log}");
    assert!(
        status.status.success() && log.trim_end().ends_with("PASS"),
        "{test}: the script failed under systemd in nspawn ({}):\n{log}\nnspawn stderr:\n{}",
        status.status,
        String::from_utf8_lossy(&status.stderr)
    );
}

/// Boots a rack of `count` nodes at once (`machines.rs`), each with the
/// .deb, `rack_common.sh`, its `node.env` and `script` (saved as `name`) as
/// its `systemd.run=`, and asserts every node ends with PASS; skips as
/// [`boot`] does, and also without `ip` or a cgroup2 hierarchy.
fn boot_rack(test: &str, name: &str, script: &str, count: u8) {
    let Some(deb) = ready(test, &["systemd-nspawn", "debootstrap", "timeout", "ip"]) else {
        return;
    };
    let hierarchies = match machines::cgroup_hierarchies() {
        Ok(hierarchies) => hierarchies,
        Err(why) => return skip(test, &why),
    };
    let _one_boot = ONE_BOOT.lock().unwrap_or_else(PoisonError::into_inner);
    eprintln!("{test}: installing {} on {count} nodes", deb.display());
    let root = rootfs(test).unwrap_or_else(|e| panic!("{e}"));
    let rack = machines::Rack::new(count, hierarchies);
    let shared = tempfile::tempdir().expect("temp dir");
    let outs: Vec<tempfile::TempDir> = (0..rack.nodes.len())
        .map(|i| {
            let out = test_folder(&deb, name, script);
            rack.fill(out.path(), i);
            out
        })
        .collect();
    let paths: Vec<&Path> = outs.iter().map(tempfile::TempDir::path).collect();
    let ended = machines::boot_all(&rack, &root, &paths, shared.path(), name);
    let report: String = rack
        .nodes
        .iter()
        .zip(&ended)
        .map(|(n, e)| e.report(n))
        .collect();
    drop(rack);
    eprintln!("{report}");
    assert!(
        ended.iter().all(machines::Ended::passed),
        "{test}: a node's script failed under systemd in nspawn:\n{report}"
    );
}
