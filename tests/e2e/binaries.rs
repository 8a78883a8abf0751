//! The workspace's binaries that a test runs but its own package does not
//! build: `gpuslicectl` (its own package) for the gpuslice package's tests and
//! benches, `gpusliced` and `gpuslicectl` for the DRA plugin's conformance
//! test. Cargo gives `CARGO_BIN_EXE_<name>` only for the test's own package.
//!
//! Each is built once per process with the cargo and profile that built the
//! test (`$CARGO build -p PACKAGE --bin NAME`; cargo does nothing when the
//! binary is fresh, so a stale one is never picked up), then found in the
//! test's `target/<profile>/`. Shared with `#[path]` by
//! dra-plugin/tests/conformance, daemon/benches/startup.rs and
//! tests/e2e/nvml/library.rs (its `cargo_build`). Std only.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

/// `gpuslicectl`, built from its package when this process has not yet.
pub fn gpuslicectl() -> PathBuf {
    workspace_binary("gpuslicectl", "gpuslicectl")
}

/// Binary `name` of the workspace package `package`, built when this
/// process has not yet, in the test's `target/<profile>/`.
pub fn workspace_binary(package: &str, name: &str) -> PathBuf {
    /// The binaries this process has built; held while building, so two
    /// tests asking at once build once.
    static BUILT: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let profile_dir = profile_dir();
    let binary = profile_dir.join(name);
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if !built.contains(name) {
        build(package, name, &profile_dir);
        built.insert(name.to_owned());
    }
    drop(built);
    assert!(
        binary.is_file(),
        "{name} is not at {} after `cargo build -p {package} --bin {name}`",
        binary.display()
    );
    binary
}

/// `target/<profile>`: the folder above the test executable's `deps/`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    exe.parent()
        .and_then(Path::parent)
        .expect("the test executable is in target/<profile>/deps")
        .to_path_buf()
}

/// Runs `$CARGO build -p package --bin name` for the profile whose output
/// folder is `profile_dir`.
fn build(package: &str, name: &str, profile_dir: &Path) {
    cargo_build(profile_dir, &["-p", package, "--bin", name]);
}

/// Runs `$CARGO build --quiet ARGS` for the profile whose output folder is
/// `profile_dir` (`debug` is the dev profile; any other folder is named
/// after its profile); panics when it fails.
pub fn cargo_build(profile_dir: &Path, args: &[&str]) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet"]).args(args);
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some(profile) => {
            command.args(["--profile", profile]);
        }
    }
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(status.success(), "{command:?} failed: {status}");
}
