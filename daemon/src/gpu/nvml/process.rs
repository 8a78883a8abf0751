//! The read-only process verbs on real GPUs: compute and MPS client lists,
//! per-process utilization samples, and framebuffer use of a GPU or of one
//! MIG slice through its MIG device handle.

use std::collections::BTreeMap;

use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::struct_wrappers::device::ProcessInfo;
use nvml_wrapper::{Device, Nvml};

use super::{on_gpu, raw};
use crate::gpu::{GpuError, GpuProcess, MemoryUse, ProcessUtilization};

/// The compute list and the MPS client list of `dev`, merged: one entry per
/// (pid, GPU instance, compute instance); an MPS client listed in both keeps
/// `mps_client`. An empty MPS list where the driver has no MPS call.
pub(super) fn processes(dev: &Device<'_>, index: u32) -> Result<Vec<GpuProcess>, GpuError> {
    let compute = (dev.running_compute_processes())
        .map_err(on_gpu("nvmlDeviceGetComputeRunningProcesses_v3", index))?;
    let mps = match dev.mps_running_compute_processes() {
        Ok(list) => list,
        Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_)) => Vec::new(),
        Err(err) => {
            return Err(on_gpu("nvmlDeviceGetMPSComputeRunningProcesses_v3", index)(
                err,
            ));
        }
    };
    let mut merged: BTreeMap<(u32, Option<u32>, Option<u32>), GpuProcess> = BTreeMap::new();
    for (info, mps_client) in compute
        .iter()
        .map(|p| (p, false))
        .chain(mps.iter().map(|p| (p, true)))
    {
        let process = convert(info, mps_client);
        let key = (process.pid, process.gpu_instance, process.compute_instance);
        merged
            .entry(key)
            .and_modify(|seen| {
                seen.mps_client |= mps_client;
                seen.used_memory = seen.used_memory.or(process.used_memory);
            })
            .or_insert(process);
    }
    Ok(merged.into_values().collect())
}

fn convert(info: &ProcessInfo, mps_client: bool) -> GpuProcess {
    GpuProcess {
        pid: info.pid,
        used_memory: match info.used_gpu_memory {
            UsedGpuMemory::Used(bytes) => Some(bytes),
            UsedGpuMemory::Unavailable => None,
        },
        gpu_instance: info.gpu_instance_id,
        compute_instance: info.compute_instance_id,
        mps_client,
    }
}

/// `nvmlDeviceGetProcessUtilization` after `since_us`.
pub(super) fn utilization(
    dev: &Device<'_>,
    index: u32,
    since_us: u64,
) -> Result<Vec<ProcessUtilization>, GpuError> {
    let samples = match dev.process_utilization_stats(since_us) {
        Ok(samples) => samples,
        // No sample newer than `since_us`: NVML answers NOT_FOUND.
        Err(NvmlError::NotFound) => return Ok(Vec::new()),
        Err(err) => return Err(on_gpu("nvmlDeviceGetProcessUtilization", index)(err)),
    };
    Ok(samples
        .into_iter()
        .map(|s| ProcessUtilization {
            pid: s.pid,
            sm_percent: s.sm_util,
            memory_percent: s.mem_util,
            timestamp_us: s.timestamp,
        })
        .collect())
}

/// Framebuffer use of `dev` (GPU `index` or one of its MIG devices), an
/// error naming `call`.
fn device_memory(dev: &Device<'_>, index: u32, call: &'static str) -> Result<MemoryUse, GpuError> {
    let info = dev.memory_info().map_err(on_gpu(call, index))?;
    Ok(MemoryUse {
        used: info.used,
        total: info.total,
    })
}

/// Framebuffer use of the GPU, or of its GPU instance `gpu_instance` (the
/// first MIG device handle of that GPU instance).
pub(super) fn memory_use(
    nvml: &Nvml,
    dev: &Device<'_>,
    index: u32,
    gpu_instance: Option<u32>,
) -> Result<MemoryUse, GpuError> {
    let Some(gi) = gpu_instance else {
        return device_memory(dev, index, "nvmlDeviceGetMemoryInfo");
    };
    let count = dev
        .mig_device_count()
        .map_err(on_gpu("nvmlDeviceGetMaxMigDeviceCount", index))?;
    for slot in 0..count {
        let mig = match dev.mig_device_by_index(slot) {
            Ok(mig) => mig,
            Err(NvmlError::NotFound) => continue,
            Err(err) => return Err(on_gpu("nvmlDeviceGetMigDeviceHandleByIndex", index)(err)),
        };
        let (found, _) =
            raw::mig_device_ids(nvml, &mig).map_err(on_gpu("nvmlDeviceGetGpuInstanceId", index))?;
        if found == gi {
            return device_memory(&mig, index, "nvmlDeviceGetMemoryInfo (MIG device)");
        }
    }
    Err(GpuError::NotFound {
        what: format!("GPU {index} GPU instance {gi}"),
    })
}
