//! `sim_*` MIG tests: the shared MIG bodies on every model, and what only the
//! simulator promises: mode rules per architecture, NVML's instance ids,
//! deterministic MIG UUIDs, persistence across restarts and reboots, faults.

use crate::gpu::sim::{SimBackend, SimModel, op};
use crate::gpu::{
    ComputeMode, GpuBackend, GpuError, MigMode, MigSupport, Placement, mig_conformance,
};

const SEED: &str = "node-a";

fn enabled(model: SimModel) -> SimBackend {
    let sim = SimBackend::new(vec![model, model], SEED);
    for index in 0..2 {
        sim.set_mig_mode(index, MigMode::Enabled).unwrap();
    }
    sim
}

fn mode(current: MigMode, pending: MigMode) -> MigSupport {
    MigSupport::Supported { current, pending }
}

fn at(start: u32, size: u32) -> Placement {
    Placement { start, size }
}

macro_rules! sim_mig_model_tests {
    ($($name:ident => $model:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let sim = enabled(SimModel::$model);
                mig_conformance::all_mutating(&sim, 1);
                mig_conformance::instances_are_consistent(&sim, 1);
                let profiles = sim.mig_profiles(1).unwrap();
                assert_eq!(profiles.len(), SimModel::$model.spec().gi_profiles.len());
            }
        )*
    };
}

sim_mig_model_tests! {
    sim_mig_a100_40gb => A100_40GB,
    sim_mig_a100_80gb => A100_80GB,
    sim_mig_a30_24gb => A30_24GB,
    sim_mig_h100_80gb => H100_80GB,
    sim_mig_h100_nvl_94gb => H100_NVL_94GB,
    sim_mig_h200_141gb => H200_141GB,
}

/// With MIG disabled, NVML still answers the profile and instance queries
/// (profiles as with MIG on, no instances), as seen on an H100 with driver
/// 580.159.04; the verbs that change the geometry need MIG enabled.
#[test]
fn sim_mig_queries_answer_and_changes_need_mig_enabled() {
    let sim = SimBackend::new(vec![SimModel::H100_80GB], SEED);
    let not_supported = |r: Result<(), GpuError>| matches!(r, Err(GpuError::NotSupported { .. }));
    let mut table = SimModel::H100_80GB.spec().mig_profiles();
    table.sort_by_key(|p| p.index);
    assert_eq!(sim.mig_profiles(0).unwrap(), table);
    assert_eq!(sim.gpu_instances(0).unwrap(), Vec::new());
    assert!(not_supported(
        sim.create_gpu_instance(0, 19, at(0, 1)).map(drop)
    ));
    assert!(not_supported(sim.create_compute_instance(0, 7).map(drop)));
    assert!(not_supported(sim.destroy_gpu_instance(0, 7)));
}

#[test]
fn sim_hopper_switches_at_once_and_forgets_at_reboot() {
    let sim = SimBackend::new(vec![SimModel::H100_80GB], SEED);
    let on = mode(MigMode::Enabled, MigMode::Enabled);
    sim.set_busy(0, true).unwrap();
    let busy = sim.set_mig_mode(0, MigMode::Enabled);
    assert!(matches!(busy, Err(GpuError::InUse { .. })), "{busy:?}");
    let off = mode(MigMode::Disabled, MigMode::Disabled);
    assert_eq!(
        sim.device_info(0).unwrap().mig,
        off,
        "Hopper keeps nothing pending"
    );
    sim.set_busy(0, false).unwrap();
    assert_eq!(sim.set_mig_mode(0, MigMode::Enabled), Ok(on));
    assert_eq!(sim.device_info(0).unwrap().mig, on);
    sim.reboot().unwrap();
    assert_eq!(sim.device_info(0).unwrap().mig, off);
}

#[test]
fn sim_ampere_waits_for_idle_and_keeps_the_mode_at_reboot() {
    let sim = SimBackend::new(vec![SimModel::A100_40GB], SEED);
    sim.set_busy(0, true).unwrap();
    let busy = sim.set_mig_mode(0, MigMode::Enabled);
    assert!(matches!(busy, Err(GpuError::InUse { .. })), "{busy:?}");
    let pending = mode(MigMode::Disabled, MigMode::Enabled);
    assert_eq!(sim.device_info(0).unwrap().mig, pending);
    assert!(matches!(
        sim.create_gpu_instance(0, 19, at(0, 1)),
        Err(GpuError::NotSupported { .. })
    ));
    sim.set_busy(0, false).unwrap();
    let on = mode(MigMode::Enabled, MigMode::Enabled);
    assert_eq!(sim.set_mig_mode(0, MigMode::Enabled), Ok(on));
    sim.reboot().unwrap();
    assert_eq!(
        sim.device_info(0).unwrap().mig,
        on,
        "InfoROM keeps the mode"
    );
    // A change left pending by a busy GPU takes effect at the next boot.
    sim.set_busy(0, true).unwrap();
    sim.set_mig_mode(0, MigMode::Disabled).unwrap_err();
    sim.reboot().unwrap();
    let off = mode(MigMode::Disabled, MigMode::Disabled);
    assert_eq!(sim.device_info(0).unwrap().mig, off);
}

#[test]
fn sim_disabling_with_instances_is_in_use() {
    for model in [SimModel::A30_24GB, SimModel::H200_141GB] {
        let sim = enabled(model);
        let p = &sim.mig_profiles(0).unwrap()[0];
        sim.create_gpu_instance(0, p.id, p.placements[0]).unwrap();
        let refused = sim.set_mig_mode(0, MigMode::Disabled);
        assert!(
            matches!(refused, Err(GpuError::InUse { .. })),
            "{refused:?}"
        );
        let on = mode(MigMode::Enabled, MigMode::Enabled);
        assert_eq!(sim.device_info(0).unwrap().mig, on);
        mig_conformance::clear(&sim, 0);
        let off = mode(MigMode::Disabled, MigMode::Disabled);
        assert_eq!(sim.set_mig_mode(0, MigMode::Disabled), Ok(off));
    }
}

#[test]
fn sim_instance_ids_are_nvmls() {
    // The A100 geometry `nvidia-smi mig -cgi 19,14,5` gives: 1g at 6:1 is
    // GI 13, 2g at 4:2 is GI 5, 4g at 0:4 is GI 1.
    let sim = enabled(SimModel::A100_40GB);
    assert_eq!(sim.create_gpu_instance(0, 19, at(6, 1)).unwrap().id, 13);
    assert_eq!(sim.create_gpu_instance(0, 14, at(4, 2)).unwrap().id, 5);
    assert_eq!(sim.create_gpu_instance(0, 5, at(0, 4)).unwrap().id, 1);
    let ids: Vec<u32> = sim
        .gpu_instances(0)
        .unwrap()
        .iter()
        .map(|gi| gi.id)
        .collect();
    assert_eq!(ids, [1, 5, 13]);
    let sim = enabled(SimModel::A30_24GB);
    assert_eq!(sim.create_gpu_instance(0, 0, at(0, 4)).unwrap().id, 0);
    sim.destroy_gpu_instance(0, 0).unwrap();
    assert_eq!(sim.create_gpu_instance(0, 5, at(2, 2)).unwrap().id, 2);
    assert_eq!(sim.create_gpu_instance(0, 14, at(1, 1)).unwrap().id, 4);
}

#[test]
fn sim_mig_uuids_are_deterministic_and_new_on_recreate() {
    let run = || {
        let sim = enabled(SimModel::H100_80GB);
        let gi = sim.create_gpu_instance(0, 9, at(4, 4)).unwrap();
        let first = sim.create_compute_instance(0, gi.id).unwrap();
        sim.destroy_compute_instance(0, gi.id, first.id).unwrap();
        let again = sim.create_compute_instance(0, gi.id).unwrap();
        let other_gpu = sim.create_gpu_instance(1, 9, at(4, 4)).unwrap();
        let other = sim.create_compute_instance(1, other_gpu.id).unwrap();
        (first, again, other)
    };
    let (first, again, other) = run();
    assert_eq!((first.id, again.id), (0, 0));
    assert_ne!(first.uuid, again.uuid);
    assert_ne!(first.uuid, other.uuid);
    assert_eq!(run(), (first, again, other));
}

#[test]
fn sim_compute_mode_is_kept_until_reboot() {
    let sim = SimBackend::new(vec![SimModel::H100_80GB], SEED);
    assert_eq!(sim.compute_mode(0), Ok(ComputeMode::Default));
    sim.set_compute_mode(0, ComputeMode::ExclusiveProcess)
        .unwrap();
    assert_eq!(sim.compute_mode(0), Ok(ComputeMode::ExclusiveProcess));
    sim.reboot().unwrap();
    assert_eq!(sim.compute_mode(0), Ok(ComputeMode::Default));
    assert_eq!(sim.compute_mode(3), Err(GpuError::NoSuchGpu { index: 3 }));
}

/// One backend call, its result reduced to success or the error.
type Call<'a> = Box<dyn Fn() -> Result<(), GpuError> + 'a>;

#[test]
fn sim_faults_on_every_mig_verb_change_nothing() {
    let sim = enabled(SimModel::H100_80GB);
    let gi = sim.create_gpu_instance(0, 14, at(0, 2)).unwrap();
    let ci = sim.create_compute_instance(0, gi.id).unwrap();
    let before = sim.gpu_instances(0).unwrap();
    let calls: [(&'static str, Call<'_>); 9] = [
        (op::MIG_PROFILES, Box::new(|| sim.mig_profiles(0).map(drop))),
        (
            op::SET_MIG_MODE,
            Box::new(|| sim.set_mig_mode(0, MigMode::Enabled).map(drop)),
        ),
        (
            op::GPU_INSTANCES,
            Box::new(|| sim.gpu_instances(0).map(drop)),
        ),
        (
            op::CREATE_GPU_INSTANCE,
            Box::new(|| sim.create_gpu_instance(0, 14, at(2, 2)).map(drop)),
        ),
        (
            op::CREATE_COMPUTE_INSTANCE,
            Box::new(|| sim.create_compute_instance(0, gi.id).map(drop)),
        ),
        (
            op::DESTROY_COMPUTE_INSTANCE,
            Box::new(|| sim.destroy_compute_instance(0, gi.id, ci.id)),
        ),
        (
            op::DESTROY_GPU_INSTANCE,
            Box::new(|| sim.destroy_gpu_instance(0, gi.id)),
        ),
        (op::COMPUTE_MODE, Box::new(|| sim.compute_mode(0).map(drop))),
        (
            op::SET_COMPUTE_MODE,
            Box::new(|| sim.set_compute_mode(0, ComputeMode::Prohibited)),
        ),
    ];
    for (name, call) in &calls {
        let before = sim.faults().calls(name);
        sim.faults()
            .fail_next(name, GpuError::Injected { call: name });
        assert_eq!(call(), Err(GpuError::Injected { call: name }), "{name}");
        assert_eq!(sim.faults().calls(name), before + 1, "{name}");
    }
    assert_eq!(sim.gpu_instances(0).unwrap(), before);
    assert_eq!(sim.compute_mode(0), Ok(ComputeMode::Default));
}

#[test]
fn sim_fault_between_gi_and_ci_leaves_a_bare_gi() {
    let sim = enabled(SimModel::A100_80GB);
    sim.faults().fail_nth(
        op::CREATE_COMPUTE_INSTANCE,
        1,
        GpuError::Injected {
            call: op::CREATE_COMPUTE_INSTANCE,
        },
    );
    let gi = sim.create_gpu_instance(0, 9, at(0, 4)).unwrap();
    sim.create_compute_instance(0, gi.id).unwrap_err();
    let listed = sim.gpu_instances(0).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].compute_instances.is_empty());
}
