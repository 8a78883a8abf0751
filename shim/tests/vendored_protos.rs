//! The kubelet protos compiled into the shim (`shim/proto/`) are the
//! published ones, unchanged: byte-identical to `shared/reference` (or
//! `$GPUSLICE_REFERENCE_DIR`). Skips, saying why, where that folder is absent.

use std::path::PathBuf;

const PROTOS: [&str; 5] = [
    "kubelet-dra-v1-api.proto",
    "kubelet-dra-v1beta1-api.proto",
    "kubelet-pluginregistration-v1-api.proto",
    "kubelet-dra-health-v1-api.proto",
    "kubelet-dra-health-v1alpha1-api.proto",
];

#[test]
fn vendored_protos_match_the_reference() {
    let reference = std::env::var_os("GPUSLICE_REFERENCE_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../shared/reference"
            ))
        },
        PathBuf::from,
    );
    if !reference.is_dir() {
        println!(
            "skipping: reference folder {} not found (set GPUSLICE_REFERENCE_DIR)",
            reference.display()
        );
        return;
    }
    let vendored = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/proto"));
    for proto in PROTOS {
        let ours = std::fs::read(vendored.join(proto)).expect("vendored proto");
        let theirs = std::fs::read(reference.join(proto))
            .unwrap_or_else(|e| panic!("{proto} missing from {}: {e}", reference.display()));
        assert!(
            ours == theirs,
            "shim/proto/{proto} differs from {}; copy it again",
            reference.display()
        );
    }
}
