//! The workspace's `cargo metadata` (format version 1, `--locked
//! --offline`), shared by the dependency checks (`daemon_deps.rs`,
//! `ctl_deps.rs`): the one place these tests run cargo.
//!
//! The graph is resolved for the platform the test is built for
//! (`--filter-platform`, the triple from `build.rs`): `--offline` then needs
//! only the packages a build here downloaded, not every package of the lock
//! file (Windows-only ones included), which a fresh machine's registry lacks.

use std::process::Command;

use gpuslice_repo_checks::tree::repo_root;

/// The parsed JSON of `cargo metadata` for the workspace; panics, with
/// cargo's own words, when cargo cannot answer.
pub fn workspace_metadata() -> serde_json::Value {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", env!("GPUSLICE_BUILD_TARGET")])
        .current_dir(repo_root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}
