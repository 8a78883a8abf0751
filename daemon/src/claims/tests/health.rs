//! Engine tests of device health on the simulated backend: a new claim on an
//! unhealthy GPU or slice is refused (and leaves nothing behind), claims on it
//! are reported, recovery and an operator's clear let claims in again.

use super::requests::request as req;
use crate::claims::{ClaimError, Engine, Prepared};
use crate::config::{MigConfig, MigGpuConfig, MigOffering};
use crate::gpu::{GpuBackend, HealthEvent, HealthEventKind};
use crate::health::watch::Watcher;
use crate::testkit::{SimNode, SimNodeBuilder};

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000a1";
const B: &str = "bbbbbbbb-0000-4000-8000-0000000000b2";
const C: &str = "cccccccc-0000-4000-8000-0000000000c3";
/// 2025-06-01T12:00:00Z.
const NOON: i64 = 1_748_779_200;

/// Two simulated H100s; GPU 1 offers a MIG layout, made at prepare.
fn node() -> SimNode {
    let mig = MigConfig {
        advertise: Some(MigOffering::Layout),
        gpu: vec![MigGpuConfig {
            index: Some(1),
            layout: ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
                .map(str::to_owned)
                .to_vec(),
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    };
    SimNodeBuilder::h100s(2).mig(mig).start()
}

/// Feeds one event through the watcher, as the running daemon does.
pub(super) fn event(
    node: &SimNode,
    gpu: u32,
    gpu_instance: Option<u32>,
    kind: HealthEventKind,
) -> bool {
    let engine = node.engine();
    let on_change = || engine.health_changed();
    let watcher = Watcher {
        backend: engine.health_reads(),
        health: engine.health(),
        on_change: &on_change,
    };
    let event = HealthEvent {
        gpu_index: gpu,
        gpu_uuid: node.sim.device_info(gpu).unwrap().uuid,
        gpu_instance,
        compute_instance: gpu_instance.map(|_| 0),
        kind,
        message: "test".into(),
    };
    watcher.handle(&event, NOON)
}

/// The name of a slice of GPU 1 with this profile, at the lowest start.
fn slice_of(node: &SimNode, profile: &str) -> String {
    let inventory = node.engine().inventory();
    let mut slices: Vec<_> = (inventory.mig.iter())
        .filter(|m| m.profile.name == profile)
        .collect();
    slices.sort_by_key(|m| m.placement.start);
    slices[0].name.clone()
}

/// How many files the node's folder `sub` holds.
fn files(node: &SimNode, sub: &str) -> usize {
    std::fs::read_dir(node.dir.path().join(sub)).map_or(0, |d| d.count())
}

fn refused(engine: &Engine, uid: &str, devices: &[&str]) -> String {
    match engine.prepare(&req(uid, devices)) {
        Err(err @ ClaimError::DeviceUnhealthy { .. }) => err.to_string(),
        other => panic!("{devices:?}: expected DeviceUnhealthy, got {other:?}"),
    }
}

#[test]
fn sim_no_new_claim_on_an_unhealthy_gpu_and_the_holder_is_reported() {
    let node = node();
    let engine = node.engine();
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    let generation = engine.generation();
    assert!(event(&node, 0, None, HealthEventKind::Xid(79)));
    assert!(
        engine.generation() > generation,
        "the DRA plugin republishes"
    );
    let (specs, records) = (files(&node, "cdi"), files(&node, "state/claims"));

    let msg = refused(engine, B, &["gpu-0"]);
    assert!(msg.contains("device gpu-0 is unhealthy: XID 79 (GPU has fallen off the bus) since 2025-06-01T12:00:00Z"), "{msg}");
    assert!(msg.contains("gpuslicectl health clear gpu-0"), "{msg}");
    assert_eq!(
        (files(&node, "cdi"), files(&node, "state/claims")),
        (specs, records),
        "nothing written"
    );
    engine.prepare(&req(B, &["gpu-0-unknown"])).unwrap_err();

    // The claim prepared before keeps answering (the kubelet retries), and is reported.
    assert!(matches!(
        engine.prepare(&req(A, &["gpu-0"])).unwrap(),
        Prepared::AlreadyPrepared(_)
    ));
    let record = engine.claims().into_iter().find(|r| r.uid == A).unwrap();
    let problems = engine.claim_health_problems(&record);
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].starts_with("gpu-0 is unhealthy: XID 79"),
        "{problems:?}"
    );
    let status = engine.problems().join("\n");
    assert!(
        status.contains(&format!("claim {A} (ns/claim) runs on unhealthy devices")),
        "{status}"
    );
    assert!(status.contains("gpu-0 ("), "{status}");
    let unhealthy = engine.view().unhealthy_devices();
    assert_eq!(unhealthy.len(), 1);
    assert_eq!(
        (unhealthy[0].device.as_str(), unhealthy[0].claims.clone()),
        ("gpu-0", vec![A.to_owned()])
    );

    // Other GPUs are unaffected; ignored XIDs change nothing.
    assert!(!event(&node, 1, None, HealthEventKind::Xid(13)));
    engine
        .prepare(&req(C, &[&slice_of(&node, "1g.10gb")]))
        .unwrap();
}

#[test]
fn sim_recovery_lets_claims_in_again() {
    let node = node();
    let engine = node.engine();
    assert!(event(&node, 0, None, HealthEventKind::GpuLost));
    refused(engine, A, &["gpu-0"]);
    assert!(
        !event(&node, 0, None, HealthEventKind::GpuLost),
        "already unhealthy"
    );
    assert!(event(&node, 0, None, HealthEventKind::Recovered));
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    assert!(engine.claim_health_problems(&engine.claims()[0]).is_empty());
    assert!(engine.view().unhealthy_devices().is_empty());
}

#[test]
fn sim_a_faulty_mig_instance_blocks_overlapping_devices_only() {
    let node = node();
    let engine = node.engine();
    let big = slice_of(&node, "3g.40gb");
    let prepared = engine.prepare(&req(A, &[&big])).unwrap();
    let slice = prepared.record().devices[0].mig.clone().unwrap();
    let gi = slice.gpu_instance.unwrap();
    assert!(event(&node, 1, Some(gi), HealthEventKind::Xid(94)));
    assert_eq!(engine.fault_count(), 1);

    let record = engine.claims().into_iter().find(|r| r.uid == A).unwrap();
    let problems = engine.claim_health_problems(&record);
    assert!(
        problems[0].contains("XID 94 (contained ECC error)"),
        "{problems:?}"
    );
    let msg = refused(engine, B, &["gpu-1"]);
    assert!(
        msg.contains(&format!("GPU instance {gi} (memory slices 4-7)")),
        "{msg}"
    );
    let small = slice_of(&node, "1g.10gb");
    engine.prepare(&req(B, &[&small])).unwrap();
    let names: Vec<String> = engine
        .view()
        .unhealthy_devices()
        .into_iter()
        .map(|u| u.device)
        .collect();
    assert_eq!(names, vec!["gpu-1".to_owned(), big.clone()]);

    // A fault of the whole GPU covers every slice; clearing a slice leaves it.
    assert!(event(&node, 1, None, HealthEventKind::DoubleBitEcc));
    assert_eq!(engine.fault_count(), 2);
    let other = slice_of(&node, "2g.20gb");
    let msg = refused(engine, C, &[&other]);
    assert!(
        msg.contains("its GPU: uncorrectable (double-bit) ECC error"),
        "{msg}"
    );
    let cleared = engine.clear_health(&other).unwrap();
    assert_eq!(cleared.faults, 0);
    assert!(cleared.still.is_some());

    // The operator clears the GPU: every fault of it goes, claims come in.
    let generation = engine.generation();
    assert_eq!(engine.clear_health("gpu-1").unwrap().faults, 2);
    assert_eq!(engine.fault_count(), 0);
    assert!(engine.generation() > generation);
    engine.prepare(&req(C, &[&other])).unwrap();
    assert!(engine.problems().iter().all(|p| !p.contains("unhealthy")));
    assert!(matches!(
        engine.clear_health("gpu-9"),
        Err(ClaimError::UnknownDevice { .. })
    ));
}
