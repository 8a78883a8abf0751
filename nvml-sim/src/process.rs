//! Processes on a GPU, as NVML lists them, in safe code: the compute list
//! (`nvmlDeviceGetComputeRunningProcesses_v3`) and the MPS client list
//! (`nvmlDeviceGetMPSComputeRunningProcesses_v3`) from the simulator's
//! processes (its process folder: what `gpuslicectl sim exec` writes), per
//! GPU or per MIG device, and per-process utilization samples. The parent
//! GPU's lists hold every slice's processes with their instance ids (NVML
//! lists them so to root); a MIG device's, only its own.

use gpuslice::gpu::{GpuBackend, GpuProcess, NO_INSTANCE, ProcessUtilization};

use crate::code::{Answer, NOT_FOUND};
use crate::device::{Device, sim};
use crate::node::Node;

/// Which of NVML's lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// Processes with a compute context (an MPS server among them).
    Compute,
    /// Clients of an MPS server.
    MpsClients,
    /// Processes with a graphics context: none on the simulated GPUs.
    Graphics,
}

/// One row of a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its pid.
    pub pid: u32,
    /// Framebuffer bytes; `None`: NVML's "not available".
    pub used: Option<u64>,
    /// GPU instance id, or [`NO_INSTANCE`].
    pub gi: u32,
    /// Compute instance id, or [`NO_INSTANCE`].
    pub ci: u32,
}

impl Node {
    /// One of NVML's process lists of `device`.
    pub fn process_list(&self, device: &Device, list: List) -> Answer<Vec<Row>> {
        let all = sim(self.sim.processes(device.gpu()))?;
        let on_device = |p: &GpuProcess| match device {
            Device::Gpu(_) => true,
            Device::Mig(mig) => {
                p.gpu_instance == Some(mig.gi.id) && p.compute_instance == Some(mig.ci.id)
            }
        };
        let wanted = |p: &GpuProcess| match list {
            List::Compute => !p.mps_client,
            List::MpsClients => p.mps_client,
            List::Graphics => false,
        };
        Ok((all.iter())
            .filter(|p| on_device(p) && wanted(p))
            .map(|p| Row {
                pid: p.pid,
                used: p.used_memory,
                gi: p.gpu_instance.unwrap_or(NO_INSTANCE),
                ci: p.compute_instance.unwrap_or(NO_INSTANCE),
            })
            .collect())
    }

    /// `nvmlDeviceGetProcessUtilization` after `since_us`: NOT_FOUND when
    /// there is no sample (as NVML answers), NOT_SUPPORTED in MIG mode.
    pub fn utilization(&self, index: u32, since_us: u64) -> Answer<Vec<ProcessUtilization>> {
        self.answering(index)?;
        let samples = sim(self.sim.process_utilization(index, since_us))?;
        if samples.is_empty() {
            return Err(NOT_FOUND);
        }
        Ok(samples)
    }
}

/// The name nvidia-smi shows for a process: its command's first word, as
/// the kernel has it (`/proc/<pid>/cmdline`), else its `comm`; empty for a
/// process that is gone.
pub fn name(pid: u32) -> String {
    let proc = std::path::Path::new("/proc").join(pid.to_string());
    let first = std::fs::read(proc.join("cmdline")).ok().and_then(|line| {
        let word = line.split(|b| *b == 0).next()?;
        (!word.is_empty()).then(|| String::from_utf8_lossy(word).into_owned())
    });
    first
        .or_else(|| {
            let comm = std::fs::read_to_string(proc.join("comm")).ok()?;
            Some(comm.trim_end().to_owned())
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::name;

    #[test]
    fn a_process_is_named_by_its_command() {
        let me = name(std::process::id());
        let exe = std::env::current_exe().unwrap();
        assert!(
            me.ends_with(exe.file_name().unwrap().to_str().unwrap()),
            "{me}"
        );
        assert_eq!(name(u32::MAX), "");
    }
}
