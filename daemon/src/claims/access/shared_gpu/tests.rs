//! Engine tests of MPS and time-slicing on the simulated backend, with the
//! test kit's fake control daemons and nvidia-smi at the process boundary. Restarts and reboots of the daemon are end-to-end tests
//! (tests/e2e/sharing.rs): they need the process to go away.

use super::node::{BOUND, Node};
use crate::claims::compute_policy::TimeSliceError;
use crate::claims::mps_daemon::{DaemonState, MpsError, MpsKey};
use crate::claims::tests::requests::{request, request_with as req};
use crate::claims::{ClaimError, PrepareRequest};
use crate::config::{MigConfig, MigGpuConfig};
use crate::gpu::{ComputeMode, GpuBackend};
use crate::state::AccessKind;

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000a1";
const B: &str = "bbbbbbbb-0000-4000-8000-0000000000b2";
const C: &str = "cccccccc-0000-4000-8000-0000000000c3";
const GIB: u64 = 1 << 30;

fn gpu_config(sharing: &str) -> String {
    format!(
        r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{sharing}}}"#
    )
}

fn mps(atp: u8) -> String {
    gpu_config(&format!(
        r#"{{"strategy":"MPS","mpsConfig":{{"defaultActiveThreadPercentage":{atp}}}}}"#
    ))
}

fn timeslicing(interval: &str) -> String {
    gpu_config(&format!(
        r#"{{"strategy":"TimeSlicing","timeSlicingConfig":{{"interval":"{interval}"}}}}"#
    ))
}

fn memory(q: &str) -> String {
    format!(r#"{{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":"{q}"}}"#)
}

/// The device edits of the claim's first CDI device.
fn device_env(spec: &serde_json::Value) -> Vec<String> {
    spec["devices"][0]["containerEdits"]["env"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn sim_two_mps_claims_on_one_gpu_share_one_daemon_that_the_last_one_stops() {
    let Some(node) = Node::plain(2) else { return };
    let e = node.engine();
    e.prepare(&req(A, &["gpu-0"], &[mps(50)])).unwrap();
    let gpu0 = node.uuid(0);
    // Limits reach the control program, and read back, before prepare returns.
    assert_eq!(
        node.lines("mps.record"),
        [
            format!("start CUDA_VISIBLE_DEVICES={gpu0} ATP=50"),
            "get_server_list".to_owned(),
            "set_default_active_thread_percentage 50".to_owned(),
            "get_default_active_thread_percentage".to_owned(),
        ]
    );
    assert_eq!(node.mode(0), ComputeMode::ExclusiveProcess);
    e.prepare(&req(B, &["gpu-0"], &[mps(50)])).unwrap();
    e.prepare(&req(C, &["gpu-1"], &[mps(50)])).unwrap();
    assert_eq!(node.starts(), 2, "one daemon per GPU set");
    let (a, b, c) = (
        device_env(&node.spec(A).unwrap()),
        device_env(&node.spec(B).unwrap()),
        device_env(&node.spec(C).unwrap()),
    );
    assert!(a[0].starts_with("CUDA_MPS_PIPE_DIRECTORY="), "{a:?}");
    assert_eq!(a, b, "the same daemon");
    assert_ne!(a, c, "another GPU, another daemon");
    let view = e.sharing_view();
    assert_eq!(view[0].mode, Some(AccessKind::Mps));
    assert_eq!(view[0].claims, [A, B]);
    assert_eq!(view[0].daemons[0].claims, [A, B]);
    assert_eq!(view[0].daemons[0].state, DaemonState::Running);
    e.unprepare(A).unwrap();
    assert!(!node.lines("mps.record").contains(&"quit".to_owned()));
    assert_eq!(node.mode(0), ComputeMode::ExclusiveProcess);
    e.unprepare(B).unwrap();
    assert_eq!(
        node.lines("mps.record")
            .iter()
            .filter(|l| *l == "quit")
            .count(),
        1
    );
    assert_eq!(
        node.mode(0),
        ComputeMode::Default,
        "the last claim resets it"
    );
    assert_eq!(e.sharing_view()[0].mode, None);
}

#[test]
fn sim_mps_refusals_name_the_other_claim_and_leave_nothing() {
    let Some(node) = Node::plain(2) else { return };
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
    let Some(node) = Node::plain(1) else { return };
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

/// A GPU whose nvidia-smi answers "Not Supported" has no time-slice
/// settings: a claim asking for an interval is refused, naming the GPU, what
/// it lacks and what to ask instead, and leaves nothing; the next is refused
/// before nvidia-smi runs; a claim asking for Default prepares, with no
/// problem (the GPU time-slices at its own interval, which Default means).
#[test]
fn sim_a_gpu_without_time_slice_settings_refuses_an_interval_and_takes_default() {
    let Some(node) = Node::plain(1) else { return };
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

#[test]
fn sim_memory_shares_are_counted_per_gpu() {
    let Some(node) = Node::plain(1) else { return };
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
fn sim_a_killed_daemon_is_restarted_and_the_claim_says_so() {
    let Some(node) = Node::plain(1) else { return };
    let e = node.engine();
    let prepared = e.prepare(&req(A, &["gpu-0"], &[mps(50)])).unwrap();
    let daemon = e.sharing_view()[0].daemons[0].clone();
    let key = MpsKey::new(daemon.uuids.iter().map(String::as_str));
    assert!(node.mps().kill(&key.hash()), "a daemon to kill");
    let tools = e.kinds.shared.tools.as_ref().unwrap();
    let status = tools.mps.wait_for_restarts(&key, 1, BOUND).unwrap();
    assert_eq!((status.state, status.restarts), (DaemonState::Running, 1));
    let health = e.claim_health(prepared.record()).join("\n");
    assert!(health.contains("restarted 1 time"), "{health}");
    let record = node.lines("mps.record");
    let second = record
        .iter()
        .rposition(|l| l.starts_with("start "))
        .unwrap();
    assert!(
        record[second..].contains(&"set_default_active_thread_percentage 50".to_owned()),
        "limits applied again: {record:?}"
    );
}

#[test]
fn sim_a_daemon_that_cannot_start_leaves_nothing() {
    let Some(node) = Node::new(1, &MigConfig::default(), true) else {
        return;
    };
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
fn sim_mps_on_a_mig_slice_runs_after_the_slice_and_quits_before_it_goes() {
    let mig = MigConfig {
        gpu: vec![MigGpuConfig {
            layout: vec!["3g.40gb".to_owned()],
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    };
    let Some(node) = Node::new(1, &mig, false) else {
        return;
    };
    let e = node.engine();
    let slice = e.inventory().mig[0].name.clone();
    let config = r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS"}}"#;
    let prepared = e.prepare(&req(A, &[&slice], &[config.to_owned()])).unwrap();
    let mig_uuid = prepared.record().devices[0]
        .mig
        .as_ref()
        .and_then(|m| m.mig_uuid.clone())
        .unwrap();
    assert_eq!(
        node.lines("mps.record")[0],
        format!("start CUDA_VISIBLE_DEVICES={mig_uuid} ATP=")
    );
    assert_eq!(
        node.mode(0),
        ComputeMode::Default,
        "a MIG GPU keeps its compute mode"
    );
    assert_eq!(e.sharing_view()[0].mode, Some(AccessKind::Mps));
    let err = e
        .prepare(&req(B, &[&slice], &[config.to_owned()]))
        .unwrap_err();
    assert!(
        matches!(err, ClaimError::DeviceHeld { .. }),
        "a slice is not shared across claims: {err}"
    );
    e.unprepare(A).unwrap();
    assert_eq!(
        node.lines("mps.record").last().map(String::as_str),
        Some("quit")
    );
    assert!(
        node.backend.gpu_instances(0).unwrap().is_empty(),
        "slice destroyed after the quit"
    );
}

#[test]
fn sim_preparing_again_starts_a_daemon_that_is_missing() {
    let Some(node) = Node::plain(1) else { return };
    let e = node.engine();
    e.prepare(&req(A, &["gpu-0"], &[mps(50)])).unwrap();
    // As if start-up could not bring the daemon back.
    let key = MpsKey::new([node.uuid(0).as_str()]);
    let tools = e.kinds.shared.tools.as_ref().unwrap();
    tools.mps.release(A, &key).unwrap();
    assert!(e.sharing_view()[0].daemons.is_empty());
    let health = e.claim_health(&e.claims()[0]).join("\n");
    assert!(health.contains("is not running"), "{health}");
    let again = e.prepare(&req(A, &["gpu-0"], &[mps(50)])).unwrap();
    assert!(matches!(again, crate::claims::Prepared::AlreadyPrepared(_)));
    assert_eq!(node.starts(), 2);
    assert_eq!(e.sharing_view()[0].daemons[0].claims, [A]);
    assert_eq!(node.mode(0), ComputeMode::ExclusiveProcess);
}

#[test]
fn sim_preparing_again_with_other_sharing_names_both_and_what_to_do() {
    let Some(node) = Node::plain(1) else { return };
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
    let Some(node) = Node::plain(2) else { return };
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
