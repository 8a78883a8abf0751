//! The MIG vocabulary of the hardware boundary: profiles, placements and
//! instances exactly as NVML reports them, shared by both backends, the pure
//! planner (`crate::mig`) and the claim engine. Plain data, no I/O; serde only so
//! the simulator can persist its "hardware" state.

use serde::{Deserialize, Serialize};

/// Where a GPU instance sits, in memory-slice units (NVML's `{start, size}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Placement {
    /// Index of the first occupied memory slice.
    pub start: u32,
    /// Number of memory slices occupied.
    pub size: u32,
}

impl Placement {
    /// The memory slices this placement occupies.
    pub fn slices(self) -> std::ops::Range<u32> {
        self.start..self.start.saturating_add(self.size)
    }

    /// Whether the two placements share a memory slice.
    pub fn overlaps(self, other: Placement) -> bool {
        self.start < other.start.saturating_add(other.size)
            && other.start < self.start.saturating_add(self.size)
    }
}

/// One GPU-instance profile of one GPU, as `nvmlDeviceGetGpuInstanceProfileInfo`
/// and `nvmlDeviceGetGpuInstancePossiblePlacements_v2` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigProfile {
    /// Profile name without the "MIG " prefix, e.g. "3g.40gb" or "1g.10gb+me".
    pub name: String,
    /// The NVML profile index constant (`NVML_GPU_INSTANCE_PROFILE_*`).
    pub index: u32,
    /// The device-specific profile ID (`info.id`) that create calls take.
    pub id: u32,
    /// Memory slices an instance occupies (its placement size).
    pub memory_slices: u32,
    /// Compute slices an instance gets (`sliceCount`).
    pub compute_slices: u32,
    /// Streaming multiprocessors (`multiprocessorCount`).
    pub multiprocessors: u32,
    /// Memory of one instance in bytes (`memorySizeMB` × 2^20).
    pub memory_bytes: u64,
    /// Copy engines.
    pub copy_engines: u32,
    /// NVDEC decoders.
    pub decoders: u32,
    /// NVENC encoders.
    pub encoders: u32,
    /// NVJPG engines.
    pub jpegs: u32,
    /// Optical flow accelerators.
    pub ofas: u32,
    /// Most instances of this profile on one GPU (`instanceCount`).
    pub max_count: u32,
    /// Every placement NVML allows for this profile, ascending by start.
    pub placements: Vec<Placement>,
}

impl MigProfile {
    /// Whether this is a media-extension ("+me") profile, at most one per GPU.
    pub fn media_extensions(&self) -> bool {
        self.name.ends_with("+me")
    }
}

/// A GPU instance that exists on a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInstance {
    /// The GPU instance id (unique on its GPU).
    pub id: u32,
    /// The profile ID it was created with ([`MigProfile::id`]).
    pub profile_id: u32,
    /// Where it sits.
    pub placement: Placement,
    /// Its compute instances, ascending by id.
    pub compute_instances: Vec<ComputeInstance>,
}

/// A compute instance inside a GPU instance: what a container actually gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputeInstance {
    /// The compute instance id (unique within its GPU instance).
    pub id: u32,
    /// The compute-instance profile ID it was created with.
    pub profile_id: u32,
    /// The MIG device UUID, "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
    pub uuid: String,
}

/// A GPU's compute mode (`nvmlComputeMode_t`); MPS wants `ExclusiveProcess`.
/// Its text is nvidia-smi's: "DEFAULT", "EXCLUSIVE_PROCESS", "PROHIBITED"
/// (the serde names, in the simulator's state file, are the variant names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::Display)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ComputeMode {
    /// Many contexts per device (NVML_COMPUTEMODE_DEFAULT).
    Default,
    /// One context per device, usable from many threads (EXCLUSIVE_PROCESS).
    ExclusiveProcess,
    /// No contexts allowed (PROHIBITED).
    Prohibited,
}
