//! Engine tests of MIG claims on the simulated backend: every profile of every
//! model, two slices of one parent, the whole GPU against live slices, a
//! failure between GI and CI creation, restarts and reboots.

pub(in crate::claims) use crate::claims::tests::requests::request as req;
use crate::claims::{ClaimError, Engine, Unprepared};
use crate::config::{MigConfig, MigGpuConfig, MigOffering};
use crate::gpu::sim::{SimBackend, SimModel, op};
use crate::gpu::{GpuBackend, GpuError, MigMode, MigSupport};
use crate::inventory::DeviceRef;
use crate::state::{Phase, Store};
use crate::testkit::{SimNode, SimNodeBuilder};

pub(in crate::claims) const A: &str = "aaaaaaaa-0000-4000-8000-00000000000a";
const B: &str = "bbbbbbbb-0000-4000-8000-00000000000b";

pub(in crate::claims) fn every_gpu(advertise: Option<MigOffering>, layout: &[&str]) -> MigConfig {
    MigConfig {
        advertise,
        gpu: vec![MigGpuConfig {
            layout: layout.iter().map(|s| (*s).to_owned()).collect(),
            ..MigGpuConfig::default()
        }],
        ..MigConfig::default()
    }
}

/// A daemon start on `models` with `mig`: engine, reconcile, MIG set-up.
pub(in crate::claims) fn start(models: &[SimModel], mig: MigConfig) -> SimNode {
    SimNodeBuilder::models(models).mig(mig).start()
}

fn instances(backend: &SimBackend, index: u32) -> usize {
    backend.gpu_instances(index).unwrap().len()
}

/// The simulated driver root lists the MIG capability minors of 8 GPUs, as
/// a node of at most 8: the models go 8 to a node.
#[test]
fn every_profile_at_every_placement_of_every_model_can_be_claimed_and_released() {
    let models: Vec<SimModel> = SimModel::with_mig().collect();
    let mut claimed = 0;
    for node_models in models.chunks(8) {
        claimed += claim_every_slice(node_models);
    }
    let expected: usize = SimModel::with_mig()
        .flat_map(|m| m.spec().gi_profiles.iter())
        .map(|p| p.placements.len())
        .sum();
    assert_eq!(claimed, expected);
}

/// Claims and releases every slice of a partitionable node of `models`, one
/// at a time; how many.
fn claim_every_slice(models: &[SimModel]) -> usize {
    let node = start(models, every_gpu(Some(MigOffering::Partitionable), &[]));
    let (backend, engine) = (&node.sim, node.engine());
    let inventory = engine.inventory();
    assert!(inventory.problems.is_empty(), "{:?}", inventory.problems);
    let mut claimed = 0;
    for slice in &inventory.mig {
        let parent = inventory.gpus[slice.parent].info.index;
        let prepared = engine.prepare(&req(A, &[&slice.name])).unwrap();
        let device = &prepared.record().devices[0];
        let mig = device.mig.as_ref().unwrap();
        assert!(mig.created, "{}", slice.name);
        assert!(mig.mig_uuid.as_ref().unwrap().starts_with("MIG-"));
        let spec =
            std::fs::read_to_string(node.cdi_dir().join(&prepared.record().cdi_spec_file)).unwrap();
        assert!(spec.contains("/dev/nvidia-caps/nvidia-cap"), "{spec}");
        assert_eq!(instances(backend, parent), 1, "{}", slice.name);
        assert_eq!(engine.unprepare(A).unwrap(), Unprepared::Removed);
        assert_eq!(instances(backend, parent), 0, "{} left behind", slice.name);
        claimed += 1;
    }
    assert_eq!(node.cdi_files().len(), 0);
    claimed
}

#[test]
fn two_slices_of_one_parent_in_one_claim() {
    let node = start(
        &[SimModel::A100_80GB],
        every_gpu(Some(MigOffering::Layout), &["3g.40gb", "1g.10gb"]),
    );
    let (backend, engine) = (&node.sim, node.engine());
    let names: Vec<String> = engine
        .inventory()
        .mig
        .iter()
        .map(|m| m.name.clone())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let prepared = engine.prepare(&req(A, &refs)).unwrap();
    let uuids: Vec<&str> = prepared
        .record()
        .devices
        .iter()
        .map(|d| d.uuid.as_str())
        .collect();
    assert_eq!(uuids[0], uuids[1], "same parent");
    assert_eq!(instances(backend, 0), 2);
    engine.unprepare(A).unwrap();
    assert_eq!(instances(backend, 0), 0);
}

#[test]
fn the_whole_gpu_is_refused_while_a_slice_is_live_then_granted() {
    let node = start(
        &[SimModel::H100_80GB],
        every_gpu(Some(MigOffering::Partitionable), &[]),
    );
    let (backend, engine) = (&node.sim, node.engine());
    engine.prepare(&req(A, &["gpu-0-mig-1g10gb-3"])).unwrap();
    let err = engine.prepare(&req(B, &["gpu-0"])).unwrap_err();
    assert!(
        matches!(&err, ClaimError::DeviceHeld { holder, .. } if holder == A),
        "{err}"
    );
    let err = engine
        .prepare(&req(B, &["gpu-0-mig-3g40gb-0"]))
        .unwrap_err();
    assert!(matches!(&err, ClaimError::DeviceHeld { .. }), "{err}");
    engine.unprepare(A).unwrap();
    // Hopper leaves MIG mode at once, so the whole GPU can be handed out.
    engine.prepare(&req(B, &["gpu-0"])).unwrap();
    let mode = backend.device_info(0).unwrap().mig;
    assert!(matches!(
        mode,
        MigSupport::Supported {
            current: MigMode::Disabled,
            ..
        }
    ));
    engine.unprepare(B).unwrap();
    let mode = backend.device_info(0).unwrap().mig;
    assert!(matches!(
        mode,
        MigSupport::Supported {
            current: MigMode::Enabled,
            ..
        }
    ));
}

#[test]
fn a_failure_between_gi_and_ci_creation_leaves_nothing_behind() {
    let node = start(
        &[SimModel::H100_80GB],
        every_gpu(Some(MigOffering::Layout), &["3g.40gb"]),
    );
    let (backend, engine) = (&node.sim, node.engine());
    let slice = engine.inventory().mig[0].name.clone();
    backend.faults().fail_next(
        op::CREATE_COMPUTE_INSTANCE,
        GpuError::InsufficientResources {
            what: "injected".into(),
        },
    );
    let err = engine.prepare(&req(A, &[&slice])).unwrap_err();
    assert!(matches!(
        err,
        ClaimError::Gpu(GpuError::InsufficientResources { .. })
    ));
    assert_eq!(instances(backend, 0), 0, "no GI without CI");
    assert!(engine.claims().is_empty());
    assert_eq!(node.cdi_files().len(), 0);
    engine.prepare(&req(A, &[&slice])).unwrap();
    assert_eq!(instances(backend, 0), 1, "the retry works");
}

#[test]
fn a_restart_keeps_live_slices_and_a_cut_short_prepare_is_rolled_back() {
    let mut node = start(
        &[SimModel::H100_80GB],
        every_gpu(Some(MigOffering::Partitionable), &[]),
    );
    let (backend, engine) = (&node.sim, node.engine());
    let live = engine.prepare(&req(A, &["gpu-0-mig-3g40gb-4"])).unwrap();
    let live_uuid = live.record().devices[0].mig.clone().unwrap().mig_uuid;
    // A prepare that died after creating its GI: a `preparing` record and a GI.
    let mut half = live.record().clone();
    half.uid = B.to_owned();
    half.phase = Phase::Preparing;
    half.cdi_spec_file = crate::cdi_build::spec_file_name(B);
    let slice = half.devices[0].mig.as_mut().unwrap();
    slice.start = 0;
    slice.gpu_instance = None;
    slice.compute_instance = None;
    slice.mig_uuid = None;
    let gi = backend
        .create_gpu_instance(0, slice.profile_id, super::slice_placement(slice))
        .unwrap();
    Store::open(&node.state_dir()).unwrap().save(&half).unwrap();
    assert_eq!(instances(backend, 0), 2);

    node.restart();
    let restarted = node.engine();
    let left = node.sim.gpu_instances(0).unwrap();
    assert_eq!(left.len(), 1, "the orphan GI {} is destroyed", gi.id);
    assert_eq!(
        left[0].compute_instances[0].uuid,
        live_uuid.clone().unwrap(),
        "the live slice is untouched"
    );
    let again = restarted.prepare(&req(A, &["gpu-0-mig-3g40gb-4"])).unwrap();
    assert_eq!(
        again.record().devices[0].mig.clone().unwrap().mig_uuid,
        live_uuid
    );
    assert_eq!(restarted.claims().len(), 1);
}

#[test]
fn a_reboot_recreates_the_slices_of_prepared_claims() {
    let mut node = start(
        &[SimModel::H100_80GB],
        every_gpu(Some(MigOffering::Partitionable), &[]),
    );
    let before = (node.engine())
        .prepare(&req(A, &["gpu-0-mig-2g20gb-2"]))
        .unwrap();
    node.reboot("b2");
    let engine = node.engine();
    let gis = node.sim.gpu_instances(0).unwrap();
    assert_eq!(gis.len(), 1, "re-created at start-up");
    assert_eq!(gis[0].placement.start, 2);
    let again = engine.prepare(&req(A, &["gpu-0-mig-2g20gb-2"])).unwrap();
    assert_eq!(
        again.record().devices[0].cdi_device_ids,
        before.record().devices[0].cdi_device_ids,
        "the CDI ids never change"
    );
}

#[test]
fn a_busy_ampere_gpu_cannot_leave_mig_mode_and_keeps_it() {
    let node = start(
        &[SimModel::A100_40GB],
        every_gpu(Some(MigOffering::Partitionable), &[]),
    );
    let (backend, engine) = (&node.sim, node.engine());
    assert!(
        !engine.inventory().mig.is_empty(),
        "{:?}",
        engine.problems()
    );
    backend.set_busy(0, true).unwrap();
    let err = engine.prepare(&req(A, &["gpu-0"])).unwrap_err();
    assert!(matches!(err, ClaimError::MigModeStuck { .. }), "{err}");
    assert!(engine.claims().is_empty());
    let mode = backend.device_info(0).unwrap().mig;
    assert_eq!(
        mode,
        MigSupport::Supported {
            current: MigMode::Enabled,
            pending: MigMode::Enabled
        },
        "no change left pending for the next reboot"
    );
}

pub(in crate::claims) fn ahead(layout: &[&str]) -> MigConfig {
    MigConfig {
        create: crate::config::MigCreate::Ahead,
        ..every_gpu(Some(MigOffering::Layout), layout)
    }
}

#[test]
fn ahead_slices_are_made_at_start_handed_out_kept_and_reshaped_around_held_ones() {
    let mut node = start(
        &[SimModel::H100_80GB],
        ahead(&["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]),
    );
    let (backend, engine) = (&node.sim, node.engine());
    assert_eq!(instances(backend, 0), 4);
    let inventory = engine.inventory();
    assert!(
        inventory.mig.iter().all(|m| m.uuid.is_some()),
        "made ahead, so UUIDs are known"
    );
    let three = inventory
        .mig
        .iter()
        .find(|m| m.profile.name == "3g.40gb")
        .unwrap()
        .name
        .clone();
    let prepared = engine.prepare(&req(A, &[&three])).unwrap();
    assert!(!prepared.record().devices[0].mig.as_ref().unwrap().created);
    assert_eq!(instances(backend, 0), 4, "nothing new made at prepare");
    let held_gi = prepared.record().devices[0]
        .mig
        .as_ref()
        .unwrap()
        .gpu_instance;

    node.restart_with(|node| node.set_mig(ahead(&["3g.40gb", "3g.40gb"])));
    let engine = node.engine();
    let after = node.sim.gpu_instances(0).unwrap();
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(
        after.iter().any(|gi| Some(gi.id) == held_gi),
        "the held slice is untouched"
    );
    assert!(engine.problems().is_empty(), "{:?}", engine.problems());
    engine.unprepare(A).unwrap();
    assert_eq!(
        instances(&node.sim, 0),
        2,
        "a slice made ahead outlives its claim"
    );
}

#[test]
fn a_foreign_instance_is_left_alone_and_reported() {
    let mut node = start(&[SimModel::H100_80GB], ahead(&["1g.10gb"]));
    let mut foreign = None;
    node.restart_with(|node| {
        let profile = (node.sim.mig_profiles(0).unwrap().into_iter())
            .find(|p| p.name == "2g.20gb")
            .unwrap();
        let made = (node.sim)
            .create_gpu_instance(0, profile.id, profile.placements[0])
            .unwrap();
        foreign = Some(made);
    });
    let foreign = foreign.unwrap();
    let engine = node.engine();
    let gis = node.sim.gpu_instances(0).unwrap();
    assert!(gis.iter().any(|gi| gi.id == foreign.id), "left alone");
    assert_eq!(gis.len(), 2);
    let problems = engine.problems().join("\n");
    assert!(problems.contains("not created by gpusliced"), "{problems}");
}

/// The first free device of a profile in the offer: what the scheduler takes.
fn first_offered(engine: &Engine, profile: &str) -> String {
    let view = engine.view();
    view.each_device()
        .find(|(device, state)| {
            matches!(device, DeviceRef::Mig(m, _) if m.profile.name == profile) && state.available
        })
        .map(|(_, state)| state.name.clone())
        .unwrap()
}

#[test]
fn the_partitionable_offer_lists_the_top_placements_first_and_follows_what_is_held() {
    let node = start(
        &[SimModel::H100_80GB],
        every_gpu(Some(MigOffering::Partitionable), &[]),
    );
    let engine = node.engine();
    // A lone 1g goes to the top end, keeping 0..4 whole for a 4g or a 3g.
    let first = first_offered(engine, "1g.10gb");
    assert_eq!(first, "gpu-0-mig-1g10gb-6");
    engine.prepare(&req(A, &[&first])).unwrap();
    let next = first_offered(engine, "1g.10gb");
    assert_eq!(next, "gpu-0-mig-1g10gb-5", "packs down from the top");
    // A 3g now fits only at 0..4, and the offer says so first.
    assert_eq!(first_offered(engine, "3g.40gb"), "gpu-0-mig-3g40gb-0");
    engine.unprepare(A).unwrap();
    assert_eq!(first_offered(engine, "1g.10gb"), "gpu-0-mig-1g10gb-6");
}
