//! The daemon links no Kubernetes client: from the `gpuslice` package (the
//! daemon library and gpusliced), no path of normal dependencies reaches
//! kube, a kube-* crate, k8s-openapi or the DRA plugin's library. gpuslicectl
//! (its own package) and the plugin may; the daemon's tests may (dev
//! dependencies are not followed).
//!
//! The graph is resolved for the platform the test is built for
//! (`--filter-platform`, the triple from `build.rs`): `--offline` then needs
//! only the packages a build here downloaded, not every package of the lock
//! file (Windows-only ones included), which a fresh machine's registry lacks.

use std::process::Command;

use gpuslice_repo_checks::deps::forbidden_reached;
use gpuslice_repo_checks::tree::repo_root;

/// The packages the privileged daemon must not link.
fn kubernetes_client(name: &str) -> bool {
    name == "kube"
        || name.starts_with("kube-")
        || name == "k8s-openapi"
        || name == "gpuslice-dra-plugin"
}

#[test]
fn the_daemon_reaches_no_kubernetes_client_over_normal_dependencies() {
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
    let metadata: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let reached = forbidden_reached(&metadata, "gpuslice", kubernetes_client)
        .unwrap_or_else(|e| panic!("{e}"));
    let paths: Vec<String> = reached.iter().map(ToString::to_string).collect();
    assert!(
        paths.is_empty(),
        "the daemon links a Kubernetes client; move what it needs into a crate without one \
         (as gpuslice-quantity and gpuslice-publish are), or make it a dev-dependency:\n{}",
        paths.join("\n")
    );
}
