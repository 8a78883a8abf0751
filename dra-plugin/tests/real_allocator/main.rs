//! Kubernetes' own structured allocator, run for real: the tool
//! (`tests/tools/allocator`, upstream k8s.io/dynamic-resource-allocation
//! v0.36.2 vendored in `third_party/dynamic-resource-allocation`, built with
//! Debian sid's Go 1.26 and Kubernetes 0.36 libraries) and hand-made cases
//! that pin what it does, so a refresh of the vendored tag that changes the
//! scheduler's behaviour shows here first.
//!
//! * [`tool`]: the runner any test can include (build, serialize, run,
//!   parse; skip or fail when the tool cannot be had).
//! * [`objects`]: builders of the cases' slices, classes and claims.
//! * [`upstream`]: the cases.
//! * [`refusals`]: input the tool refuses, and what it says to fix.
//! * [`stream`]: many questions to one process.
//!
//! Without the sid packages (`tests/tools/allocator/fetch.sh`) every test
//! prints why it skips; `GPUSLICE_REQUIRE_TOOLS=1` makes that a failure.

mod objects;
mod refusals;
mod stream;
mod tool;
mod upstream;

use gpuslice_repo_checks::vendored::{self, MANIFEST};

use tool::{Features, available};

#[test]
fn the_tool_is_the_vendored_upstream_with_its_feature_switches() {
    let Some(allocator) = available("the_tool_is_the_vendored_upstream_with_its_feature_switches")
    else {
        return;
    };
    let folder = tool::repo_root().join("third_party/dynamic-resource-allocation");
    let source = std::fs::read_to_string(folder.join(MANIFEST)).expect("read SOURCE");
    let manifest = vendored::parse(&source).expect("SOURCE parses");
    let about = allocator.about().expect("-about answers");
    eprintln!(
        "real allocator: {} ({}) built with {}, {}",
        about.upstream,
        about.commit,
        about.go,
        allocator.binary().display()
    );
    let vendored::Origin::Commit(commit) = &manifest.origin else {
        panic!("SOURCE names a wheel, not a commit: {:?}", manifest.origin);
    };
    assert_eq!(
        (about.upstream.as_str(), about.commit.as_str()),
        (manifest.reference.as_str(), commit.as_str())
    );
    assert_eq!(
        about.features,
        Features::NAMES,
        "structured.Features changed: update tool/wire.rs's Features to its fields"
    );
    assert!(about.fixes.is_empty(), "{:?}", about.fixes);
}
