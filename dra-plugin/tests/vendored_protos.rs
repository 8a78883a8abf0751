//! The kubelet protos compiled into the shim (`third_party/kubelet/`, see
//! `dra-plugin/build.rs`) are the published ones, unchanged: each has the sha256
//! that `third_party/kubelet/SOURCE` recorded when `third_party/refresh.sh`
//! fetched it. With `$GPUSLICE_REFERENCE_DIR` set, they must also be
//! byte-identical to the copies there (a fresh download, say).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use gpuslice_repo_checks::vendored::{self, MANIFEST};

const PROTOS: [&str; 5] = [
    "kubelet-dra-v1-api.proto",
    "kubelet-dra-v1beta1-api.proto",
    "kubelet-pluginregistration-v1-api.proto",
    "kubelet-dra-health-v1-api.proto",
    "kubelet-dra-health-v1alpha1-api.proto",
];

fn vendored_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../third_party/kubelet")
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[test]
fn compiled_protos_have_the_sha256_their_source_records() {
    let dir = vendored_dir();
    let text = String::from_utf8(read(&dir.join(MANIFEST))).expect("SOURCE is UTF-8");
    let manifest =
        vendored::parse(&text).unwrap_or_else(|e| panic!("third_party/kubelet/{MANIFEST}: {e}"));
    for proto in PROTOS {
        assert!(
            manifest.files.iter().any(|entry| entry.name == proto),
            "the shim compiles {proto}, which third_party/kubelet/{MANIFEST} does not list"
        );
    }
    let files: BTreeMap<String, Vec<u8>> = manifest
        .files
        .iter()
        .map(|entry| (entry.name.clone(), read(&dir.join(&entry.name))))
        .collect();
    let mismatches = vendored::compare(&manifest, &files);
    assert!(
        mismatches.is_empty(),
        "{}",
        mismatches
            .iter()
            .map(|m| format!("third_party/kubelet/{m}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn compiled_protos_match_an_outside_reference_when_given() {
    let Some(reference) = std::env::var_os("GPUSLICE_REFERENCE_DIR").map(PathBuf::from) else {
        println!("GPUSLICE_REFERENCE_DIR not set: nothing to compare beyond the sha256s");
        return;
    };
    for proto in PROTOS {
        assert!(
            read(&vendored_dir().join(proto)) == read(&reference.join(proto)),
            "third_party/kubelet/{proto} differs from {}; run third_party/refresh.sh",
            reference.join(proto).display()
        );
    }
}
