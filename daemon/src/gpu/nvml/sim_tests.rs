//! The NVML backend end to end, without a GPU: over gpuslice's own NVML
//! (the `gpuslice-nvml-sim` library, loaded as `libnvidia-ml.so.1` through
//! `[backend.nvml] library`), which answers from the simulator. The same
//! bodies as on the simulator itself (`conformance`, `mig_conformance`),
//! every fact the backend reports held equal to the simulator's on every
//! model and instance shape, and what only NVML's path has: pending MIG
//! modes, processes and memory through MIG device handles, health events
//! through an event set, one node seen by both.
//!
//! Each node is a temp folder with a copy of the library, its config
//! (`[backend.sim]`) and a fake sysfs tree where its GPUs sit; the
//! simulator opened on the same config in this process is the same node
//! (its state file is shared and locked), the reference the backend is
//! held to. These tests run `raw.rs`'s unsafe calls on every run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::NvmlBackend;
use super::sim_library::{CONFIG, LIBRARY, fake_sysfs, lend};
use crate::config::{BackendKind, Config};
use crate::gpu::sim::instances::InstanceShape;
use crate::gpu::sim::tests::append;
use crate::gpu::sim::{SimModel, SimProcessFile, write_process_file};
use crate::gpu::{
    GpuBackend, GpuError, HealthEventKind, MigMode, MigSupport, Placement, conformance,
    mig_conformance,
};

/// A simulated node lent to the NVML backend through the library.
struct Lent {
    _dir: tempfile::TempDir,
    nvml: NvmlBackend,
    sim: Arc<dyn GpuBackend>,
    config: Config,
}

/// A node whose `[backend.sim]` section is `sim`.
fn lent(sim: &str) -> Lent {
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "socket = \"gpusliced.sock\"\n[backend]\nkind = \"nvml\"\n[backend.nvml]\n\
         library = \"{LIBRARY}\"\nsysfs_root = \"sys\"\n[backend.sim]\n{sim}\n"
    );
    let library = lend(dir.path(), &text);
    let config = Config::load(&dir.path().join(CONFIG)).unwrap();
    let mut as_sim = config.clone();
    as_sim.backend.kind = BackendKind::Sim;
    let sim = crate::run::open_backend(&as_sim).unwrap();
    let places: Vec<_> = (conformance::all_gpus(sim.as_ref()).into_iter())
        .map(|g| (g.pci_bus_id, g.pcie_root.unwrap(), g.numa_node))
        .collect();
    let sysfs = dir.path().join("sys");
    fake_sysfs(&sysfs, &places);
    let nvml = NvmlBackend::open(Some(&library))
        .unwrap()
        .with_sysfs_root(&sysfs);
    Lent {
        _dir: dir,
        nvml,
        sim,
        config,
    }
}

/// `count` GPUs of `model`.
fn gpus(model: SimModel, count: usize) -> String {
    format!(
        "gpus = [{}]",
        vec![format!("\"{model}\""); count].join(", ")
    )
}

/// The same answer: equal values, or errors of the same kind (their
/// messages are each backend's own).
fn same<T: PartialEq + std::fmt::Debug>(
    nvml: Result<T, GpuError>,
    sim: Result<T, GpuError>,
    what: &str,
) {
    match (&nvml, &sim) {
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(a),
            std::mem::discriminant(b),
            "{what}: {a:?} against {b:?}"
        ),
        _ => assert_eq!(nvml, sim, "{what}"),
    }
}

/// Everything the backend reports of every GPU, as the simulator does.
fn same_facts(lent: &Lent, what: &str) {
    let (nvml, sim) = (&lent.nvml, lent.sim.as_ref());
    same(nvml.driver_info(), sim.driver_info(), what);
    same(nvml.device_count(), sim.device_count(), what);
    for gpu in conformance::all_gpus(sim) {
        let i = gpu.index;
        let what = format!("{what} GPU {i}");
        same(nvml.device_info(i), Ok(gpu), &what);
        same(nvml.mig_profiles(i), sim.mig_profiles(i), &what);
        same(nvml.gpu_instances(i), sim.gpu_instances(i), &what);
        same(nvml.compute_mode(i), sim.compute_mode(i), &what);
        same(nvml.processes(i), sim.processes(i), &what);
        same(nvml.memory_use(i, None), sim.memory_use(i, None), &what);
    }
}

#[test]
fn nvml_sim_conformance_on_every_model() {
    for model in SimModel::ALL {
        let lent = lent(&gpus(model, 2));
        conformance::all(&lent.nvml);
        same_facts(&lent, &model.to_string());
    }
}

#[test]
fn nvml_sim_facts_on_every_instance_shape() {
    for shape in InstanceShape::all() {
        // Not `conformance::identity`: g5.48xlarge's GPUs sit on one root
        // bus across two NUMA nodes (as AWS's topology has them), which its
        // rule of one NUMA node per root refuses on the simulator too.
        let lent = lent(&format!("instance = \"{}\"", shape.name));
        conformance::capabilities(&lent.nvml);
        same_facts(&lent, shape.name);
    }
}

#[test]
fn nvml_sim_mig_conformance_on_every_mig_model() {
    for model in SimModel::with_mig() {
        let lent = lent(&gpus(model, 1));
        let on = lent.nvml.set_mig_mode(0, MigMode::Enabled).unwrap();
        assert_eq!(on, enabled(), "{model}");
        mig_conformance::all_mutating(&lent.nvml, 0);
        mig_conformance::instances_are_consistent(&lent.nvml, 0);
        same_facts(&lent, &model.to_string());
    }
}

fn enabled() -> MigSupport {
    MigSupport::Supported {
        current: MigMode::Enabled,
        pending: MigMode::Enabled,
    }
}

/// What one client makes, the other sees at once: the backend and the
/// simulator are two processes' views of one node.
#[test]
fn nvml_sim_and_the_simulator_share_one_node() {
    let lent = lent(&gpus(SimModel::H100_80GB, 2));
    let (nvml, sim) = (&lent.nvml, lent.sim.as_ref());
    sim.set_mig_mode(1, MigMode::Enabled).unwrap();
    assert_eq!(nvml.device_info(1).unwrap().mig, enabled());
    let gi = sim
        .create_gpu_instance(1, 9, Placement { start: 4, size: 4 })
        .unwrap();
    let ci = nvml.create_compute_instance(1, gi.id).unwrap();
    let seen = sim.gpu_instances(1).unwrap();
    assert_eq!(seen[0].compute_instances, vec![ci.clone()]);
    assert_eq!(nvml.gpu_instances(1), Ok(seen));
    sim.destroy_compute_instance(1, gi.id, ci.id).unwrap();
    nvml.destroy_gpu_instance(1, gi.id).unwrap();
    assert_eq!(sim.gpu_instances(1), Ok(vec![]));
    assert_eq!(
        nvml.set_mig_mode(1, MigMode::Disabled)
            .map(|m| m == enabled()),
        Ok(false)
    );
    same_facts(&lent, "after the round trip");
}

/// A process standing for a GPU process, in the node's process folder:
/// this test's own, which lives.
fn run_on(lent: &Lent, device: &str, gib: u64) -> u32 {
    let pid = std::process::id();
    let file = SimProcessFile {
        pid,
        start_time: None,
        device: device.to_owned(),
        memory_bytes: gib << 30,
        sm_percent: 40,
        mps_client: false,
    };
    write_process_file(&lent.config.sim_processes(), &file).unwrap();
    pid
}

fn stop(lent: &Lent, pid: u32) {
    crate::gpu::sim::remove_process_file(&lent.config.sim_processes(), pid).unwrap();
}

/// A MIG mode change on a GPU processes hold: Ampere records it and
/// activates it at the next idle request (NVML's activation status
/// IN_USE), Hopper refuses it; both answer `InUse`, as the simulator.
#[test]
fn nvml_sim_mig_mode_stays_pending_on_a_busy_ampere() {
    let lent = lent("gpus = [\"A100-40GB\", \"H100-80GB\"]");
    let nvml = &lent.nvml;
    let uuids: Vec<String> = (0..2).map(|i| nvml.device_info(i).unwrap().uuid).collect();
    let pid = run_on(&lent, &uuids[0], 1);
    let busy = nvml.set_mig_mode(0, MigMode::Enabled);
    assert!(matches!(busy, Err(GpuError::InUse { .. })), "{busy:?}");
    let pending = MigSupport::Supported {
        current: MigMode::Disabled,
        pending: MigMode::Enabled,
    };
    assert_eq!(nvml.device_info(0).unwrap().mig, pending);
    stop(&lent, pid);
    let pid = run_on(&lent, &uuids[1], 1);
    let busy = nvml.set_mig_mode(1, MigMode::Enabled);
    assert!(matches!(busy, Err(GpuError::InUse { .. })), "{busy:?}");
    let off = MigSupport::Supported {
        current: MigMode::Disabled,
        pending: MigMode::Disabled,
    };
    assert_eq!(nvml.device_info(1).unwrap().mig, off);
    stop(&lent, pid);
    assert_eq!(nvml.set_mig_mode(0, MigMode::Enabled), Ok(enabled()));
    assert_eq!(nvml.set_mig_mode(1, MigMode::Enabled), Ok(enabled()));
    same_facts(&lent, "idle again");
}

/// Processes on a slice, read through the parent GPU and the slice's MIG
/// device handle: listed with their instance ids, counted in the slice's
/// memory, and holding its compute instance (IN_USE).
#[test]
fn nvml_sim_processes_on_slices() {
    let lent = lent(&gpus(SimModel::H100_80GB, 1));
    let nvml = &lent.nvml;
    nvml.set_mig_mode(0, MigMode::Enabled).unwrap();
    let gi = nvml
        .create_gpu_instance(0, 19, Placement { start: 6, size: 1 })
        .unwrap();
    let ci = nvml.create_compute_instance(0, gi.id).unwrap();
    let pid = run_on(&lent, &ci.uuid, 2);
    let listed = nvml.processes(0).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(
        (
            listed[0].pid,
            listed[0].gpu_instance,
            listed[0].compute_instance
        ),
        (pid, Some(gi.id), Some(ci.id))
    );
    assert_eq!(listed[0].used_memory, Some(2 << 30));
    assert_eq!(nvml.memory_use(0, Some(gi.id)).unwrap().used, 2 << 30);
    conformance::processes_all(nvml);
    same_facts(&lent, "a process on a slice");
    let held = nvml.destroy_compute_instance(0, gi.id, ci.id);
    assert!(matches!(held, Err(GpuError::InUse { .. })), "{held:?}");
    stop(&lent, pid);
    nvml.destroy_compute_instance(0, gi.id, ci.id).unwrap();
    nvml.destroy_gpu_instance(0, gi.id).unwrap();
}

/// XID and ECC events through an NVML event set, with the instance ids of
/// a MIG-scoped one; a lost GPU answers GPU_IS_LOST until it recovers.
#[test]
fn nvml_sim_health_events_reach_the_event_set() {
    let lent = lent(&gpus(SimModel::H100_80GB, 2));
    let nvml = &lent.nvml;
    let events = lent.config.sim_health_events();
    let mut watch = nvml.watch_health().unwrap();
    assert_eq!(watch.unmonitored(), vec![]);
    append(&events, "gpu=0 gi=3 ci=0 xid=94\n");
    append(&events, "gpu=1 ecc=double\n");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.len() < 2 && Instant::now() < deadline {
        seen.extend(watch.wait(Duration::from_millis(200)).unwrap());
    }
    let kinds: Vec<_> = seen
        .iter()
        .map(|e| (e.gpu_index, e.gpu_instance, e.compute_instance, e.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (0, Some(3), Some(0), HealthEventKind::Xid(94)),
            (1, None, None, HealthEventKind::DoubleBitEcc),
        ]
    );
    append(&events, "gpu=1 lost\n");
    let lost = watch.wait(Duration::from_secs(2)).unwrap();
    assert!(
        lost.iter()
            .any(|e| e.gpu_index == 1 && e.kind == HealthEventKind::GpuLost),
        "{lost:?}"
    );
    let gone = nvml.device_info(1);
    assert!(matches!(gone, Err(GpuError::GpuLost { .. })), "{gone:?}");
    append(&events, "gpu=1 recovered\n");
    let deadline = Instant::now() + super::health::PROBE_EVERY * 3;
    let mut back = Vec::new();
    while !back
        .iter()
        .any(|e: &crate::gpu::HealthEvent| e.kind == HealthEventKind::Recovered)
        && Instant::now() < deadline
    {
        back.extend(watch.wait(Duration::from_millis(500)).unwrap());
    }
    assert!(back.iter().any(|e| e.gpu_index == 1), "{back:?}");
    nvml.device_info(1).unwrap();
}

/// NVML is thread-safe, and so is the library: threads making, listing
/// and destroying instances on their own GPUs at once, through one backend,
/// leave every GPU as its thread left it.
#[test]
fn nvml_sim_threads_share_one_backend() {
    let lent = lent(&gpus(SimModel::A100_40GB, 4));
    let nvml = &lent.nvml;
    std::thread::scope(|scope| {
        for index in 0..4u32 {
            scope.spawn(move || {
                nvml.set_mig_mode(index, MigMode::Enabled).unwrap();
                for start in 0..7 {
                    let at = Placement { start, size: 1 };
                    let gi = nvml.create_gpu_instance(index, 19, at).unwrap();
                    nvml.create_compute_instance(index, gi.id).unwrap();
                    mig_conformance::instances_are_consistent(nvml, index);
                }
                mig_conformance::clear(nvml, index);
                if index % 2 == 0 {
                    let gi = nvml
                        .create_gpu_instance(index, 0, Placement { start: 0, size: 8 })
                        .unwrap();
                    nvml.create_compute_instance(index, gi.id).unwrap();
                }
            });
        }
    });
    for index in 0..4 {
        let left = nvml.gpu_instances(index).unwrap();
        assert_eq!(
            left.len(),
            usize::from(index % 2 == 0),
            "GPU {index}: {left:?}"
        );
    }
    same_facts(&lent, "after the threads");
}
