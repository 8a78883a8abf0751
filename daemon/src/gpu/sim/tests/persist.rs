//! `sim_*` persistence tests: the hardware state file across daemon restarts
//! (same boot) and reboots (new boot id), refusals, and concurrent writers.

use std::path::Path;
use std::sync::Arc;

use crate::gpu::sim::{SimBackend, SimModel};
use crate::gpu::{ComputeMode, GpuBackend, GpuError, MigMode, MigSupport, Placement};

const SEED: &str = "node-a";
const BOOT: &str = "boot-1";

fn open(path: &Path, models: &[SimModel], boot: &str) -> Result<SimBackend, GpuError> {
    SimBackend::open_at_boot(models.to_vec(), SEED, path, boot)
}

fn on() -> MigSupport {
    MigSupport::Supported {
        current: MigMode::Enabled,
        pending: MigMode::Enabled,
    }
}

fn off() -> MigSupport {
    MigSupport::Supported {
        current: MigMode::Disabled,
        pending: MigMode::Disabled,
    }
}

/// GPU 0 an A100, GPU 1 an H100, both with MIG on, a 3g GI+CI and a compute mode.
fn populate(sim: &SimBackend) {
    for index in 0..2 {
        sim.set_mig_mode(index, MigMode::Enabled).unwrap();
        let gi = sim
            .create_gpu_instance(index, 9, Placement { start: 4, size: 4 })
            .unwrap();
        sim.create_compute_instance(index, gi.id).unwrap();
        sim.set_compute_mode(index, ComputeMode::ExclusiveProcess)
            .unwrap();
    }
}

fn put(path: &Path, contents: &[u8]) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .unwrap();
    std::io::Write::write_all(&mut file, contents).unwrap();
}

const NODE: [SimModel; 2] = [SimModel::A100_40GB, SimModel::H100_80GB];

#[test]
fn sim_state_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run/sim-hardware.json");
    let sim = open(&path, &NODE, BOOT).unwrap();
    assert_eq!(sim.hardware_state_path(), Some(path.as_path()));
    assert!(path.is_file(), "a fresh node writes its state at once");
    populate(&sim);
    let before: Vec<_> = (0..2).map(|i| sim.gpu_instances(i).unwrap()).collect();
    drop(sim);
    let again = open(&path, &NODE, BOOT).unwrap();
    let after: Vec<_> = (0..2).map(|i| again.gpu_instances(i).unwrap()).collect();
    assert_eq!(after, before);
    assert_eq!(again.compute_mode(1), Ok(ComputeMode::ExclusiveProcess));
    // The creation counter survives too: a recreated device gets a new UUID.
    let old = before[0][0].compute_instances[0].clone();
    again
        .destroy_compute_instance(0, before[0][0].id, old.id)
        .unwrap();
    let new = again.create_compute_instance(0, before[0][0].id).unwrap();
    assert_ne!(new.uuid, old.uuid);
}

#[test]
fn sim_reboot_clears_instances_and_hopper_mig_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim-hardware.json");
    populate(&open(&path, &NODE, BOOT).unwrap());
    let rebooted = open(&path, &NODE, "boot-2").unwrap();
    assert_eq!(
        rebooted.device_info(0).unwrap().mig,
        on(),
        "A100 keeps MIG mode"
    );
    assert_eq!(rebooted.device_info(1).unwrap().mig, off(), "H100 loses it");
    assert_eq!(rebooted.gpu_instances(0), Ok(vec![]));
    assert_eq!(rebooted.compute_mode(0), Ok(ComputeMode::Default));
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(file["boot_id"], "boot-2", "the reboot is written back");
}

#[test]
fn sim_every_change_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim-hardware.json");
    let sim = open(&path, &NODE, BOOT).unwrap();
    sim.set_mig_mode(1, MigMode::Enabled).unwrap();
    let gi = sim
        .create_gpu_instance(1, 0, Placement { start: 0, size: 8 })
        .unwrap();
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(file["gpus"], serde_json::json!(["A100-40GB", "H100-80GB"]));
    assert_eq!(file["state"][1]["gpu_instances"][0]["id"], gi.id);
    assert_eq!(file["state"][1]["mig_current"], "Enabled");
}

#[test]
fn sim_state_of_another_node_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim-hardware.json");
    drop(open(&path, &NODE, BOOT).unwrap());
    for (seed, models) in [("node-b", NODE.to_vec()), (SEED, vec![SimModel::A100_40GB])] {
        let err = SimBackend::open_at_boot(models, seed, &path, BOOT).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, GpuError::SimState { .. }), "{err:?}");
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("delete it"), "{msg}");
    }
    put(&path, b"{ not json");
    let err = open(&path, &NODE, BOOT).unwrap_err();
    assert!(
        err.to_string()
            .contains("not a simulated hardware state file"),
        "{err}"
    );
}

#[test]
fn sim_failed_write_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("run");
    let path = folder.join("sim-hardware.json");
    let sim = open(&path, &NODE, BOOT).unwrap();
    std::fs::remove_dir_all(&folder).unwrap();
    put(&folder, b"a file where the folder was");
    let err = sim.set_mig_mode(0, MigMode::Enabled).unwrap_err();
    assert!(matches!(err, GpuError::SimState { .. }), "{err:?}");
    assert_eq!(sim.device_info(0).unwrap().mig, off());
}

#[test]
fn sim_concurrent_changes_on_different_gpus_are_all_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim-hardware.json");
    let models = [SimModel::H100_80GB; 8];
    let sim = Arc::new(open(&path, &models, BOOT).unwrap());
    let workers: Vec<_> = (0..8u32)
        .map(|index| {
            let sim = Arc::clone(&sim);
            std::thread::spawn(move || {
                sim.set_mig_mode(index, MigMode::Enabled).unwrap();
                for start in 0..7 {
                    let gi = sim.create_gpu_instance(index, 19, Placement { start, size: 1 });
                    sim.create_compute_instance(index, gi.unwrap().id).unwrap();
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    drop(sim);
    let again = open(&path, &models, BOOT).unwrap();
    for index in 0..8 {
        assert_eq!(again.gpu_instances(index).unwrap().len(), 7, "GPU {index}");
    }
}

/// Two processes driving one node (gpusliced and nvidia-smi over
/// gpuslice-nvml-sim): each call reads the state again under the file's
/// lock, so what one makes the other sees, and neither overwrites the
/// other's change with a stale copy.
#[test]
fn sim_two_backends_on_one_file_see_each_others_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim-hardware.json");
    let (a, b) = (
        open(&path, &NODE, BOOT).unwrap(),
        open(&path, &NODE, BOOT).unwrap(),
    );
    a.set_mig_mode(1, MigMode::Enabled).unwrap();
    assert_eq!(b.device_info(1).unwrap().mig, on());
    let gi = b
        .create_gpu_instance(1, 9, Placement { start: 0, size: 4 })
        .unwrap();
    let ci = a.create_compute_instance(1, gi.id).unwrap();
    assert_eq!(b.gpu_instances(1).unwrap()[0].compute_instances, vec![ci]);
    a.set_compute_mode(0, ComputeMode::Prohibited).unwrap();
    b.set_mig_mode(0, MigMode::Enabled).unwrap();
    assert_eq!(a.compute_mode(0), Ok(ComputeMode::Prohibited), "not lost");
    assert_eq!(a.device_info(0).unwrap().mig, on(), "b's change kept");
    let busy = b.create_gpu_instance(1, 9, Placement { start: 0, size: 4 });
    assert!(
        matches!(busy, Err(GpuError::InsufficientResources { .. })),
        "{busy:?}"
    );
    let workers: Vec<_> = [a, b]
        .into_iter()
        .zip([4u32, 6])
        .map(|(sim, start)| {
            std::thread::spawn(move || {
                sim.create_gpu_instance(1, 15, Placement { start, size: 2 })
                    .unwrap()
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    let again = open(&path, &NODE, BOOT).unwrap();
    assert_eq!(
        again.gpu_instances(1).unwrap().len(),
        3,
        "every change written"
    );
}
