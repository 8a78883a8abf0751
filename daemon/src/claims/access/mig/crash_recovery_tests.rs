//! Start-up repairs of the states a crash leaves, one test per state the
//! crash-point e2e test (tests/e2e/crash_points.rs) found left unrepaired:
//! a slice without its compute instance, a record whose MIG UUID is stale,
//! a whole-GPU claim's GPU back in MIG mode, a slice made ahead without its
//! compute instance, temp files in the state folder.

use super::tests::{A, ahead, every_gpu, req, start};
use crate::config::MigOffering;
use crate::gpu::sim::SimModel;
use crate::gpu::{GpuBackend, MigMode, MigSupport};
use crate::testkit::SimNode;

const SLICE: &str = "gpu-0-mig-2g20gb-2";

fn node() -> SimNode {
    start(
        &[SimModel::H100_80GB],
        every_gpu(Some(MigOffering::Partitionable), &[]),
    )
}

/// The slice of the claim's record on disk.
fn saved_slice(node: &SimNode) -> crate::state::MigSlice {
    let loaded = crate::state::Store::open(&node.state_dir())
        .unwrap()
        .load_all()
        .unwrap();
    loaded.records[0].devices[0].mig.clone().unwrap()
}

#[test]
fn a_slice_left_without_its_compute_instance_gets_it_and_the_claim_its_uuid() {
    let mut node = node();
    let before = node.engine().prepare(&req(A, &[SLICE])).unwrap();
    // As an unprepare leaves it when the daemon dies between the two
    // destroys: the GPU instance without its compute instance, the record.
    let mut old = None;
    node.restart_with(|node| {
        let gi = node.sim.gpu_instances(0).unwrap().remove(0);
        let ci = gi.compute_instances[0].clone();
        node.sim.destroy_compute_instance(0, gi.id, ci.id).unwrap();
        old = Some(ci);
    });
    let old = old.unwrap();
    let engine = node.engine();
    let gis = node.sim.gpu_instances(0).unwrap();
    assert_eq!(gis.len(), 1);
    let ci = &gis[0].compute_instances;
    assert_eq!(ci.len(), 1, "the compute instance is made again");
    assert_ne!(ci[0].uuid, old.uuid);
    let held = engine.claims()[0].devices[0].mig.clone().unwrap();
    assert_eq!(held.mig_uuid.as_ref(), Some(&ci[0].uuid));
    assert_eq!(saved_slice(&node), held, "saved");
    let again = engine.prepare(&req(A, &[SLICE])).unwrap();
    assert_eq!(
        again.record().devices[0].cdi_device_ids,
        before.record().devices[0].cdi_device_ids
    );
    engine.unprepare(A).unwrap();
    assert!(node.sim.gpu_instances(0).unwrap().is_empty());
}

#[test]
fn a_slice_made_again_before_a_crash_is_taken_with_its_ids_not_made_twice() {
    let mut node = node();
    node.engine().prepare(&req(A, &[SLICE])).unwrap();
    // A reboot, then a start that made the slice again and died before it
    // saved the new ids: the record still names the old MIG device.
    let mut made = None;
    node.reboot_with("b2", |node| {
        let rebooted = &node.sim;
        rebooted.set_mig_mode(0, MigMode::Enabled).unwrap();
        let profile = (rebooted.mig_profiles(0).unwrap().into_iter())
            .find(|p| p.name == "2g.20gb")
            .unwrap();
        let placement = crate::gpu::Placement { start: 2, size: 2 };
        let gi = (rebooted.create_gpu_instance(0, profile.id, placement)).unwrap();
        let ci = rebooted.create_compute_instance(0, gi.id).unwrap();
        made = Some((gi, ci));
    });
    let (gi, ci) = made.unwrap();
    let engine = node.engine();
    let gis = node.sim.gpu_instances(0).unwrap();
    assert_eq!(gis.len(), 1, "{gis:?}");
    let held = engine.claims()[0].devices[0].mig.clone().unwrap();
    assert_eq!(held.mig_uuid, Some(ci.uuid.clone()));
    assert_eq!(
        (held.gpu_instance, held.compute_instance),
        (Some(gi.id), Some(ci.id))
    );
    assert_eq!(saved_slice(&node), held, "saved");
}

#[test]
fn a_whole_gpu_claims_gpu_back_in_mig_mode_is_taken_out_again() {
    let mut node = node();
    node.engine().prepare(&req(A, &["gpu-0"])).unwrap();
    // The claim's unprepare put MIG mode back and died before the record
    // went: the record, and the GPU in MIG mode.
    node.restart_with(|node| {
        node.sim.set_mig_mode(0, MigMode::Enabled).unwrap();
    });
    let engine = node.engine();
    let disabled = MigSupport::Supported {
        current: MigMode::Disabled,
        pending: MigMode::Disabled,
    };
    assert_eq!(node.sim.device_info(0).unwrap().mig, disabled);
    assert!(
        !engine
            .problems()
            .iter()
            .any(|p| p.contains("out of MIG mode")),
        "{:?}",
        engine.problems()
    );
    engine.unprepare(A).unwrap();
    let enabled = node.sim.device_info(0).unwrap().mig;
    assert!(
        matches!(
            enabled,
            MigSupport::Supported {
                current: MigMode::Enabled,
                ..
            }
        ),
        "{enabled:?}"
    );
}

#[test]
fn a_slice_made_ahead_without_its_compute_instance_gets_it() {
    let mut node = start(&[SimModel::H100_80GB], ahead(&["3g.40gb", "1g.10gb"]));
    node.restart_with(|node| {
        let gi = node.sim.gpu_instances(0).unwrap().remove(0);
        let ci = gi.compute_instances[0].id;
        node.sim.destroy_compute_instance(0, gi.id, ci).unwrap();
    });
    let engine = node.engine();
    let gis = node.sim.gpu_instances(0).unwrap();
    assert_eq!(gis.len(), 2);
    assert!(
        gis.iter().all(|gi| gi.compute_instances.len() == 1),
        "{gis:?}"
    );
    assert!(engine.inventory().mig.iter().all(|m| m.uuid.is_some()));
}

#[test]
fn temp_files_a_crash_left_in_the_state_folder_are_removed() {
    let mut node = node();
    let state = node.state_dir();
    let temps = [".mig-ahead.json.tmp-4242-0", ".health.json.tmp-4242-1"];
    node.restart_with(|_| {
        for name in temps {
            gpuslice_cdi::write_atomic(&state, name, b"{", 0o600).unwrap();
        }
        gpuslice_cdi::write_atomic(&state, "keep.json", b"{}", 0o600).unwrap();
    });
    for name in temps {
        assert!(!state.join(name).exists(), "{name}");
    }
    assert!(state.join("keep.json").exists(), "only temp files go");
}
