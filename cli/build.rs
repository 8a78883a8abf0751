//! Reads the git commit the binaries are built from, for `--version`:
//! `GPUSLICE_GIT_COMMIT` from the environment when set (a build from a
//! tarball, or a packager who knows it), else `git rev-parse --short=7 HEAD`
//! in this checkout, else `unknown` (no git, or no `.git`). It reaches the
//! crate as the compile-time variable of the same name; the commit's date
//! (for the man pages) as `GPUSLICE_GIT_DATE`, likewise given or read.
//!
//! Cargo runs this again when the variable or the checkout's HEAD moves:
//! the `HEAD` file and the ref it names, as git itself lays them out (a
//! worktree's `.git` is a file naming a folder elsewhere).

use std::path::PathBuf;
use std::process::Command;

const VAR: &str = "GPUSLICE_GIT_COMMIT";
/// The commit's date, for the man pages' date line.
const DATE_VAR: &str = "GPUSLICE_GIT_DATE";

fn main() {
    println!("cargo:rerun-if-env-changed={VAR}");
    println!("cargo:rerun-if-env-changed={DATE_VAR}");
    let (commit, date) = match std::env::var(VAR) {
        Ok(given) if !given.trim().is_empty() => (given.trim().to_owned(), given_date()),
        _ => from_git().unwrap_or_else(|| ("unknown".to_owned(), given_date())),
    };
    println!("cargo:rustc-env={VAR}={commit}");
    println!("cargo:rustc-env={DATE_VAR}={date}");
}

/// `GPUSLICE_GIT_DATE` (YYYY-MM-DD) when set, else empty.
fn given_date() -> String {
    std::env::var(DATE_VAR)
        .map(|d| d.trim().to_owned())
        .unwrap_or_default()
}

/// The short commit of HEAD and its date, watching the files that move
/// with it; None unless this workspace is the top of the checkout (a
/// tarball unpacked inside another repository must not take that one's
/// commit).
fn from_git() -> Option<(String, String)> {
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    let workspace = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?).join("..");
    if top.canonicalize().ok()? != workspace.canonicalize().ok()? {
        return None;
    }
    let commit = git(&["rev-parse", "--short=7", "HEAD"])?;
    for watched in ["HEAD", "packed-refs"] {
        watch(git(&["rev-parse", "--git-path", watched]));
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(git(&["rev-parse", "--git-path", &reference]));
    }
    let date = git(&["log", "-1", "--format=%cs", "HEAD"]).unwrap_or_default();
    Some((commit, date))
}

/// Tells cargo to run this again when `path` changes, if it exists (a
/// missing one would make cargo run it at every build).
fn watch(path: Option<String>) {
    let Some(path) = path else { return };
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let full = manifest.map_or_else(|| PathBuf::from(&path), |dir| dir.join(&path));
    if full.exists() {
        println!("cargo:rerun-if-changed={}", full.display());
    }
}

/// git's trimmed output, run in this crate's folder; None when it fails.
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
