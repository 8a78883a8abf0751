//! Simulated GPUs: per-model tables ([`models`]) feeding one generic engine.
//!
//! Owns the simulated node: which models sit at which index, their identity
//! (deterministic UUIDs derived from a node seed; PCI addresses, PCIe roots
//! and NUMA nodes from the index, see `topology`), and the
//! "hardware" state a real GPU keeps on its own ([`SimGpuState`], whose rules
//! live in `hardware`). Answers with the same [`GpuError`] variants NVML
//! would, lets tests inject failures and latencies through [`Faults`] (or a
//! running daemon through `GPUSLICE_SIM_FAULTS`, see `fault_spec`), and, when
//! opened with a path ([`SimBackend::open`]), keeps the hardware state in a
//! file so it outlives a daemon restart (`persist`). A reboot is either a new
//! kernel boot id found at open, or [`SimBackend::reboot`]. Health events
//! (XIDs, ECC errors, a lost GPU) are injected in process
//! ([`SimBackend::inject_health`]) or appended to a file a running daemon
//! watches ([`SimBackend::with_health_events`], syntax in `health_spec`).
//! Fake GPU processes are registered in process ([`SimBackend::start_process`])
//! or read from a folder a running daemon watches
//! ([`SimBackend::with_processes_dir`]); see `processes`.
//!
//! Locking: one mutex per GPU, held for the whole verb (so verbs on one GPU
//! are serialised as the driver does, and verbs on different GPUs are not),
//! then, on a node with a state file, that file's lock (`persist::lock`:
//! shared to read, exclusive to change, so the processes that drive one node
//! take turns), under which the GPU's state is read again from the file,
//! then the state file's mutex, only to write it. A verb runs on a copy of
//! the state; the copy replaces the state only once it is persisted.

mod backend;
pub mod fault_spec;
mod faults;
mod hardware;
mod health;
pub mod health_spec;
pub mod instances;
pub mod models;
mod numbering;
mod persist;
pub mod process_file;
mod process_rules;
mod processes;
mod tables;
pub mod topology;

#[cfg(test)]
pub(crate) mod tests;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use uuid::Uuid;

pub use faults::{Faults, Latency, op};
pub use hardware::SimGpuState;
pub use health::{FILE_POLL as HEALTH_FILE_POLL, SimHealthWatch};
pub use health_spec::InjectedEvent;
pub use models::{Engines, GiProfile, ModelSpec, Placement, SimModel};
pub use numbering::{gi_id, mig_uuid};
pub use process_file::{
    SimProcessFile, proc_start_time, process_file_path, remove_process_file, write_process_file,
};
pub use processes::SimProcess;

use self::hardware::GpuRef;
use self::health::SimHealth;
use self::instances::{FabricKind, InstanceShape};
use self::persist::{HardwareFile, Loaded};
use self::processes::{Occupants, SimProcesses};
use self::topology::PciPlace;
use super::{FabricState, GpuError, GpuFabric, ZERO_CLUSTER_UUID};

/// The driver version every simulated node reports.
pub const DRIVER_VERSION: &str = "580.95.05";
/// The CUDA driver API version every simulated node reports.
pub const CUDA_DRIVER_VERSION: (u32, u32) = (13, 0);

/// Namespace of simulated GPU UUIDs (a fixed random v4 UUID, never change it:
/// UUIDs in persisted claims and CDI specs depend on it).
const UUID_NAMESPACE: Uuid = Uuid::from_u128(0x6c1d_3f0e_9a4b_4e57_8d21_5b7f_0c93_a8e4);

/// What the GPUs of a multi-node NVLink instance report of their fabric
/// (`[backend.sim.fabric]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimFabric {
    /// The cluster UUID, canonical lowercase.
    pub cluster_uuid: String,
    /// The clique id.
    pub clique_id: u32,
    /// The registration state.
    pub state: FabricState,
}

/// One simulated GPU: fixed identity plus mutable hardware state.
#[derive(Debug)]
struct SimGpu {
    model: SimModel,
    uuid: String,
    place: PciPlace,
    /// Active NVLink links.
    nvlink_links: u32,
    /// What the fabric-info query answers; `None`: NOT_SUPPORTED.
    fabric: Option<GpuFabric>,
    state: Mutex<SimGpuState>,
    /// Simulated processes hold the GPU (see [`SimBackend::set_busy`]).
    busy: AtomicBool,
}

impl SimGpu {
    fn new(index: u32, model: SimModel, node_seed: &str) -> Self {
        Self {
            model,
            uuid: gpu_uuid(node_seed, index, model),
            place: topology::place(index, topology::DEFAULT_NUMA_NODES),
            nvlink_links: 0,
            fabric: None,
            state: Mutex::new(SimGpuState::fresh()),
            busy: AtomicBool::new(false),
        }
    }

    /// The state is plain data replaced whole, so a poisoned lock still holds a
    /// consistent value.
    fn lock(&self) -> MutexGuard<'_, SimGpuState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn reference(&self, index: u32) -> GpuRef<'_> {
        GpuRef {
            index,
            spec: self.model.spec(),
            uuid: &self.uuid,
        }
    }
}

/// "GPU-<uuid v5 of seed, index and model>": stable for a node, distinct across nodes.
fn gpu_uuid(node_seed: &str, index: u32, model: SimModel) -> String {
    let name = format!("{node_seed}/{index}/{model}");
    format!("GPU-{}", Uuid::new_v5(&UUID_NAMESPACE, name.as_bytes()))
}

/// The state file of a persistent node, and the last state written to it.
#[derive(Debug)]
struct Store {
    path: PathBuf,
    seed: String,
    models: Vec<SimModel>,
    boot_id: String,
    written: Mutex<Vec<SimGpuState>>,
    /// The version of the file `written` was read from or written to.
    seen: Mutex<Option<persist::FileVersion>>,
}

/// A simulated node: the configured models at indices 0, 1, ...
#[derive(Debug)]
pub struct SimBackend {
    gpus: Vec<SimGpu>,
    faults: Faults,
    store: Option<Store>,
    health: SimHealth,
    processes: SimProcesses,
}

impl SimBackend {
    /// A freshly booted node with `models` in index order, kept in memory only.
    /// `node_seed` (e.g. the node name) makes UUIDs differ between nodes and
    /// stay put across restarts.
    pub fn new(models: Vec<SimModel>, node_seed: &str) -> SimBackend {
        let gpus = (0u32..)
            .zip(models)
            .map(|(index, model)| SimGpu::new(index, model, node_seed))
            .collect();
        SimBackend {
            gpus,
            faults: Faults::new(),
            store: None,
            health: SimHealth::default(),
            processes: SimProcesses::default(),
        }
    }

    /// The node with its health events also read from the file at `path`
    /// (one event a line, appended; see `health_spec`). Only lines appended
    /// after a watch is made reach it.
    pub fn with_health_events(mut self, path: &Path) -> SimBackend {
        self.health = SimHealth::with_file(Some(path.to_path_buf()));
        self
    }

    /// The node with `numa_nodes` NUMA nodes (default
    /// [`topology::DEFAULT_NUMA_NODES`]; 0: the kernel gives the GPUs no NUMA
    /// affinity). Where each GPU sits is in `topology`.
    #[must_use]
    pub fn with_numa_nodes(mut self, numa_nodes: u32) -> SimBackend {
        for (gpu, index) in self.gpus.iter_mut().zip(0u32..) {
            gpu.place = topology::place(index, numa_nodes);
        }
        self
    }

    /// The node as instance type `shape` has it: its GPUs' PCI places and
    /// NUMA nodes, their NVLink links and fabric (`fabric` for a multi-node
    /// one; an NVSwitch one registers with a zero cluster UUID). The GPUs
    /// themselves are the caller's to give (`shape.gpus` of `shape.model`).
    #[must_use]
    pub fn with_instance(mut self, shape: &InstanceShape, fabric: &SimFabric) -> SimBackend {
        let count = u32::try_from(self.gpus.len()).unwrap_or(u32::MAX);
        for (gpu, index) in self.gpus.iter_mut().zip(0u32..) {
            gpu.place = topology::place_in(index, count, shape.layout, shape.numa_nodes);
            gpu.nvlink_links = shape.nvlink_links;
            gpu.fabric = shape.fabric.map(|kind| match kind {
                FabricKind::NvSwitch => GpuFabric {
                    cluster_uuid: ZERO_CLUSTER_UUID.to_owned(),
                    clique_id: 0,
                    state: FabricState::Completed,
                    error: None,
                },
                FabricKind::MultiNode => GpuFabric {
                    cluster_uuid: fabric.cluster_uuid.clone(),
                    clique_id: fabric.clique_id,
                    state: fabric.state,
                    error: None,
                },
            });
        }
        self
    }

    /// The health events file, if any.
    pub fn health_events_path(&self) -> Option<&Path> {
        self.health.file()
    }

    /// Injects a health event, as the GPU would raise it: every watch made
    /// before this call reports it. `NoSuchGpu` for an index the node lacks.
    pub fn inject_health(&self, event: InjectedEvent) -> Result<(), GpuError> {
        let event = self.health_event(event, "injected".to_owned())?;
        self.health.push(event);
        Ok(())
    }

    /// A node whose hardware state lives in the file at `path` (see
    /// `persist`), in the kernel's current boot, with the faults of
    /// `GPUSLICE_SIM_FAULTS` armed. Errors name the file or the variable.
    pub fn open(
        models: Vec<SimModel>,
        node_seed: &str,
        path: &Path,
    ) -> Result<SimBackend, GpuError> {
        let boot_id = persist::current_boot_id().unwrap_or_else(|| "unknown".to_owned());
        let backend = Self::open_at_boot(models, node_seed, path, &boot_id)?;
        if let Ok(spec) = std::env::var(fault_spec::ENV_VAR) {
            fault_spec::arm(&backend.faults, &spec).map_err(|err| GpuError::SimState {
                path: fault_spec::ENV_VAR.to_owned(),
                reason: err.to_string(),
            })?;
        }
        Ok(backend)
    }

    /// [`SimBackend::open`] in the boot `boot_id`, without reading the
    /// environment: a different `boot_id` than the file's is a reboot.
    pub fn open_at_boot(
        models: Vec<SimModel>,
        node_seed: &str,
        path: &Path,
        boot_id: &str,
    ) -> Result<SimBackend, GpuError> {
        let _held = persist::lock(path, true);
        let loaded = persist::load(path, node_seed, &models, boot_id)?;
        let mut backend = Self::new(models.clone(), node_seed);
        let (states, changed) = match loaded {
            Loaded::Absent => (backend.snapshot(), true),
            Loaded::SameBoot(states) => (states, false),
            Loaded::EarlierBoot(states) => {
                let rebooted = backend.zip_refs(&states, SimGpuState::after_reboot);
                tracing::info!(path = %path.display(), "simulated node rebooted since the state was written: MIG instances are gone");
                (rebooted, true)
            }
        };
        for (gpu, state) in backend.gpus.iter().zip(&states) {
            *gpu.lock() = state.clone();
        }
        let store = Store {
            path: path.to_path_buf(),
            seed: node_seed.to_owned(),
            models,
            boot_id: boot_id.to_owned(),
            written: Mutex::new(states.clone()),
            seen: Mutex::new(None),
        };
        if changed {
            persist::save(&store.path, &store.file(states))?;
        }
        store.saw_file();
        backend.store = Some(store);
        Ok(backend)
    }

    /// Reboots the simulated node: instances and compute modes go, Hopper
    /// loses MIG mode, Ampere activates a pending one. Persisted. Registered
    /// processes die (the folder's files stay: they stand for real processes,
    /// whose MIG devices are gone now).
    pub fn reboot(&self) -> Result<(), GpuError> {
        let mut guards: Vec<_> = self.gpus.iter().map(SimGpu::lock).collect();
        let _held = self.file_lock(true);
        self.reread()?;
        if let Some(store) = &self.store {
            for (guard, state) in guards.iter_mut().zip(store.lock().iter()) {
                **guard = state.clone();
            }
        }
        let states: Vec<SimGpuState> = (self.gpus.iter().zip(&guards))
            .zip(0u32..)
            .map(|((gpu, state), index)| state.after_reboot(gpu.reference(index)))
            .collect();
        if let Some(store) = &self.store {
            let mut written = store.lock();
            persist::save(&store.path, &store.file(states.clone()))?;
            *written = states.clone();
            drop(written);
            store.saw_file();
        }
        for (guard, state) in guards.iter_mut().zip(states) {
            **guard = state;
        }
        for gpu in &self.gpus {
            gpu.busy.store(false, Ordering::SeqCst);
        }
        self.processes.clear();
        Ok(())
    }

    /// Pretend processes hold (or stop holding) the GPU at `index`, as a CUDA
    /// context or DCGM would: MIG mode changes then fail IN_USE (Ampere keeps
    /// the new mode pending), as they do while a fake process runs on it
    /// ([`SimBackend::start_process`]). Not persisted: processes die with a
    /// reboot.
    pub fn set_busy(&self, index: u32, busy: bool) -> Result<(), GpuError> {
        self.gpu(index)?.busy.store(busy, Ordering::SeqCst);
        Ok(())
    }

    /// The hardware state file, for a persistent node.
    pub fn hardware_state_path(&self) -> Option<&Path> {
        self.store.as_ref().map(|s| s.path.as_path())
    }

    /// The fault registry every call of this backend consults.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// The model at `index`.
    pub fn model(&self, index: u32) -> Result<SimModel, GpuError> {
        self.gpu(index).map(|gpu| gpu.model)
    }

    fn gpu(&self, index: u32) -> Result<&SimGpu, GpuError> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.gpus.get(i))
            .ok_or(GpuError::NoSuchGpu { index })
    }

    fn snapshot(&self) -> Vec<SimGpuState> {
        self.gpus.iter().map(|gpu| gpu.lock().clone()).collect()
    }

    fn zip_refs(
        &self,
        states: &[SimGpuState],
        f: impl Fn(&SimGpuState, GpuRef<'_>) -> SimGpuState,
    ) -> Vec<SimGpuState> {
        (self.gpus.iter().zip(states))
            .zip(0u32..)
            .map(|((gpu, state), index)| f(state, gpu.reference(index)))
            .collect()
    }

    /// Runs a read-only verb on GPU `index` after the fault check of `op`.
    fn read<T>(
        &self,
        index: u32,
        op: &'static str,
        verb: impl FnOnce(&SimGpuState, GpuRef<'_>) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let latency = self.faults.check_gpu(op, index)?;
        let gpu = self.gpu(index)?;
        let mut state = gpu.lock();
        let held = self.file_lock(false);
        self.refresh(index, &mut state)?;
        let result = verb(&state, gpu.reference(index));
        drop(held);
        latency.wait();
        result
    }

    /// Runs a changing verb on a copy of GPU `index`'s state; the copy is
    /// persisted, then kept, whenever it differs (also when the verb fails
    /// after recording something, like Ampere's pending MIG mode). The verb
    /// may ask what holds the GPU (its processes, as the state was before).
    fn change<T>(
        &self,
        index: u32,
        op: &'static str,
        verb: impl FnOnce(&mut SimGpuState, GpuRef<'_>, &Occupants<'_>) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        let latency = self.faults.check_gpu(op, index)?;
        let gpu = self.gpu(index)?;
        let mut state = gpu.lock();
        let held = self.file_lock(true);
        self.refresh(index, &mut state)?;
        let mut next = state.clone();
        let occupants = Occupants {
            backend: self,
            state: &state,
            gpu: gpu.reference(index),
            flagged: gpu.busy.load(Ordering::SeqCst),
        };
        let result = verb(&mut next, gpu.reference(index), &occupants);
        if next != *state {
            self.persist(index, &next)?;
            *state = next;
        }
        drop(held);
        latency.wait();
        result
    }

    /// The state file's lock (see `persist::lock`), on a node with one.
    fn file_lock(&self, exclusive: bool) -> Option<persist::FileLock> {
        (self.store.as_ref()).and_then(|store| persist::lock(&store.path, exclusive))
    }

    /// The node's state as its file holds it now, where another process may
    /// have changed it (`None`: kept in memory only, or no file to read).
    /// The caller holds the file's lock.
    /// Reads the file into `written` when it is another write than the one
    /// last read or written (an unchanged file is not parsed again). The
    /// caller holds the file's lock.
    fn reread(&self) -> Result<(), GpuError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let now = persist::version(&store.path);
        if now.is_some() && now == *store.seen() {
            return Ok(());
        }
        if let Some(states) = persist::reread(&store.path, &store.seed, &store.models)? {
            store.lock().clone_from(&states);
            *store.seen() = now;
        }
        Ok(())
    }

    /// GPU `index`'s `state` (its lock held, and the file's) as the file
    /// holds it now.
    pub(super) fn refresh(&self, index: u32, state: &mut SimGpuState) -> Result<(), GpuError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        self.reread()?;
        let slot = usize::try_from(index).ok();
        if let Some(fresh) = slot.and_then(|i| store.lock().get(i).cloned()) {
            *state = fresh;
        }
        Ok(())
    }

    fn persist(&self, index: u32, next: &SimGpuState) -> Result<(), GpuError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let mut written = store.lock();
        let mut states = written.clone();
        if let Some(slot) = usize::try_from(index).ok().and_then(|i| states.get_mut(i)) {
            *slot = next.clone();
        }
        persist::save(&store.path, &store.file(states.clone()))?;
        *written = states;
        store.saw_file();
        Ok(())
    }
}

impl Store {
    fn file(&self, state: Vec<SimGpuState>) -> HardwareFile {
        HardwareFile {
            version: persist::FORMAT_VERSION,
            seed: self.seed.clone(),
            gpus: self.models.clone(),
            boot_id: self.boot_id.clone(),
            state,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<SimGpuState>> {
        self.written.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The file version `written` stands for.
    fn seen(&self) -> MutexGuard<'_, Option<persist::FileVersion>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records that `written` is what the file holds now (just written).
    fn saw_file(&self) {
        *self.seen() = persist::version(&self.path);
    }
}
