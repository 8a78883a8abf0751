//! `sim_*` tests of the process registry: NVML's process list on whole GPUs
//! and MIG slices, memory use per GPU and per slice, utilization samples,
//! what processes forbid (destroying their compute instance, a MIG mode
//! change), what `start_process` refuses, reboots and faults.

use crate::gpu::sim::{SimBackend, SimModel, SimProcess, fault_spec, op};
use crate::gpu::{GpuBackend, GpuError, GpuProcess, MigMode, MigSupport, Placement, conformance};

const GIB: u64 = 1 << 30;

fn node(model: SimModel) -> SimBackend {
    SimBackend::new(vec![model, model], "node-a")
}

fn uuid(sim: &SimBackend, index: u32) -> String {
    sim.device_info(index).unwrap().uuid
}

fn process(pid: u32, device: &str, gib: u64, sm: u32) -> SimProcess {
    SimProcess {
        pid,
        device: device.to_owned(),
        memory_bytes: gib * GIB,
        sm_percent: sm,
        mps_client: false,
    }
}

fn whole(pid: u32, gib: u64, mps_client: bool) -> GpuProcess {
    GpuProcess {
        pid,
        used_memory: Some(gib * GIB),
        gpu_instance: None,
        compute_instance: None,
        mps_client,
    }
}

/// An H100 in MIG mode with a 1g (profile 19) slice at 0 and a 3g (profile
/// 9) slice at 4, each with its compute instance: (GI id, MIG UUID) each.
fn mig_node() -> (SimBackend, [(u32, String); 2]) {
    let sim = node(SimModel::H100_80GB);
    sim.set_mig_mode(0, MigMode::Enabled).unwrap();
    let slice = |profile, start, size| {
        let gi = sim
            .create_gpu_instance(0, profile, Placement { start, size })
            .unwrap();
        (gi.id, sim.create_compute_instance(0, gi.id).unwrap().uuid)
    };
    let slices = [slice(19, 0, 1), slice(9, 4, 4)];
    (sim, slices)
}

#[test]
fn sim_processes_listed_ascending_on_their_gpu() {
    let sim = node(SimModel::H100_80GB);
    let (gpu0, gpu1) = (uuid(&sim, 0), uuid(&sim, 1));
    assert_eq!(sim.processes(0), Ok(vec![]));
    sim.start_process(process(30, &gpu0, 4, 10)).unwrap();
    sim.start_process(process(10, &gpu0, 2, 0)).unwrap();
    let mps = SimProcess {
        mps_client: true,
        ..process(20, &gpu0, 1, 50)
    };
    sim.start_process(mps).unwrap();
    sim.start_process(process(40, &gpu1, 8, 0)).unwrap();
    let expected = vec![whole(10, 2, false), whole(20, 1, true), whole(30, 4, false)];
    assert_eq!(sim.processes(0), Ok(expected));
    assert_eq!(sim.processes(1), Ok(vec![whole(40, 8, false)]));
    let used = sim.memory_use(0, None).unwrap();
    assert_eq!(
        (used.used, used.total),
        (7 * GIB, SimModel::H100_80GB.spec().memory_bytes)
    );
    conformance::processes_all(&sim);
    assert!(sim.stop_process(10));
    assert!(!sim.stop_process(10));
    assert_eq!(sim.processes(0).unwrap().len(), 2);
    // Starting a pid again on its device updates it.
    sim.start_process(process(30, &gpu0, 6, 10)).unwrap();
    assert_eq!(sim.processes(0).unwrap()[1], whole(30, 6, false));
}

#[test]
fn sim_start_process_refuses_what_cannot_run() {
    let sim = node(SimModel::A100_40GB);
    let gpu0 = uuid(&sim, 0);
    let unknown = sim.start_process(process(1, "GPU-00000000-0000-0000-0000-000000000000", 1, 0));
    assert!(
        matches!(unknown, Err(GpuError::NotFound { .. })),
        "{unknown:?}"
    );
    let mig = sim.start_process(process(1, "MIG-00000000-0000-0000-0000-000000000000", 1, 0));
    let Err(GpuError::NotFound { what }) = mig else {
        panic!("{mig:?}")
    };
    assert!(what.contains("compute instance"), "{what}");
    let big = sim.start_process(process(1, &gpu0, 41, 0));
    assert!(
        matches!(big, Err(GpuError::InsufficientResources { .. })),
        "{big:?}"
    );
    sim.start_process(process(1, &gpu0, 30, 0)).unwrap();
    let full = sim.start_process(process(2, &gpu0, 11, 0)).unwrap_err();
    assert!(full.to_string().contains("in use"), "{full}");
    assert!(sim.stop_process(1));
    sim.set_mig_mode(1, MigMode::Enabled).unwrap();
    let on_mig = sim.start_process(process(3, &uuid(&sim, 1), 1, 0));
    let Err(GpuError::NotSupported { what }) = on_mig else {
        panic!("{on_mig:?}")
    };
    assert!(what.contains("MIG mode is enabled"), "{what}");
    assert_eq!(sim.processes(1), Ok(vec![]));
}

#[test]
fn sim_slice_processes_carry_instance_ids_and_memory_per_slice() {
    let (sim, [(small, small_uuid), (big, big_uuid)]) = mig_node();
    sim.start_process(process(7, &big_uuid, 10, 90)).unwrap();
    sim.start_process(process(5, &small_uuid, 3, 20)).unwrap();
    let over = sim.start_process(process(6, &small_uuid, 8, 0));
    assert!(
        matches!(over, Err(GpuError::InsufficientResources { .. })),
        "{over:?}"
    );
    let listed = sim.processes(0).unwrap();
    let ids: Vec<_> = listed
        .iter()
        .map(|p| (p.pid, p.gpu_instance, p.compute_instance))
        .collect();
    assert_eq!(
        ids,
        vec![(5, Some(small), Some(0)), (7, Some(big), Some(0))]
    );
    let profile_memory = |id| {
        let profiles = sim.mig_profiles(0).unwrap();
        profiles.iter().find(|p| p.id == id).unwrap().memory_bytes
    };
    let slice = sim.memory_use(0, Some(small)).unwrap();
    assert_eq!((slice.used, slice.total), (3 * GIB, profile_memory(19)));
    let slice = sim.memory_use(0, Some(big)).unwrap();
    assert_eq!((slice.used, slice.total), (10 * GIB, profile_memory(9)));
    assert_eq!(sim.memory_use(0, None).unwrap().used, 13 * GIB);
    let unknown = sim.memory_use(0, Some(5));
    assert!(
        matches!(unknown, Err(GpuError::NotFound { .. })),
        "{unknown:?}"
    );
    let bare = sim.create_gpu_instance(0, 19, Placement { start: 1, size: 1 });
    let no_mig_device = sim.memory_use(0, Some(bare.unwrap().id));
    assert!(
        matches!(no_mig_device, Err(GpuError::NotFound { .. })),
        "{no_mig_device:?}"
    );
    let sampled = sim.process_utilization(0, 0);
    assert!(
        matches!(sampled, Err(GpuError::NotSupported { .. })),
        "{sampled:?}"
    );
    conformance::processes_all(&sim);
}

#[test]
fn sim_compute_instance_in_use_while_a_process_runs_on_it() {
    let (sim, [(small, small_uuid), (big, _)]) = mig_node();
    sim.start_process(process(5, &small_uuid, 1, 0)).unwrap();
    let busy = sim.destroy_compute_instance(0, small, 0);
    let Err(GpuError::InUse { what }) = busy else {
        panic!("{busy:?}")
    };
    assert!(what.contains("processes 5"), "{what}");
    sim.destroy_compute_instance(0, big, 0).unwrap();
    let gone = sim.destroy_compute_instance(0, 99, 0);
    assert!(matches!(gone, Err(GpuError::NotFound { .. })), "{gone:?}");
    assert!(sim.stop_process(5));
    sim.destroy_compute_instance(0, small, 0).unwrap();
    let stale = sim.start_process(process(5, &small_uuid, 1, 0));
    assert!(matches!(stale, Err(GpuError::NotFound { .. })), "{stale:?}");
}

#[test]
fn sim_mig_mode_change_waits_for_processes_to_stop() {
    for model in [SimModel::H100_80GB, SimModel::A100_80GB] {
        let sim = node(model);
        sim.start_process(process(9, &uuid(&sim, 0), 1, 0)).unwrap();
        let busy = sim.set_mig_mode(0, MigMode::Enabled);
        assert!(
            matches!(busy, Err(GpuError::InUse { .. })),
            "{model}: {busy:?}"
        );
        assert_eq!(sim.set_mig_mode(1, MigMode::Enabled).map(drop), Ok(()));
        assert!(sim.stop_process(9));
        let on = MigSupport::Supported {
            current: MigMode::Enabled,
            pending: MigMode::Enabled,
        };
        assert_eq!(sim.set_mig_mode(0, MigMode::Enabled), Ok(on), "{model}");
    }
}

#[test]
fn sim_utilization_samples_busy_processes_only() {
    let sim = node(SimModel::H200_141GB);
    let gpu0 = uuid(&sim, 0);
    sim.start_process(process(3, &gpu0, 1, 0)).unwrap();
    sim.start_process(process(4, &gpu0, 1, 35)).unwrap();
    sim.start_process(process(5, &gpu0, 1, 250)).unwrap();
    let samples = sim.process_utilization(0, 0).unwrap();
    let seen: Vec<_> = samples.iter().map(|s| (s.pid, s.sm_percent)).collect();
    assert_eq!(seen, vec![(4, 35), (5, 100)]);
    let at = samples[0].timestamp_us;
    assert!(at > 0 && samples.iter().all(|s| s.timestamp_us == at));
    let newer = sim.process_utilization(0, at - 1).unwrap();
    assert_eq!(newer.len(), 2);
    assert_eq!(sim.process_utilization(0, u64::MAX), Ok(vec![]));
    assert_eq!(sim.process_utilization(1, 0), Ok(vec![]));
}

#[test]
fn sim_reboot_ends_every_process() {
    let sim = node(SimModel::A30_24GB);
    sim.start_process(process(8, &uuid(&sim, 1), 2, 5)).unwrap();
    sim.reboot().unwrap();
    assert_eq!(sim.processes(1), Ok(vec![]));
    assert_eq!(sim.memory_use(1, None).unwrap().used, 0);
}

#[test]
fn sim_faults_on_the_process_verbs() {
    let sim = node(SimModel::H100_80GB);
    let spec = "processes:fail_gpu=1@gpu_lost,process_utilization:fail_next,memory_use:fail_next";
    fault_spec::arm(sim.faults(), spec).unwrap();
    let lost = sim.processes(1);
    assert!(matches!(lost, Err(GpuError::GpuLost { .. })), "{lost:?}");
    assert_eq!(sim.processes(0), Ok(vec![]));
    let injected = |call| GpuError::Injected { call };
    assert_eq!(
        sim.process_utilization(0, 0),
        Err(injected(op::PROCESS_UTILIZATION))
    );
    assert_eq!(sim.memory_use(0, None), Err(injected(op::MEMORY_USE)));
    assert_eq!(sim.process_utilization(0, 0), Ok(vec![]));
    assert!(sim.processes(1).is_err(), "GPU 1 keeps failing");
}
