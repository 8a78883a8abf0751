//! The hardware boundary: one trait, [`GpuBackend`], and its two implementations.
//!
//! * [`nvml`]: real GPUs through NVML (nvml-wrapper, library loaded at run time).
//! * [`sim`]: a faithful simulator driven by per-model tables.
//! * [`observed`]: the wrapper that passes a crash point after each hardware
//!   change, in test builds.
//!
//! Besides the verbs, a backend reports health events (XIDs, ECC errors, a
//! lost GPU) through a [`HealthWatch`] ([`GpuBackend::watch_health`]).
//!
//! The backend is chosen explicitly in the config; a failed NVML load is an
//! error that names the library, never a quiet switch to the simulator.
//! Nothing above this module knows which backend it talks to, and no
//! nvml-wrapper type crosses the trait. Calls block: async callers go through
//! `spawn_blocking`.

#[cfg(test)]
mod conformance;
mod error;
mod fabric;
mod health;
mod mig;
#[cfg(test)]
mod mig_conformance;
pub mod nvml;
pub mod observed;
mod process;
mod reads;
pub mod sim;

pub use error::GpuError;
pub use fabric::{FabricState, GpuFabric, ZERO_CLUSTER_UUID};
pub use health::{
    HealthEvent, HealthEventKind, HealthWatch, NO_INSTANCE, Unmonitored, instance_id,
};
pub use mig::{
    ComputeInstance, ComputeMode, GpuInstance, MediaConflict, MediaEngines, MediaUse, MigProfile,
    Placement, memory_slices,
};
pub use process::{GpuProcess, MemoryUse, ProcessUtilization};
pub use reads::{HealthReads, UsageReads};

/// Versions of the node's NVIDIA driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverInfo {
    /// The kernel driver version as NVML prints it, e.g. "580.95.05".
    pub driver_version: String,
    /// The CUDA driver API version, (major, minor), e.g. (13, 0).
    pub cuda_driver_version: (u32, u32),
}

/// Whether a GPU supports MIG, and its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigSupport {
    /// The GPU cannot be partitioned (NVML answers NOT_SUPPORTED).
    NotSupported,
    /// The GPU can be partitioned. `pending` differs from `current` until the
    /// mode change takes effect (GPU reset on Ampere).
    Supported {
        /// The mode in force now.
        current: MigMode,
        /// The mode after the next activation.
        pending: MigMode,
    },
}

/// "unsupported", "enabled", "disabled", or the mode in force with the
/// pending one: "enabled (pending disabled)".
impl std::fmt::Display for MigSupport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotSupported => f.write_str("unsupported"),
            Self::Supported { current, pending } if current == pending => write!(f, "{current}"),
            Self::Supported { current, pending } => write!(f, "{current} (pending {pending})"),
        }
    }
}

/// MIG mode of a GPU. Its text is "enabled" or "disabled" (the serde names,
/// in the simulator's state file, are the variant names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[derive(serde::Deserialize, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum MigMode {
    /// Whole-GPU operation.
    Disabled,
    /// The GPU is partitioned into GPU instances.
    Enabled,
}

/// What the daemon needs to know of one physical GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuInfo {
    /// NVML index, 0-based.
    pub index: u32,
    /// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
    pub uuid: String,
    /// NVML device name, e.g. "NVIDIA H100 80GB HBM3".
    pub product_name: String,
    /// Brand as NVIDIA's DRA driver publishes it, e.g. "Nvidia", "Tesla".
    pub brand: String,
    /// Architecture name, e.g. "Hopper", "Ampere".
    pub architecture: String,
    /// CUDA compute capability (major, minor), e.g. (9, 0).
    pub compute_capability: (u32, u32),
    /// Total framebuffer memory in bytes.
    pub memory_bytes: u64,
    /// PCI bus id in the canonical lowercase form "0000:3b:00.0".
    pub pci_bus_id: String,
    /// The PCIe root complex, e.g. "pci0000:3a", where known (published as
    /// `resource.kubernetes.io/pcieRoot`).
    pub pcie_root: Option<String>,
    /// The NUMA node the kernel gives the GPU's PCI device; `None` where it
    /// gives none (-1) or cannot be read (then
    /// `resource.kubernetes.io/numaNode` is not published).
    pub numa_node: Option<u32>,
    /// Minor number of /dev/nvidiaN.
    pub minor: u32,
    /// MIG capability and mode.
    pub mig: MigSupport,
    /// Active NVLink links (`nvmlDeviceGetNvLinkState` over every link); 0
    /// on a GPU without NVLink.
    pub nvlink_links: u32,
    /// Its NVLink fabric (`nvmlDeviceGetGpuFabricInfoV`); `None` where NVML
    /// answers NOT_SUPPORTED.
    pub fabric: Option<GpuFabric>,
}

/// The hardware boundary. One method per hardware verb; every call blocks.
pub trait GpuBackend: Send + Sync + std::fmt::Debug {
    /// "nvml" or "sim", for logs and status.
    fn name(&self) -> &'static str;
    /// Driver and CUDA driver versions.
    fn driver_info(&self) -> Result<DriverInfo, GpuError>;
    /// Number of physical GPUs.
    fn device_count(&self) -> Result<u32, GpuError>;
    /// Facts about the GPU at `index` (0..device_count).
    fn device_info(&self, index: u32) -> Result<GpuInfo, GpuError>;

    /// The GPU-instance profiles of the GPU at `index`, with their placements,
    /// ascending by profile index. `NotSupported` on a GPU without MIG. NVML
    /// answers on a MIG-capable GPU whatever its MIG mode (seen on an H100,
    /// driver 580.159.04, MIG disabled), and so does the simulator.
    fn mig_profiles(&self, index: u32) -> Result<Vec<MigProfile>, GpuError>;
    /// Ask for a MIG mode; returns the mode now in force and the pending one.
    /// `InUse` when the GPU is busy: always when disabling with GPU instances
    /// left; on Ampere a busy GPU keeps the new mode pending (shown by
    /// `device_info`) until it is asked again while idle, or rebooted.
    fn set_mig_mode(&self, index: u32, mode: MigMode) -> Result<MigSupport, GpuError>;
    /// Every GPU instance on the GPU, with its compute instances, ascending by
    /// id. Empty while MIG mode is disabled (NVML lists none then; seen on an
    /// H100, driver 580.159.04); `NotSupported` on a GPU without MIG.
    fn gpu_instances(&self, index: u32) -> Result<Vec<GpuInstance>, GpuError>;
    /// Create a GPU instance of `profile_id` at `placement` (no compute
    /// instance yet). `InsufficientResources` when the placement overlaps an
    /// instance, the profile's count is used up, or a second "+me" instance is
    /// asked for; `Nvml` (NVML's INVALID_ARGUMENT) for an unknown profile or a
    /// placement the profile does not allow; `NotSupported` with MIG disabled.
    /// The instance id is NVML's: the placement's node in the memory-slice
    /// tree (A100: 7g = 0, 4-slice = 1..2, 2-slice = 3..6, 1-slice = 7..14).
    fn create_gpu_instance(
        &self,
        index: u32,
        profile_id: u32,
        placement: Placement,
    ) -> Result<GpuInstance, GpuError>;
    /// Create the one compute instance that spans the whole GPU instance
    /// `gi_id` (lowest free id, so 0). `InsufficientResources` if it already
    /// has one; `NotFound` for an unknown `gi_id`.
    fn create_compute_instance(&self, index: u32, gi_id: u32) -> Result<ComputeInstance, GpuError>;
    /// Destroy compute instance `ci_id` of GPU instance `gi_id`. `InUse` while
    /// processes run on it; `NotFound` when either id is unknown.
    fn destroy_compute_instance(&self, index: u32, gi_id: u32, ci_id: u32) -> Result<(), GpuError>;
    /// Destroy GPU instance `gi_id`; `InUse` while it still has compute
    /// instances; `NotFound` for an unknown id.
    fn destroy_gpu_instance(&self, index: u32, gi_id: u32) -> Result<(), GpuError>;
    /// The compute mode of the GPU at `index`.
    fn compute_mode(&self, index: u32) -> Result<ComputeMode, GpuError>;
    /// Set the compute mode of the GPU at `index` (not persistent across reboot).
    fn set_compute_mode(&self, index: u32, mode: ComputeMode) -> Result<(), GpuError>;

    /// Every process with a compute context on the GPU at `index` or on its
    /// MIG slices: NVML's compute list (`nvmlDeviceGetComputeRunningProcesses_v3`,
    /// on the parent handle, which as root lists every slice's processes with
    /// their instance ids) and its MPS client list
    /// (`nvmlDeviceGetMPSComputeRunningProcesses_v3`, `mps_client` set), one
    /// entry per pid and instance, ascending by pid. Read-only.
    fn processes(&self, index: u32) -> Result<Vec<GpuProcess>, GpuError>;
    /// Per-process utilization samples of the GPU at `index` taken after
    /// `since_us` (microseconds since the epoch; 0: every sample the driver
    /// keeps). Only processes with a sample are listed. `NotSupported` where
    /// the driver does not sample per process (a GPU in MIG mode, older GPUs).
    fn process_utilization(
        &self,
        index: u32,
        since_us: u64,
    ) -> Result<Vec<ProcessUtilization>, GpuError>;
    /// Framebuffer use of the GPU at `index` (`gpu_instance` `None`), or of
    /// its MIG GPU instance `gpu_instance` through that slice's MIG device
    /// handle. `NotFound` for a GPU instance that does not exist.
    fn memory_use(&self, index: u32, gpu_instance: Option<u32>) -> Result<MemoryUse, GpuError>;

    /// Registers for health events (critical XIDs, ECC errors, a lost GPU) on
    /// every GPU and returns the watch to wait on. Events before this call
    /// are not reported. A GPU that refuses registration is listed by
    /// [`HealthWatch::unmonitored`] rather than failing the call; an error
    /// means no GPU can be watched.
    fn watch_health(&self) -> Result<Box<dyn HealthWatch + '_>, GpuError>;
}

#[cfg(test)]
mod tests {
    use super::{MigMode, MigSupport};

    #[test]
    fn a_mig_support_prints_its_mode_and_a_pending_change() {
        let supported = |current, pending| MigSupport::Supported { current, pending };
        let cases = [
            (MigSupport::NotSupported, "unsupported"),
            (supported(MigMode::Enabled, MigMode::Enabled), "enabled"),
            (supported(MigMode::Disabled, MigMode::Disabled), "disabled"),
            (
                supported(MigMode::Enabled, MigMode::Disabled),
                "enabled (pending disabled)",
            ),
            (
                supported(MigMode::Disabled, MigMode::Enabled),
                "disabled (pending enabled)",
            ),
        ];
        for (support, text) in cases {
            assert_eq!(support.to_string(), text);
        }
    }
}
