//! What runs on a GPU: the processes NVML lists with a compute context, their
//! per-process SM utilization samples, and the framebuffer use of a GPU or of
//! one MIG slice. Plain data; both backends answer with NVML's semantics
//! (the simulator's fake processes follow the same rules).

/// One process with a compute context on a GPU or on one of its MIG slices.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpuProcess {
    /// The process id in the host's (the daemon's) pid namespace.
    pub pid: u32,
    /// Framebuffer memory the process uses, in bytes; `None` where NVML
    /// reports `NVML_VALUE_NOT_AVAILABLE`.
    pub used_memory: Option<u64>,
    /// On a GPU in MIG mode: the GPU instance the process runs on.
    pub gpu_instance: Option<u32>,
    /// On a GPU in MIG mode: the compute instance the process runs on.
    pub compute_instance: Option<u32>,
    /// Listed by `nvmlDeviceGetMPSComputeRunningProcesses_v3`: a client of an
    /// MPS server (the server itself is an ordinary compute process).
    pub mps_client: bool,
}

/// One per-process utilization sample (`nvmlDeviceGetProcessUtilization`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessUtilization {
    /// The process id.
    pub pid: u32,
    /// SM (compute) utilization over the driver's sampling period, percent.
    pub sm_percent: u32,
    /// Framebuffer (memory controller) utilization, percent.
    pub memory_percent: u32,
    /// CPU timestamp of the sample, microseconds since the epoch.
    pub timestamp_us: u64,
}

/// Framebuffer memory of a GPU or of one MIG slice (`nvmlDeviceGetMemoryInfo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryUse {
    /// Bytes in use (by processes and the driver's reservation).
    pub used: u64,
    /// Bytes in all.
    pub total: u64,
}
