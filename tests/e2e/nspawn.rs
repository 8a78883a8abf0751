//! A real systemd: the gpuslice .deb installed in a Debian 12 rootfs booted
//! with systemd-nspawn (systemd 252 as PID 1), where `nspawn/in_container.sh`
//! checks that the service starts (Type=notify reaches active), logs to the
//! journal, answers gpuslicectl, reloads, is killed and restarted by the
//! watchdog when it hangs, runs sandboxed, supervises MPS control daemons as
//! transient units `gpuslice-mps-<hash>.service` started over the system bus
//! (shared by claims on one GPU set, restarted by systemd with their limits
//! applied again, adopted across a restart of gpusliced, stopped when their
//! claims are gone), refuses the metrics exporters until the packaged drop-ins
//! allow them (then serves and writes them), and is removed and purged cleanly.
//!
//! The .deb comes from `packaging/build.sh` (GPUSLICE_DEB, else the newest
//! `<target>/debian/gpuslice_*_<this host's architecture>.deb`); the MPS control program is the stand-in
//! tests/tools/fake-mps-control (python3, in the rootfs). The rootfs is made
//! once by debootstrap (about 40 s, 270 MB) and cached in
//! /var/cache/gpuslice-test (or GPUSLICE_NSPAWN_CACHE) under a name that
//! changes with its package list; each boot runs on a throwaway overlay of it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::tools::{first_missing, is_root, repo_root, run, skip};

const TEST: &str = "nspawn_the_deb_under_a_real_systemd";
const SCRIPT: &str = include_str!("nspawn/in_container.sh");
/// debootstrap, boot, install and all checks (a bound, not a wait).
const NSPAWN_TIMEOUT_S: &str = "600";
/// Packages debootstrap adds to minbase: systemd as PID 1, the system bus
/// (sd_notify needs neither, the MPS units need it), python3 for the
/// stand-in MPS control program.
const ROOTFS_PACKAGES: &str = "systemd,systemd-sysv,dbus,python3-minimal";
/// The cached rootfs's folder: a new name whenever ROOTFS_PACKAGES changes,
/// so an older cache (without python3) is never taken for this one.
const ROOTFS_NAME: &str = "bookworm-rootfs-2";

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
fn rootfs() -> Result<PathBuf, String> {
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
        "{TEST}: debootstrap of Debian 12 into {} (once)",
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

#[test]
fn nspawn_the_deb_under_a_real_systemd() {
    if !is_root() {
        return skip(TEST, "systemd-nspawn and dpkg in a container need root");
    }
    if let Some(tool) = first_missing(&["systemd-nspawn", "debootstrap", "timeout"]) {
        return skip(
            TEST,
            &format!("`{tool}` is not installed (apt-get install systemd-container debootstrap)"),
        );
    }
    let Some(deb) = deb().filter(|d| d.is_file()) else {
        return skip(
            TEST,
            "no gpuslice .deb: run packaging/build.sh first (or set GPUSLICE_DEB)",
        );
    };
    eprintln!("{TEST}: installing {}", deb.display());
    let root = rootfs().unwrap_or_else(|e| panic!("{e}"));
    let out = tempfile::tempdir().expect("temp dir");
    std::fs::copy(&deb, out.path().join("gpuslice.deb")).expect("copy the .deb");
    std::fs::copy(
        repo_root().join("tests/tools/fake-mps-control"),
        out.path().join("fake-mps-control"),
    )
    .expect("copy the stand-in MPS control program");
    let script = out.path().join("in_container.sh");
    std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&script)
        .and_then(|mut f| std::io::Write::write_all(&mut f, SCRIPT.as_bytes()))
        .expect("write the script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod the script");

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
        .args(["--boot", "--", "systemd.run=/out/in_container.sh"])
        .output()
        .expect("run systemd-nspawn");
    let log = std::fs::read_to_string(out.path().join("log")).unwrap_or_default();
    eprintln!("{log}");
    assert!(
        status.status.success() && log.trim_end().ends_with("PASS"),
        "the .deb failed under systemd in nspawn ({}):\n{log}\nnspawn stderr:\n{}",
        status.status,
        String::from_utf8_lossy(&status.stderr)
    );
}
