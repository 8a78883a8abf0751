//! External tools the real-consumer tests drive (Go, podman, dpkg,
//! systemd-nspawn): finding them, and the one rule for when one is missing.
//!
//! A test whose tool is missing prints why and returns early, unless
//! `GPUSLICE_REQUIRE_TOOLS=1` is set (`.ci/run` sets it, after installing
//! every tool): then a missing tool fails the test, so CI never skips.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Whether skipping is forbidden (CI).
pub fn tools_required() -> bool {
    std::env::var_os("GPUSLICE_REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// Call when a test cannot run here: prints `why` and returns, so the caller
/// returns early; panics instead when tools are required.
pub fn skip(test: &str, why: &str) {
    assert!(
        !tools_required(),
        "{test}: {why} (GPUSLICE_REQUIRE_TOOLS=1 forbids skipping; .ci/run installs the tools)"
    );
    eprintln!("SKIP {test}: {why}");
}

/// The absolute path of `program` on PATH, if any.
pub fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// The first of `programs` missing from PATH.
pub fn first_missing<'a>(programs: &[&'a str]) -> Option<&'a str> {
    programs.iter().copied().find(|p| which(p).is_none())
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    nix::unistd::Uid::effective().is_root()
}

/// The repository's top folder.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// Runs `cmd`, returning stdout on success, or a message with the exit
/// status and both streams.
pub fn run(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{shown} failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Builds the Go program `tests/tools/<tool>` offline, in GOPATH mode
/// against the Go sources Debian installs in `gopath`, with `go`, into the
/// target dir's `gpuslice-<tool>/<tool>` (Go's cache beside it); returns
/// the binary's path, or `run`'s message.
pub fn go_build(go: &Path, tool: &str, gopath: &str) -> Result<PathBuf, String> {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("gpuslice-{tool}"));
    let binary = out_dir.join(tool);
    run(Command::new(go)
        .current_dir(repo_root().join("tests/tools"))
        .args(["build", "-o"])
        .arg(&binary)
        .arg(format!("./{tool}"))
        .env("GO111MODULE", "off")
        .env("GOPATH", gopath)
        .env("GOCACHE", out_dir.join("gocache"))
        .env("GOFLAGS", ""))?;
    Ok(binary)
}

/// What `build` makes (a tool's binary, or why there is none), built on the
/// first call only and kept in `cell` for the rest of the run.
pub fn built_once(
    cell: &'static OnceLock<Result<PathBuf, String>>,
    build: impl FnOnce() -> Result<PathBuf, String>,
) -> Result<&'static Path, &'static str> {
    cell.get_or_init(build)
        .as_ref()
        .map(PathBuf::as_path)
        .map_err(String::as_str)
}
