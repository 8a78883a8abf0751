//! The simulated node's GPU processes: an in-memory registry that tests and
//! benches fill ([`SimBackend::start_process`], [`SimBackend::stop_process`]),
//! and, in a running daemon, the process folder ([`SimBackend::with_processes_dir`],
//! format and liveness in `process_file`), read on every process query.
//!
//! Owns the registry and which processes a verb on one GPU sees
//! ([`SimBackend::placed`]: registry first, then the folder's live files,
//! each placed by `process_rules::slot_of` against the GPU's state now).
//! Registered processes are checked when they start (the device exists and
//! can run processes, the memory fits); a folder file is checked when read
//! and skipped, with a debug log, when it does not fit. Processes are never
//! persisted: a reboot ([`SimBackend::reboot`]) clears the registry.
//!
//! Locking: the registry's mutex is taken after a GPU's lock, never before.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::hardware::{GpuRef, SimGpuState};
use super::process_file::{self, SimProcessFile};
use super::process_rules::{Placed, Slot, capacity, slot_of, used_beside};
use super::{SimBackend, SimGpu};
use crate::gpu::{GpuError, MigMode};

/// A fake GPU process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimProcess {
    /// Its process id (any number in the registry; a live process in the folder).
    pub pid: u32,
    /// The device it runs on: a GPU UUID ("GPU-…") or a MIG device UUID
    /// ("MIG-…", see [`super::mig_uuid`]).
    pub device: String,
    /// Framebuffer memory it uses, bytes.
    pub memory_bytes: u64,
    /// SM utilization it shows, percent (above 100 counts as 100).
    pub sm_percent: u32,
    /// A client of an MPS server.
    pub mps_client: bool,
}

impl From<SimProcessFile> for SimProcess {
    fn from(file: SimProcessFile) -> Self {
        Self {
            pid: file.pid,
            device: file.device,
            memory_bytes: file.memory_bytes,
            sm_percent: file.sm_percent,
            mps_client: file.mps_client,
        }
    }
}

/// The registry, and the folder a running daemon reads.
#[derive(Debug, Default)]
pub(super) struct SimProcesses {
    registry: Mutex<Vec<SimProcess>>,
    dir: Option<PathBuf>,
}

impl SimProcesses {
    /// The registry holds whole entries only, so a poisoned lock is consistent.
    fn lock(&self) -> MutexGuard<'_, Vec<SimProcess>> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets every registered process (a reboot).
    pub(super) fn clear(&self) {
        self.lock().clear();
    }
}

impl SimBackend {
    /// The node with fake GPU processes also read from the folder at `path`
    /// (one `<pid>.json` per process, see `process_file`), on every query.
    pub fn with_processes_dir(mut self, path: &Path) -> SimBackend {
        self.processes.dir = Some(path.to_path_buf());
        self
    }

    /// The process folder, if any.
    pub fn processes_dir(&self) -> Option<&Path> {
        self.processes.dir.as_deref()
    }

    /// Starts (or, for a pid already on that device, updates) a fake GPU
    /// process. `NotFound` for a device the node lacks (a MIG device exists
    /// only while its compute instance does), `NotSupported` for a whole GPU
    /// in MIG mode (processes run on its slices there), `InsufficientResources`
    /// when its memory does not fit beside the device's other processes.
    pub fn start_process(&self, process: SimProcess) -> Result<(), GpuError> {
        let (index, gpu, state) = self.find_device(&process)?;
        let gref = gpu.reference(index);
        let Some(slot) = slot_of(&state, gref, &process.device) else {
            return Err(GpuError::NotSupported {
                what: format!(
                    "GPU {index} start process {} on {}: MIG mode is enabled, so processes \
                     run on its MIG devices (MIG-…), not on the whole GPU",
                    process.pid, process.device
                ),
            });
        };
        let mut others = self.placed(&state, gref)?;
        others.retain(|p| !(p.process.pid == process.pid && p.process.device == process.device));
        let used = used_beside(&others, slot);
        let room = capacity(&state, gref, slot);
        if used.saturating_add(process.memory_bytes) > room {
            return Err(GpuError::InsufficientResources {
                what: format!(
                    "GPU {index} start process {} with {} bytes on {} ({used} of {room} bytes in use)",
                    process.pid, process.memory_bytes, process.device
                ),
            });
        }
        let mut registry = self.processes.lock();
        registry.retain(|p| !(p.pid == process.pid && p.device == process.device));
        registry.push(process);
        Ok(())
    }

    /// Stops every registered process with `pid`; false if there was none.
    pub fn stop_process(&self, pid: u32) -> bool {
        let mut registry = self.processes.lock();
        let before = registry.len();
        registry.retain(|p| p.pid != pid);
        registry.len() != before
    }

    /// The GPU `process.device` names, locked: by its UUID, or the GPU one of
    /// whose compute instances has that MIG device UUID.
    fn find_device<'a>(
        &'a self,
        process: &SimProcess,
    ) -> Result<(u32, &'a SimGpu, MutexGuard<'a, SimGpuState>), GpuError> {
        let fresh =
            |gpu: &'a SimGpu, index: u32| -> Result<MutexGuard<'a, SimGpuState>, GpuError> {
                let mut state = gpu.lock();
                let _held = self.file_lock(false);
                self.refresh(index, &mut state)?;
                Ok(state)
            };
        for (gpu, index) in self.gpus.iter().zip(0u32..) {
            if gpu.uuid == process.device {
                return Ok((index, gpu, fresh(gpu, index)?));
            }
        }
        if process.device.starts_with("MIG-") {
            for (gpu, index) in self.gpus.iter().zip(0u32..) {
                let state = fresh(gpu, index)?;
                if slot_of(&state, gpu.reference(index), &process.device).is_some() {
                    return Ok((index, gpu, state));
                }
            }
        }
        Err(GpuError::NotFound {
            what: format!(
                "start process {} on {}: no GPU or MIG device of this node has that UUID \
                 (a MIG device exists only while its compute instance does)",
                process.pid, process.device
            ),
        })
    }

    /// Every live process on `gpu` (whose lock the caller holds, `state`
    /// being its state): the registry's, then the folder's.
    pub(super) fn placed(
        &self,
        state: &SimGpuState,
        gpu: GpuRef<'_>,
    ) -> Result<Vec<Placed>, GpuError> {
        let mut placed: Vec<Placed> = (self.processes.lock().iter())
            .filter_map(|p| {
                let slot = slot_of(state, gpu, &p.device)?;
                Some(Placed {
                    process: p.clone(),
                    slot,
                })
            })
            .collect();
        if let Some(dir) = &self.processes.dir {
            for file in process_file::read_live(dir)? {
                placed.extend(self.place_file(state, gpu, file));
            }
        }
        Ok(placed)
    }

    /// A folder file placed on `gpu`; `None` when it runs elsewhere or does
    /// not fit (logged at debug level on the GPU it names or, for a GPU UUID
    /// no GPU has, on GPU 0; a MIG UUID no GPU has is simply on none).
    fn place_file(
        &self,
        state: &SimGpuState,
        gpu: GpuRef<'_>,
        file: SimProcessFile,
    ) -> Option<Placed> {
        let process = SimProcess::from(file);
        let skip = |why: &str| {
            tracing::debug!(pid = process.pid, device = %process.device, gpu = gpu.index, "simulated process file skipped: {why}");
        };
        let Some(slot) = slot_of(state, gpu, &process.device) else {
            if process.device == gpu.uuid && state.mig_current == MigMode::Enabled {
                skip("the GPU is in MIG mode; processes run on its MIG devices");
            } else if gpu.index == 0 && !self.names_known_device(&process.device) {
                skip("no GPU of this node has that UUID");
            }
            return None;
        };
        if process.memory_bytes > capacity(state, gpu, slot) {
            skip("more memory than the device has");
            return None;
        }
        Some(Placed { process, slot })
    }

    /// Whether `device` may name a device of this node: one of its GPU
    /// UUIDs, or any MIG device UUID (checked against the GPU it is on).
    fn names_known_device(&self, device: &str) -> bool {
        device.starts_with("MIG-") || self.gpus.iter().any(|g| g.uuid == device)
    }
}

/// What holds the GPU a changing verb works on, looked up only when the verb
/// asks: [`SimBackend::set_busy`] and the processes on it and its slices.
pub(super) struct Occupants<'a> {
    pub(super) backend: &'a SimBackend,
    pub(super) state: &'a SimGpuState,
    pub(super) gpu: GpuRef<'a>,
    pub(super) flagged: bool,
}

impl Occupants<'_> {
    /// Whether processes hold the GPU.
    pub(super) fn busy(&self) -> Result<bool, GpuError> {
        Ok(self.flagged || !self.backend.placed(self.state, self.gpu)?.is_empty())
    }

    /// The pids running on compute instance `ci` of GPU instance `gi`, ascending.
    pub(super) fn on_compute_instance(&self, gi: u32, ci: u32) -> Result<Vec<u32>, GpuError> {
        let mut pids: Vec<u32> = (self.backend.placed(self.state, self.gpu)?.into_iter())
            .filter(|p| p.slot == Slot::Slice { gi, ci })
            .map(|p| p.process.pid)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        Ok(pids)
    }
}
