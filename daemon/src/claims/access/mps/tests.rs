//! MPS through the claim engine on the simulated node: one daemon for the
//! claims on a GPU, a daemon killed or missing, MPS on a MIG slice.

use crate::claims::ClaimError;
use crate::claims::access::shared_gpu::node::{BOUND, Node};
use crate::claims::access::shared_gpu::tests::{A, B, C, device_env, mps};
use crate::claims::mps_daemon::{DaemonState, MpsKey};
use crate::claims::tests::requests::request_with as req;
use crate::config::{MigConfig, MigGpuConfig};
use crate::gpu::{ComputeMode, GpuBackend};
use crate::state::AccessKind;

#[test]
fn sim_two_mps_claims_on_one_gpu_share_one_daemon_that_the_last_one_stops() {
    let node = Node::plain(2);
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
fn sim_a_killed_daemon_is_restarted_and_the_claim_says_so() {
    let node = Node::plain(1);
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
fn sim_mps_on_a_mig_slice_runs_after_the_slice_and_quits_before_it_goes() {
    let mig = MigConfig {
        gpu: vec![MigGpuConfig {
            layout: vec!["3g.40gb".to_owned()],
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    };
    let node = Node::new(1, &mig, false);
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
    let node = Node::plain(1);
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
