//! Engine tests of the inventory generation and of GPUs the scan cannot
//! read: every change of what GetInventory answers is a new generation
//! (claims made and gone, a refused prepare that reserved, a MIG slice made
//! and destroyed, health, a rescan that finds a change) and nothing else is;
//! a GPU lost before a rescan or before start-up is left out, reported, and
//! its claims stay unpreparable but can be unprepared.

use crate::claims::{ClaimError, Engine, PrepareRequest, Unprepared};
use crate::config::{MigConfig, MigGpuConfig, MigOffering};
use crate::gpu::sim::op;
use crate::gpu::{GpuError, HealthEventKind};
use crate::testkit::{SimNode, SimNodeBuilder};

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000a1";
const B: &str = "bbbbbbbb-0000-4000-8000-0000000000b2";
const C: &str = "cccccccc-0000-4000-8000-0000000000c3";

/// Three simulated H100s; GPU 2 offers a MIG layout made at prepare.
fn mig() -> MigConfig {
    MigConfig {
        advertise: Some(MigOffering::Layout),
        gpu: vec![MigGpuConfig {
            index: Some(2),
            layout: ["3g.40gb", "1g.10gb"].map(str::to_owned).to_vec(),
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    }
}

/// A daemon start on three simulated H100s: scan, engine, reconcile, MIG
/// set-up.
fn start() -> SimNode {
    SimNodeBuilder::h100s(3).mig(mig()).start()
}

fn req(uid: &str, device: &str) -> PrepareRequest {
    super::requests::request(uid, &[device])
}

fn lost() -> GpuError {
    GpuError::GpuLost {
        what: "GPU 1 (test)".into(),
    }
}

/// Runs `step` and says whether the generation moved (and the watch saw it).
fn bumps<T>(engine: &Engine, step: impl FnOnce() -> T) -> bool {
    let mut watch = engine.watch_generation();
    watch.borrow_and_update();
    let before = engine.generation();
    let _ = step();
    let moved = engine.generation() != before;
    assert_eq!(watch.has_changed().unwrap(), moved, "the watch follows");
    moved
}

#[test]
fn sim_every_change_of_the_inventory_answer_is_a_new_generation() {
    let node = start();
    let (sim, engine) = (&node.sim, node.engine());
    assert!(bumps(engine, || engine.prepare(&req(A, "gpu-0")).unwrap()));
    assert!(!bumps(engine, || engine.prepare(&req(A, "gpu-0")).unwrap()));
    assert!(!bumps(engine, || engine
        .prepare(&req(B, "gpu-0"))
        .unwrap_err()));
    assert!(bumps(engine, || engine.unprepare(A).unwrap()));
    assert!(!bumps(engine, || engine.unprepare(A).unwrap()));

    // A slice made by a prepare: its uuid attribute comes, and goes again.
    let slice = engine.inventory().mig[0].name.clone();
    let uuid_of = |engine: &Engine| {
        let inventory = engine.inventory();
        let found = inventory.mig.iter().find(|m| m.name == slice).unwrap();
        found.uuid.clone()
    };
    assert_eq!(uuid_of(engine), None);
    assert!(bumps(engine, || engine.prepare(&req(C, &slice)).unwrap()));
    assert!(uuid_of(engine).is_some_and(|u| u.starts_with("MIG-")));
    assert!(bumps(engine, || engine.unprepare(C).unwrap()));
    assert_eq!(uuid_of(engine), None);

    // A prepare that reserved, then failed: the reservation was visible.
    sim.faults().fail_next(op::CREATE_GPU_INSTANCE, lost());
    assert!(bumps(engine, || engine
        .prepare(&req(C, &slice))
        .unwrap_err()));

    // Health: a fault and an operator's clear.
    let watcher_event = |kind| super::health::event(&node, 1, None, kind);
    assert!(bumps(engine, || watcher_event(HealthEventKind::Xid(79))));
    assert!(bumps(engine, || engine.clear_health("gpu-1").unwrap()));
    assert!(!bumps(engine, || engine.clear_health("gpu-1").unwrap()));

    // A rescan (SIGHUP) that finds nothing new is not a change.
    assert!(!bumps(engine, || engine.setup_mig(&mig()).unwrap()));
}

#[test]
fn sim_a_gpu_lost_before_a_rescan_is_left_out_and_its_claims_stay_unpreparable() {
    let node = start();
    let (sim, engine) = (&node.sim, node.engine());
    engine.prepare(&req(A, "gpu-1")).unwrap();
    let uuid = engine.inventory().gpu("gpu-1").unwrap().info.uuid.clone();

    sim.faults().fail_gpu(op::DEVICE_INFO, 1, lost());
    assert!(bumps(engine, || engine.setup_mig(&mig()).unwrap()));
    let inventory = engine.inventory();
    assert!(inventory.gpu("gpu-1").is_none());
    assert!(inventory.gpu("gpu-0").is_some() && inventory.gpu("gpu-2").is_some());
    assert!(
        !inventory.mig.is_empty(),
        "GPU 2's slices are still offered"
    );
    assert_eq!(inventory.unreadable.len(), 1);
    assert_eq!(inventory.unreadable[0].uuid.as_deref(), Some(uuid.as_str()));
    let problems = engine.problems().join("\n");
    assert!(
        problems.contains(&format!("gpu-1 ({uuid}) cannot be read (device info: ")),
        "{problems}"
    );
    let unhealthy = engine.view().unhealthy_devices();
    assert_eq!(unhealthy.len(), 1, "{unhealthy:?}");
    assert_eq!(unhealthy[0].device, "gpu-1");
    assert_eq!(unhealthy[0].gpu_uuid, uuid);
    assert_eq!(unhealthy[0].claims, vec![A.to_owned()]);
    assert!(unhealthy[0].fault.reason.contains("cannot be read"));
    let record = engine.claims().remove(0);
    assert_eq!(engine.claim_health_problems(&record).len(), 1);

    // Its claim cannot be prepared again, a new one cannot name it, and the
    // claim can go.
    let again = engine.prepare(&req(A, "gpu-1")).unwrap_err();
    assert!(matches!(again, ClaimError::DeviceGone { .. }), "{again}");
    let new = engine.prepare(&req(B, "gpu-1")).unwrap_err();
    assert!(matches!(new, ClaimError::UnknownDevice { .. }), "{new}");
    // A later rescan with the GPU still lost changes nothing.
    assert!(!bumps(engine, || engine.setup_mig(&mig()).unwrap()));
    assert_eq!(engine.unprepare(A).unwrap(), Unprepared::Removed);

    // It answers again: the next rescan offers it.
    sim.faults().heal_gpu(op::DEVICE_INFO, 1);
    assert!(bumps(engine, || engine.setup_mig(&mig()).unwrap()));
    assert!(engine.inventory().gpu("gpu-1").is_some());
    assert!(engine.view().unhealthy_devices().is_empty());
    assert!(!engine.problems().join("\n").contains("cannot be read"));
}

#[test]
fn sim_a_gpu_unreadable_at_start_up_does_not_stop_the_daemon() {
    let mut node = start();
    node.engine().prepare(&req(A, "gpu-1")).unwrap();
    node.restart_with(|node| node.sim.faults().fail_gpu(op::DEVICE_INFO, 1, lost()));
    let engine = node.engine();
    let inventory = engine.inventory();
    let names: Vec<&str> = inventory.gpus.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["gpu-0", "gpu-2"]);
    assert_eq!(inventory.unreadable[0].label(), "gpu-1 (index 1)");
    assert_eq!(engine.claims().len(), 1, "the claim's record is kept");
    let problems = engine.problems().join("\n");
    assert!(
        problems.contains("gpu-1 (index 1) cannot be read"),
        "{problems}"
    );
    assert!(problems.contains("no longer on this node"), "{problems}");
    let unhealthy = engine.view().unhealthy_devices();
    assert_eq!(unhealthy[0].claims, vec![A.to_owned()], "matched by name");
    assert_eq!(unhealthy[0].gpu_uuid, "");
    assert_eq!(engine.unprepare(A).unwrap(), Unprepared::Removed);
}
