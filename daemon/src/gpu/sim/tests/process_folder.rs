//! `sim_*` tests of the process folder a running daemon reads: files of real
//! (spawned `sleep`) processes, listed while the process lives and its start
//! time matches, skipped when malformed or naming no device, on whole GPUs
//! and MIG slices (the `/proc/<pid>/stat` reader is tested in
//! gpuslice-sim-files).

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command};

use crate::gpu::sim::process_file::read_live;
use crate::gpu::sim::{
    SimBackend, SimModel, SimProcessFile, proc_start_time, process_file_path, remove_process_file,
    write_process_file,
};
use crate::gpu::{GpuBackend, GpuError, MigMode, Placement, conformance};

/// A `sleep` child, killed and reaped when dropped.
struct Sleeper(Child);

impl Sleeper {
    fn spawn() -> Self {
        Sleeper(Command::new("sleep").arg("1000").spawn().unwrap())
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Kills and reaps it: its /proc entry is gone when this returns.
    fn end(mut self) -> u32 {
        let pid = self.pid();
        self.0.kill().unwrap();
        self.0.wait().unwrap();
        pid
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn file(pid: u32, device: &str, start_time: Option<u64>) -> SimProcessFile {
    SimProcessFile {
        pid,
        start_time,
        device: device.to_owned(),
        memory_bytes: 3 << 30,
        sm_percent: 40,
        mps_client: false,
    }
}

/// Writes `text` as `dir/name`, as anything but the process file writer would.
fn plant(dir: &Path, name: &str, text: &str) {
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(dir.join(name))
        .unwrap();
    out.write_all(text.as_bytes()).unwrap();
}

fn node(dir: &Path) -> SimBackend {
    SimBackend::new(vec![SimModel::H100_80GB; 2], "node-a").with_processes_dir(dir)
}

fn pids(sim: &SimBackend, index: u32) -> Vec<u32> {
    sim.processes(index)
        .unwrap()
        .iter()
        .map(|p| p.pid)
        .collect()
}

#[test]
fn sim_folder_lists_a_live_child_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("sim-processes");
    let sim = node(&folder);
    assert_eq!(sim.processes_dir(), Some(folder.as_path()));
    assert_eq!(pids(&sim, 0), Vec::<u32>::new(), "no folder yet: none");
    let child = Sleeper::spawn();
    let pid = child.pid();
    let gpu1 = sim.device_info(1).unwrap().uuid;
    write_process_file(&folder, &file(pid, &gpu1, proc_start_time(pid))).unwrap();
    assert!(process_file_path(&folder, pid).is_file());
    assert_eq!(pids(&sim, 1), vec![pid]);
    assert_eq!(pids(&sim, 0), Vec::<u32>::new());
    assert_eq!(sim.memory_use(1, None).unwrap().used, 3 << 30);
    let samples = sim.process_utilization(1, 0).unwrap();
    assert_eq!((samples[0].pid, samples[0].sm_percent), (pid, 40));
    let busy = sim.set_mig_mode(1, MigMode::Enabled);
    assert!(matches!(busy, Err(GpuError::InUse { .. })), "{busy:?}");
    conformance::processes_all(&sim);
    assert_eq!(child.end(), pid);
    assert_eq!(
        pids(&sim, 1),
        Vec::<u32>::new(),
        "a dead process is not listed"
    );
    assert_eq!(sim.set_mig_mode(1, MigMode::Enabled).map(drop), Ok(()));
    assert_eq!(remove_process_file(&folder, pid), Ok(true));
    assert_eq!(remove_process_file(&folder, pid), Ok(false));
}

#[test]
fn sim_folder_ignores_a_reused_pid() {
    let dir = tempfile::tempdir().unwrap();
    let sim = node(dir.path());
    let child = Sleeper::spawn();
    let pid = child.pid();
    let started = proc_start_time(pid).unwrap();
    let gpu0 = sim.device_info(0).unwrap().uuid;
    // Another process than the one the file was written for has the pid.
    write_process_file(dir.path(), &file(pid, &gpu0, Some(started + 1))).unwrap();
    assert_eq!(pids(&sim, 0), Vec::<u32>::new());
    // Without a start time, a live pid is enough.
    write_process_file(dir.path(), &file(pid, &gpu0, None)).unwrap();
    assert_eq!(pids(&sim, 0), vec![pid]);
    write_process_file(dir.path(), &file(pid, &gpu0, Some(started))).unwrap();
    assert_eq!(pids(&sim, 0), vec![pid]);
}

#[test]
fn sim_folder_skips_what_is_not_a_process_here() {
    let dir = tempfile::tempdir().unwrap();
    let sim = node(dir.path());
    let me = std::process::id();
    let child = Sleeper::spawn();
    let gpu0 = sim.device_info(0).unwrap().uuid;
    write_process_file(dir.path(), &file(me, &gpu0, proc_start_time(me))).unwrap();
    let nowhere = file(
        child.pid(),
        "GPU-00000000-0000-0000-0000-000000000000",
        None,
    );
    write_process_file(dir.path(), &nowhere).unwrap();
    let too_big = SimProcessFile {
        memory_bytes: 1 << 40,
        ..file(child.pid(), &gpu0, None)
    };
    let plant = |name: &str, text: &str| plant(dir.path(), name, text);
    plant("big.json", &serde_json::to_string(&too_big).unwrap());
    plant("garbage.json", "{ not json");
    plant(
        "extra.json",
        r#"{"pid": 1, "device": "GPU-x", "memory_bytes": 1, "sm_percent": 0, "x": 1}"#,
    );
    plant(".hidden.json", "{}");
    plant("notes.txt", "not a process");
    assert_eq!(
        read_live(dir.path()).unwrap().len(),
        3,
        "mine, nowhere, too big"
    );
    assert_eq!(pids(&sim, 0), vec![me]);
    assert_eq!(pids(&sim, 1), Vec::<u32>::new());
    let not_a_folder = node(&dir.path().join("notes.txt"));
    let err = not_a_folder.processes(0);
    assert!(matches!(err, Err(GpuError::SimState { .. })), "{err:?}");
}

#[test]
fn sim_folder_slice_processes_hold_their_instance_until_reboot() {
    let dir = tempfile::tempdir().unwrap();
    let sim = node(dir.path());
    sim.set_mig_mode(0, MigMode::Enabled).unwrap();
    let at = Placement { start: 2, size: 2 };
    let gi = sim.create_gpu_instance(0, 14, at).unwrap().id;
    let mig = sim.create_compute_instance(0, gi).unwrap().uuid;
    let child = Sleeper::spawn();
    let pid = child.pid();
    write_process_file(dir.path(), &file(pid, &mig, proc_start_time(pid))).unwrap();
    let gpu0 = sim.device_info(0).unwrap().uuid;
    write_process_file(dir.path(), &file(std::process::id(), &gpu0, None)).unwrap();
    let listed = sim.processes(0).unwrap();
    assert_eq!(
        listed.len(),
        1,
        "the whole GPU runs nothing in MIG mode: {listed:?}"
    );
    assert_eq!((listed[0].pid, listed[0].gpu_instance), (pid, Some(gi)));
    assert_eq!(listed[0].compute_instance, Some(0));
    assert_eq!(sim.memory_use(0, Some(gi)).unwrap().used, 3 << 30);
    let busy = sim.destroy_compute_instance(0, gi, 0);
    assert!(matches!(busy, Err(GpuError::InUse { .. })), "{busy:?}");
    sim.reboot().unwrap();
    assert_eq!(
        pids(&sim, 0),
        vec![std::process::id()],
        "its MIG device is gone"
    );
}
