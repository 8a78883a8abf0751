//! The rules NVML applies to processes on one GPU, as the simulator answers
//! them: where a device UUID runs on the GPU ([`slot_of`]: the whole GPU
//! while MIG mode is disabled, a compute instance by its MIG device UUID),
//! how much memory that place has ([`capacity`]), and the three read verbs'
//! answers from the processes placed there: the process list, per-process
//! utilization samples and memory use.
//!
//! Pure: no I/O, no locks, no clock (the caller passes "now"). Invariants of
//! the answers: processes ascending by (pid, GPU instance, compute instance),
//! one entry each; instance ids only on slices; no utilization samples in MIG
//! mode (`NotSupported`, as NVML); memory used never above the total.

use std::collections::BTreeMap;

use super::hardware::{GpuRef, SimGpuState};
use super::processes::SimProcess;
use crate::gpu::{GpuError, GpuProcess, MemoryUse, MigMode, ProcessUtilization};

/// Where a process runs on its GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Slot {
    /// The whole GPU (MIG mode disabled).
    Whole,
    /// Compute instance `ci` of GPU instance `gi`.
    Slice {
        /// GPU instance id.
        gi: u32,
        /// Compute instance id.
        ci: u32,
    },
}

impl Slot {
    /// The GPU instance, on a slice.
    pub fn gpu_instance(self) -> Option<u32> {
        match self {
            Slot::Whole => None,
            Slot::Slice { gi, .. } => Some(gi),
        }
    }

    fn compute_instance(self) -> Option<u32> {
        match self {
            Slot::Whole => None,
            Slot::Slice { ci, .. } => Some(ci),
        }
    }

    /// Whether two places draw on the same framebuffer memory (the whole
    /// GPU, or one GPU instance's memory slices).
    pub fn shares_memory(self, other: Slot) -> bool {
        self.gpu_instance() == other.gpu_instance()
    }
}

/// A live process placed on the GPU a verb works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The process as registered or read from its file.
    pub process: SimProcess,
    /// Where it runs.
    pub slot: Slot,
}

/// Where `device` runs on `gpu`: its own UUID while MIG mode is disabled, or
/// the MIG device UUID of one of its compute instances. `None` otherwise
/// (another GPU's device, a destroyed instance, the whole GPU in MIG mode).
pub fn slot_of(state: &SimGpuState, gpu: GpuRef<'_>, device: &str) -> Option<Slot> {
    if device == gpu.uuid {
        return (state.mig_current == MigMode::Disabled).then_some(Slot::Whole);
    }
    state.gpu_instances.iter().find_map(|gi| {
        (gi.compute_instances.iter())
            .find(|ci| ci.uuid == device)
            .map(|ci| Slot::Slice {
                gi: gi.id,
                ci: ci.id,
            })
    })
}

/// The framebuffer memory of GPU instance `gi`: its profile's memory size.
fn gi_memory(state: &SimGpuState, gpu: GpuRef<'_>, gi: u32) -> Option<u64> {
    let instance = state.gpu_instances.iter().find(|i| i.id == gi)?;
    let profile = gpu.spec.profile_by_id(instance.profile_id)?;
    Some(profile.memory_mib.saturating_mul(1 << 20))
}

/// The memory a process at `slot` can use: the GPU's, or its slice's.
pub fn capacity(state: &SimGpuState, gpu: GpuRef<'_>, slot: Slot) -> u64 {
    match slot {
        Slot::Whole => gpu.spec.memory_bytes,
        Slot::Slice { gi, .. } => gi_memory(state, gpu, gi).unwrap_or(0),
    }
}

/// Memory the processes drawing on the same memory as `slot` use.
pub fn used_beside(placed: &[Placed], slot: Slot) -> u64 {
    (placed.iter())
        .filter(|p| p.slot.shares_memory(slot))
        .fold(0, |sum, p| sum.saturating_add(p.process.memory_bytes))
}

/// `processes`: one entry per (pid, GPU instance, compute instance),
/// ascending; a pid listed twice at one place (registry and folder) is one
/// process, an MPS client if either says so.
pub fn list(placed: &[Placed]) -> Vec<GpuProcess> {
    let mut merged: BTreeMap<(u32, Option<u32>, Option<u32>), GpuProcess> = BTreeMap::new();
    for p in placed {
        let entry = GpuProcess {
            pid: p.process.pid,
            used_memory: Some(p.process.memory_bytes),
            gpu_instance: p.slot.gpu_instance(),
            compute_instance: p.slot.compute_instance(),
            mps_client: p.process.mps_client,
        };
        let key = (entry.pid, entry.gpu_instance, entry.compute_instance);
        merged
            .entry(key)
            .and_modify(|seen| seen.mps_client |= entry.mps_client)
            .or_insert(entry);
    }
    merged.into_values().collect()
}

/// `process_utilization` at `now_us`: `NotSupported` in MIG mode (the
/// driver does not sample per process there); otherwise one sample per pid
/// with SM utilization above 0, taken now, if now is after `since_us`.
pub fn utilization(
    state: &SimGpuState,
    gpu: GpuRef<'_>,
    placed: &[Placed],
    since_us: u64,
    now_us: u64,
) -> Result<Vec<ProcessUtilization>, GpuError> {
    if state.mig_current == MigMode::Enabled {
        return Err(GpuError::NotSupported {
            what: format!(
                "GPU {} per-process utilization (MIG mode is enabled)",
                gpu.index
            ),
        });
    }
    if now_us <= since_us {
        return Ok(Vec::new());
    }
    let mut by_pid: BTreeMap<u32, u32> = BTreeMap::new();
    for p in placed.iter().filter(|p| p.process.sm_percent > 0) {
        let sm = by_pid.entry(p.process.pid).or_default();
        *sm = (*sm).max(p.process.sm_percent.min(100));
    }
    Ok(by_pid
        .into_iter()
        .map(|(pid, sm_percent)| ProcessUtilization {
            pid,
            sm_percent,
            memory_percent: 0,
            timestamp_us: now_us,
        })
        .collect())
}

/// `memory_use` of the GPU (`gi` `None`: every process on it and its
/// slices) or of GPU instance `gi` (its processes, its profile's memory);
/// `NotFound` for a GPU instance the GPU lacks or that has no compute
/// instance (so no MIG device to ask, as with NVML).
pub fn memory_use(
    state: &SimGpuState,
    gpu: GpuRef<'_>,
    placed: &[Placed],
    gi: Option<u32>,
) -> Result<MemoryUse, GpuError> {
    let (total, used) = match gi {
        None => (
            gpu.spec.memory_bytes,
            (placed.iter()).fold(0u64, |sum, p| sum.saturating_add(p.process.memory_bytes)),
        ),
        Some(id) => {
            // NVML reads a slice through its MIG device handle, which only a
            // compute instance gives.
            let with_ci = (state.gpu_instances.iter())
                .any(|gi| gi.id == id && !gi.compute_instances.is_empty());
            let total = (gi_memory(state, gpu, id).filter(|_| with_ci)).ok_or_else(|| {
                GpuError::NotFound {
                    what: format!("GPU {} GPU instance {id} (no MIG device)", gpu.index),
                }
            })?;
            let used = (placed.iter())
                .filter(|p| p.slot.gpu_instance() == Some(id))
                .fold(0u64, |sum, p| sum.saturating_add(p.process.memory_bytes));
            (total, used)
        }
    };
    Ok(MemoryUse {
        used: used.min(total),
        total,
    })
}
