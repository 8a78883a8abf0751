//! The claim engine's tests, each on a simulated node of the test kit
//! ([`crate::testkit`]).
//!
//! This module owns the engine-wide tests: the inventory generation
//! ([`generation`]), device health ([`health`]), claims' own limits
//! ([`limits`]), reloads among claims in
//! flight ([`reload`]), the upgrade fixtures ([`upgrade_fixture`]), and the
//! prepare/unprepare basics (this file); [`requests`] re-exports the kit's
//! request builders. Tests of one kind of access live in its own module
//! (`access/mig/tests.rs`, `access/shared_gpu/tests.rs`). Nothing here is
//! built outside `cargo test`.

mod generation;
mod health;
mod limits;
mod reload;
pub(crate) mod requests;
mod upgrade_fixture;

use std::sync::Arc;

use gpuslice_cdi::atomic::write_atomic;

use super::table::{Share, Want};
use super::{ClaimError, Prepared, Unprepared};
use crate::config::{MigConfig, MigGpuConfig, MigOffering};
use crate::gpu::sim::{SimBackend, SimModel};
use crate::state::AccessKind;
use crate::state::{Phase, Store};
use crate::testkit::requests::{mps, request_with, timeslicing};
use crate::testkit::{SimNode, SimNodeBuilder};
use requests::request as req;

const A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const B: &str = "bbbbbbbb-0000-4000-8000-000000000002";

/// `gpus` simulated H100s, boot `boot-1`.
fn node(gpus: usize) -> SimNode {
    SimNodeBuilder::h100s(gpus).boot("boot-1").start()
}

fn ids(p: &Prepared) -> Vec<String> {
    p.record()
        .devices
        .iter()
        .flat_map(|d| d.cdi_device_ids.clone())
        .collect()
}

#[test]
fn sim_prepare_writes_spec_and_record() {
    let node = node(2);
    let prepared = node.engine().prepare(&req(A, &["gpu-1"])).unwrap();
    assert!(matches!(prepared, Prepared::Created(_)));
    assert_eq!(
        ids(&prepared),
        vec![format!("k8s.gpuslice.dev/claim={A}-gpu-1")]
    );
    let spec = node.spec(A).unwrap();
    assert_eq!(spec["devices"][0]["name"], format!("{A}-gpu-1"));
    assert_eq!(
        spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"],
        "/dev/nvidia1"
    );
    assert!(node.has_record(A));
}

#[test]
fn sim_prepare_twice_returns_the_same_ids() {
    let node = node(2);
    let engine = node.engine();
    let first = engine.prepare(&req(A, &["gpu-0", "gpu-1"])).unwrap();
    let again = engine.prepare(&req(A, &["gpu-1", "gpu-0"])).unwrap();
    assert!(matches!(again, Prepared::AlreadyPrepared(_)));
    assert_eq!(ids(&first), ids(&again));
}

#[test]
fn sim_reprepare_rewrites_a_deleted_spec() {
    let node = node(1);
    let engine = node.engine();
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    std::fs::remove_file(node.spec_path(A)).unwrap();
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    assert!(node.spec_path(A).exists());
}

#[test]
fn sim_a_held_gpu_is_refused_naming_the_holder() {
    let node = node(2);
    let engine = node.engine();
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    let err = engine.prepare(&req(B, &["gpu-1", "gpu-0"])).unwrap_err();
    assert!(
        matches!(&err, ClaimError::DeviceHeld { holder, .. } if holder == A),
        "{err}"
    );
    // Nothing of B is left: its other GPU is free, no spec, no record.
    assert!(!node.spec_path(B).exists());
    assert!(!node.has_record(B));
    engine.prepare(&req(B, &["gpu-1"])).unwrap();
}

#[test]
fn sim_same_claim_with_other_devices_is_refused() {
    let node = node(2);
    let engine = node.engine();
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    let err = engine.prepare(&req(A, &["gpu-1"])).unwrap_err();
    assert!(
        matches!(err, ClaimError::PreparedDifferently { .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "claim {A} is already prepared with devices [gpu-0], and this prepare asks for \
             devices [gpu-1]; a prepared claim cannot change: unprepare it first, or use a new \
             claim uid"
        )
    );
}

#[test]
fn sim_unprepare_frees_everything_and_is_idempotent() {
    let node = node(1);
    let engine = node.engine();
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    assert_eq!(engine.unprepare(A).unwrap(), Unprepared::Removed);
    assert_eq!(engine.unprepare(A).unwrap(), Unprepared::NotPresent);
    assert!(!node.spec_path(A).exists());
    assert!(!node.has_record(A));
    engine.prepare(&req(B, &["gpu-0"])).unwrap();
}

#[test]
fn sim_unprepare_of_an_unknown_claim_succeeds() {
    let node = node(1);
    let engine = node.engine();
    assert_eq!(engine.unprepare(B).unwrap(), Unprepared::NotPresent);
    assert!(matches!(
        engine.unprepare("x/../y"),
        Err(ClaimError::InvalidUid { .. })
    ));
}

#[test]
fn sim_a_missing_device_node_fails_cleanly() {
    let node = SimNodeBuilder::h100s(2).real_size_root().start();
    std::fs::remove_file(node.root().join("dev/nvidia1")).unwrap();
    let engine = node.engine();
    let err = engine.prepare(&req(A, &["gpu-1"])).unwrap_err();
    assert!(matches!(err, ClaimError::DeviceNodeMissing { .. }), "{err}");
    assert!(!node.spec_path(A).exists());
    assert!(!node.has_record(A));
    engine.prepare(&req(B, &["gpu-1"])).unwrap_err();
    engine.prepare(&req(B, &["gpu-0"])).unwrap();
}

#[test]
fn sim_restart_keeps_claims_and_ids() {
    let mut node = node(2);
    let first = node.engine().prepare(&req(A, &["gpu-1"])).unwrap();
    node.restart();
    let engine = node.engine();
    assert_eq!(engine.claims().len(), 1);
    let again = engine.prepare(&req(A, &["gpu-1"])).unwrap();
    assert_eq!(ids(&first), ids(&again));
    let err = engine.prepare(&req(B, &["gpu-1"])).unwrap_err();
    assert!(matches!(err, ClaimError::DeviceHeld { .. }));
}

#[test]
fn sim_reboot_rewrites_wiped_specs_and_restamps_records() {
    let mut node = node(1);
    node.engine().prepare(&req(A, &["gpu-0"])).unwrap();
    node.reboot_with("boot-2", |node| {
        std::fs::remove_dir_all(node.cdi_dir()).unwrap();
    });
    assert!(node.spec_path(A).exists());
    assert_eq!(node.engine().claims()[0].boot_id, "boot-2");
}

#[test]
fn sim_reconcile_removes_stray_specs_and_rolls_back_half_prepares() {
    let mut node = node(2);
    node.engine().prepare(&req(A, &["gpu-0"])).unwrap();
    node.engine().prepare(&req(B, &["gpu-1"])).unwrap();
    node.restart_with(|node| {
        // A spec whose record never got written, and a record cut off mid-prepare.
        std::fs::remove_file(node.record_path(A)).unwrap();
        let store = Store::open(&node.state_dir()).unwrap();
        let mut half = store.load_all().unwrap().records.remove(0);
        half.phase = Phase::Preparing;
        store.save(&half).unwrap();
        let cdi_dir = node.cdi_dir();
        let plant = |name: &str, bytes: &[u8]| write_atomic(&cdi_dir, name, bytes, 0o644).unwrap();
        plant(".k8s.gpuslice.dev-claim_x.json.tmp-1-1", b"{");
        plant("other-vendor.json", b"{}");
    });
    assert!(node.engine().claims().is_empty());
    assert_eq!(node.cdi_files(), vec!["other-vendor.json"]);
    let records = std::fs::read_dir(node.state_dir().join("claims")).unwrap();
    assert_eq!(records.count(), 0);
}

#[test]
fn sim_a_vanished_gpu_is_a_problem_not_a_crash() {
    let mut node = SimNodeBuilder::h100s(2)
        .boot("boot-1")
        .hardware_in_memory()
        .start();
    node.engine().prepare(&req(A, &["gpu-1"])).unwrap();
    node.restart_with(|node| {
        std::fs::remove_dir_all(node.cdi_dir()).unwrap();
        node.sim = Arc::new(SimBackend::new(vec![SimModel::H100_80GB], "test"));
    });
    let engine = node.engine();
    assert_eq!(engine.claims().len(), 1);
    let problems = engine.problems().join("\n");
    assert!(problems.contains("no longer on this node"), "{problems}");
    assert_eq!(engine.unprepare(A).unwrap(), Unprepared::Removed);
}

#[test]
fn sim_concurrent_prepares_of_one_gpu_give_it_to_one_claim() {
    let node = node(1);
    let uids: Vec<String> = (0..16)
        .map(|i| format!("cccccccc-0000-4000-8000-{i:012}"))
        .collect();
    let threads: Vec<_> = uids
        .iter()
        .cloned()
        .map(|uid| {
            let engine = node.engine().clone();
            std::thread::spawn(move || engine.prepare(&req(&uid, &["gpu-0"])).is_ok())
        })
        .collect();
    let won = threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(|ok| *ok)
        .count();
    assert_eq!(won, 1);
    assert_eq!(node.cdi_files().len(), 1);
}

#[test]
fn sim_a_record_read_back_holds_what_its_prepare_reserved() {
    let mig = MigConfig {
        advertise: Some(MigOffering::Layout),
        gpu: vec![MigGpuConfig {
            index: Some(3),
            layout: ["3g.40gb", "1g.10gb"].map(str::to_owned).to_vec(),
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    };
    let node = SimNodeBuilder::h100s(4).mig(mig).fake_tools().start();
    let engine = node.engine();
    let slice = engine.inventory().mig[0].name.clone();
    let mps_on_mig = r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig","sharing":{"strategy":"MPS"}}"#;
    let claims = [
        request_with(A, &["gpu-0"], &[] as &[&str]),
        request_with(B, &["gpu-1"], &[mps(50)]),
        request_with(
            "cccccccc-0000-4000-8000-000000000003",
            &["gpu-2"],
            &[timeslicing("Long")],
        ),
        request_with(
            "dddddddd-0000-4000-8000-000000000004",
            &[&slice],
            &[mps_on_mig],
        ),
    ];
    let inventory = engine.inventory();
    let mut shares = Vec::new();
    for claim in &claims {
        let prepared = engine.prepare(claim).unwrap();
        let d = &prepared.record().devices[0];
        let asked = inventory.device(&d.device).unwrap();
        let reserved = Want::of_device(&asked, d.sharing.as_ref());
        assert_eq!(Want::of_record(d), reserved, "{}", d.device);
        assert_eq!(reserved.gpu_uuid, asked.gpu().info.uuid);
        shares.push(reserved.share);
    }
    let placement = inventory.mig[0].placement;
    assert_eq!(
        shares,
        [
            Share::Whole,
            Share::Shared(AccessKind::Mps),
            Share::Shared(AccessKind::TimeSlicing),
            Share::Slice(placement),
        ],
        "a slice stays the claim's alone, MPS or not"
    );
}

#[test]
fn sim_the_status_lists_each_kinds_problems_in_the_kinds_order() {
    let mig = MigConfig {
        advertise: Some(MigOffering::Layout),
        gpu: vec![MigGpuConfig {
            index: Some(1),
            layout: vec!["1g.10gb".to_owned()],
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    };
    let mut node = SimNodeBuilder::h100s(2)
        .mig(mig)
        .foreign_instance(1, "2g.20gb", 0)
        .fake_tools()
        .start();
    node.engine()
        .prepare(&request_with(A, &["gpu-0"], &[timeslicing("Medium")]))
        .unwrap();
    // The GPU no longer takes the interval when gpusliced starts again: the
    // claim stays prepared, and the time-slice kind reports it.
    node.smi.as_ref().unwrap().unsupported(&node.uuid(0));
    node.restart();
    let engine = node.engine();
    let problems = engine.problems();
    let at = |words: &str| problems.iter().position(|p| p.contains(words));
    let (mig, timeslice) = (
        at("not created by gpusliced"),
        at("does not support time-slice"),
    );
    assert!(mig.is_some() && timeslice.is_some(), "{problems:?}");
    assert!(mig < timeslice, "MIG before time-slicing: {problems:?}");
}
