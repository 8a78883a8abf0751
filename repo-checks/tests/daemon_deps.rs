//! The daemon links no Kubernetes client: from the `gpuslice` package (the
//! daemon library and gpusliced), no path of normal dependencies reaches
//! kube, a kube-* crate, k8s-openapi or the DRA plugin's library. gpuslicectl
//! (its own package) and the plugin may; the daemon's tests may (dev
//! dependencies are not followed). The metadata: `metadata/mod.rs`.

mod metadata;

use gpuslice_repo_checks::deps::forbidden_reached;

/// The packages the privileged daemon must not link.
fn kubernetes_client(name: &str) -> bool {
    name == "kube"
        || name.starts_with("kube-")
        || name == "k8s-openapi"
        || name == "gpuslice-dra-plugin"
}

#[test]
fn the_daemon_reaches_no_kubernetes_client_over_normal_dependencies() {
    let metadata = metadata::workspace_metadata();
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
