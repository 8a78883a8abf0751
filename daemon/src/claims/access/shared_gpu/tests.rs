//! Engine tests of what MPS and time-slicing share, on the simulated backend:
//! one kind refused beside the other, the books cleared after a refusal, and
//! memory shares counted per GPU. A test of one kind alone is in that kind's
//! folder (`access::mps`, `access::timeslicing`), with these helpers. The
//! test kit's fake control daemons and nvidia-smi stand at the process
//! boundary. Restarts and reboots of the daemon are end-to-end tests
//! (tests/e2e/sharing.rs): they need the process to go away.

use super::node::Node;
use crate::claims::compute_policy::TimeSliceError;
use crate::claims::mps_daemon::MpsError;
use crate::claims::tests::requests::{request, request_with as req};
use crate::claims::{ClaimError, PrepareRequest};
use crate::config::MigConfig;
use crate::gpu::ComputeMode;
use crate::state::AccessKind;

pub(in crate::claims) const A: &str = "aaaaaaaa-0000-4000-8000-0000000000a1";
pub(in crate::claims) const B: &str = "bbbbbbbb-0000-4000-8000-0000000000b2";
pub(in crate::claims) const C: &str = "cccccccc-0000-4000-8000-0000000000c3";
const GIB: u64 = 1 << 30;

fn gpu_config(sharing: &str) -> String {
    format!(
        r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{sharing}}}"#
    )
}

/// A GpuConfig for MPS at `atp` percent of active threads.
pub(in crate::claims) fn mps(atp: u8) -> String {
    gpu_config(&format!(
        r#"{{"strategy":"MPS","mpsConfig":{{"defaultActiveThreadPercentage":{atp}}}}}"#
    ))
}

/// A GpuConfig for time-slicing at `interval`.
pub(in crate::claims) fn timeslicing(interval: &str) -> String {
    gpu_config(&format!(
        r#"{{"strategy":"TimeSlicing","timeSlicingConfig":{{"interval":"{interval}"}}}}"#
    ))
}

fn memory(q: &str) -> String {
    format!(r#"{{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":"{q}"}}"#)
}

/// The device edits of the claim's first CDI device.
pub(in crate::claims) fn device_env(spec: &serde_json::Value) -> Vec<String> {
    spec["devices"][0]["containerEdits"]["env"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn sim_mps_refusals_name_the_other_claim_and_leave_nothing() {
    let node = Node::plain(2);
    let e = node.engine();
    e.prepare(&req(A, &["gpu-0"], &[mps(50)])).unwrap();
    let cases: Vec<(PrepareRequest, &str)> = vec![
        (req(B, &["gpu-0"], &[mps(25)]), "LimitsConflict"),
        (req(B, &["gpu-0", "gpu-1"], &[mps(50)]), "Overlap"),
        (request(B, &["gpu-0"]), "GpuShared"),
        (req(B, &["gpu-0"], &[timeslicing("Long")]), "MpsInUse"),
    ];
    for (request, kind) in cases {
        let err = e.prepare(&request).unwrap_err();
        assert!(format!("{err:?}").contains(kind), "{kind}: {err:?}");
        assert!(err.to_string().contains(A), "{kind}: {err}");
        assert!(
            node.spec(B).is_none() && !node.has_record(B),
            "{kind}: B leaked"
        );
    }
    assert_eq!(node.starts(), 1);
    assert_eq!(node.mode(1), ComputeMode::Default, "gpu-1 was put back");
    assert_eq!(e.sharing_view()[0].claims, [A]);
    // And a sharing claim on a GPU held whole is refused naming the holder.
    e.prepare(&request(C, &["gpu-1"])).unwrap();
    let err = e.prepare(&req(B, &["gpu-1"], &[mps(50)])).unwrap_err();
    assert!(
        matches!(&err, ClaimError::DeviceHeld { holder, .. } if holder == C),
        "{err}"
    );
}

#[test]
fn sim_timeslicing_agrees_per_gpu_and_the_last_claim_resets_it() {
    let node = Node::plain(1);
    let e = node.engine();
    let gpu = node.uuid(0);
    e.prepare(&req(A, &["gpu-0"], &[timeslicing("Long")]))
        .unwrap();
    let err = e
        .prepare(&req(B, &["gpu-0"], &[timeslicing("Short")]))
        .unwrap_err();
    assert!(
        matches!(&err, ClaimError::TimeSlicing(TimeSliceError::IntervalConflict { holder, .. }) if holder == A),
        "{err}"
    );
    assert!(node.spec(B).is_none() && !node.has_record(B));
    let err = e.prepare(&req(B, &["gpu-0"], &[mps(50)])).unwrap_err();
    assert!(
        matches!(&err, ClaimError::TimeSlicing(TimeSliceError::TimeSliceInUse { holder, .. }) if holder == A),
        "{err}"
    );
    assert_eq!(node.starts(), 0, "no daemon for a refused MPS claim");
    e.prepare(&req(B, &["gpu-0"], &[timeslicing("Long")]))
        .unwrap();
    let set = format!("compute-policy -i {gpu} --set-timeslice=3");
    assert_eq!(
        node.lines("smi.record"),
        std::slice::from_ref(&set),
        "set once, by the first claim"
    );
    assert_eq!(e.sharing_view()[0].interval_state, "applied");
    e.unprepare(A).unwrap();
    assert_eq!(node.lines("smi.record").len(), 1);
    e.unprepare(B).unwrap();
    assert_eq!(
        node.lines("smi.record"),
        [set, format!("compute-policy -i {gpu} --set-timeslice=0")]
    );
    assert_eq!(node.mode(0), ComputeMode::Default);
}

#[test]
fn sim_memory_shares_are_counted_per_gpu() {
    let node = Node::plain(1);
    let e = node.engine();
    let total = e.inventory().gpus[0].info.memory_bytes;
    let a = e.prepare(&req(A, &["gpu-0"], &[memory("60Gi")])).unwrap();
    let env = device_env(&node.spec(A).unwrap());
    assert!(
        env.contains(&format!(
            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={}=61440M",
            node.uuid(0)
        )),
        "{env:?}"
    );
    let err = e
        .prepare(&req(B, &["gpu-0"], &[memory("30Gi")]))
        .unwrap_err();
    let ClaimError::MemoryExhausted {
        gpu, left, holders, ..
    } = &err
    else {
        panic!("{err}");
    };
    assert_eq!((gpu.as_str(), *left), ("gpu-0", total - 60 * GIB));
    assert!(holders.contains(A), "{err}");
    e.prepare(&req(B, &["gpu-0"], &[memory("10Gi")])).unwrap();
    assert_eq!(e.view().devices[0].memory_available, total - 70 * GIB);
    assert_eq!(e.sharing_view()[0].memory_promised, 70 * GIB);
    assert_eq!(node.starts(), 1, "memory shares join one daemon");
    e.unprepare(a.record().uid.as_str()).unwrap();
    assert_eq!(e.view().devices[0].memory_available, total - 10 * GIB);
}

#[test]
fn sim_a_daemon_that_cannot_start_leaves_nothing() {
    let node = Node::new(1, &MigConfig::default(), true);
    let e = node.engine();
    let err = e.prepare(&req(A, &["gpu-0"], &[mps(50)])).unwrap_err();
    assert!(
        matches!(
            err,
            ClaimError::Mps(MpsError::DiedDuringStart { .. } | MpsError::NotReady { .. })
        ),
        "{err}"
    );
    assert!(node.spec(A).is_none() && !node.has_record(A));
    assert_eq!(node.mode(0), ComputeMode::Default, "compute mode put back");
    let leftovers = std::fs::read_dir(node.dir().join("run/mps")).map_or(0, Iterator::count);
    assert_eq!(leftovers, 0, "no daemon folder left");
    // The GPU is free for anything: the books were cleared.
    e.prepare(&req(B, &["gpu-0"], &[timeslicing("Short")]))
        .unwrap();
}

#[test]
fn sim_preparing_again_with_other_sharing_names_both_and_what_to_do() {
    let node = Node::plain(1);
    let e = node.engine();
    e.prepare(&req(A, &["gpu-0"], &[timeslicing("Long")]))
        .unwrap();
    let err = e.prepare(&req(A, &["gpu-0"], &[mps(50)])).unwrap_err();
    assert!(
        matches!(err, ClaimError::PreparedDifferently { .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "claim {A} is already prepared with gpu-0 time-sliced (interval Long), and this \
             prepare asks for gpu-0 shared by MPS (active threads 50%); a prepared claim \
             cannot change: unprepare it first, or use a new claim uid"
        )
    );
    assert_eq!(node.starts(), 0, "no MPS daemon was started");
    assert_eq!(e.sharing_view()[0].mode, Some(AccessKind::TimeSlicing));
}

/// Time-slicing books before MPS (the kinds' order), so a claim whose
/// MPS device and time-sliced device both conflict is refused for the
/// time-sliced one, whatever the order of its devices.
#[test]
fn sim_a_claim_both_sharing_kinds_refuse_is_told_the_time_slicing_conflict() {
    let node = Node::plain(2);
    let e = node.engine();
    e.prepare(&req(A, &["gpu-0"], &[timeslicing("Long")]))
        .unwrap();
    e.prepare(&req(C, &["gpu-1"], &[mps(50)])).unwrap();
    let mut both = req(B, &["gpu-0", "gpu-1"], &[mps(50), timeslicing("Long")]);
    for (i, name) in ["first", "second"].into_iter().enumerate() {
        both.devices[i].request_names = vec![name.to_owned()];
        both.configs[i].requests = vec![name.to_owned()];
    }
    let err = e.prepare(&both).unwrap_err();
    assert!(
        matches!(&err, ClaimError::TimeSlicing(TimeSliceError::MpsInUse { holder, .. }) if holder == C),
        "{err}"
    );
    assert!(node.spec(B).is_none() && !node.has_record(B));
    let view = e.sharing_view();
    assert_eq!(
        (view[0].claims.as_slice(), view[1].claims.as_slice()),
        (&[A.to_owned()][..], &[C.to_owned()][..])
    );
    assert_eq!(node.starts(), 1, "C's daemon only");
}
