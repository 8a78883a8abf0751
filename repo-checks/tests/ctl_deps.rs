//! gpuslicectl does not link the daemon: from the `gpuslicectl` package, no
//! path of normal dependencies reaches the `gpuslice` package (the daemon
//! library, with its NVML binding, its engine and everything they pull in).
//! What the CLI shares with gpusliced sits in small crates of its own:
//! the API (gpuslice-proto), the CDI model (gpuslice-cdi), quantities
//! (gpuslice-quantity), the simulator's process files (gpuslice-sim-files).
//! Dev-dependencies are not followed. The metadata: `metadata/mod.rs`.

mod metadata;

use gpuslice_repo_checks::deps::forbidden_reached;

#[test]
fn gpuslicectl_reaches_no_daemon_library_over_normal_dependencies() {
    let metadata = metadata::workspace_metadata();
    let reached = forbidden_reached(&metadata, "gpuslicectl", |name| name == "gpuslice")
        .unwrap_or_else(|e| panic!("{e}"));
    let paths: Vec<String> = reached.iter().map(ToString::to_string).collect();
    assert!(
        paths.is_empty(),
        "gpuslicectl links the daemon library; move what it needs into a crate of its own \
         (as gpuslice-sim-files holds the simulator's process files):\n{}",
        paths.join("\n")
    );
}
