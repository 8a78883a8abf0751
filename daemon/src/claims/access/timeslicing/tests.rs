//! Time-slicing through the claim engine on the simulated node: a GPU
//! without time-slice settings refuses an interval and takes Default.

use crate::claims::ClaimError;
use crate::claims::access::shared_gpu::node::Node;
use crate::claims::access::shared_gpu::tests::{A, B, timeslicing};
use crate::claims::tests::requests::request_with as req;

/// A GPU whose nvidia-smi answers "Not Supported" has no time-slice
/// settings: a claim asking for an interval is refused, naming the GPU, what
/// it lacks and what to ask instead, and leaves nothing; the next is refused
/// before nvidia-smi runs; a claim asking for Default prepares, with no
/// problem (the GPU time-slices at its own interval, which Default means).
#[test]
fn sim_a_gpu_without_time_slice_settings_refuses_an_interval_and_takes_default() {
    let node = Node::plain(1);
    let gpu = node.uuid(0);
    node.smi().unsupported(&gpu);
    let e = node.engine();
    let err = e
        .prepare(&req(A, &["gpu-0"], &[timeslicing("Medium")]))
        .unwrap_err();
    assert!(matches!(err, ClaimError::FeatureMissing(_)), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "gpu-0 ({gpu}) is an NVIDIA H100 80GB HBM3, which has no time-slice settings \
             (nvidia-smi: "
        )),
        "{text}"
    );
    assert!(
        text.contains("so interval Medium cannot be had; ask for interval Default"),
        "{text}"
    );
    assert!(e.claims().is_empty());
    assert_eq!(node.spec(A), None, "no spec left");
    let tried = node.lines("smi.record").len();
    let again = e.prepare(&req(B, &["gpu-0"], &[timeslicing("Long")]));
    assert!(
        matches!(again, Err(ClaimError::FeatureMissing(_))),
        "{again:?}"
    );
    assert_eq!(
        node.lines("smi.record").len(),
        tried,
        "refused before nvidia-smi ran"
    );
    e.prepare(&req(B, &["gpu-0"], &[timeslicing("Default")]))
        .unwrap();
    assert!(
        !e.problems().join("\n").contains("time-slice"),
        "{:?}",
        e.problems()
    );
    assert_eq!(e.sharing_view()[0].interval_state, "applied");
    let view = e.view();
    let settings = &view.devices[0].timeslice_settings;
    assert!(
        settings
            .to_string()
            .starts_with("no (Failed to set timeslice"),
        "{settings}"
    );
}
