//! Everything a prepare or unprepare can refuse or fail with. Each variant
//! maps to exactly one gRPC code in `api::status`, and its message says what
//! to fix.

use gpuslice_cdi::atomic::AtomicError;

use crate::claims::compute_policy::TimeSliceError;
use crate::claims::mps_daemon::MpsError;
use crate::gpu::GpuError;
use crate::opaque::SharingError;
use crate::state::AccessKind;
use crate::state::StateError;

/// A claim operation that did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The claim uid is not a canonical UUID.
    #[error(
        "claim uid {uid:?} is not a lowercase RFC 4122 UUID \
         (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx); pass the ResourceClaim's metadata.uid"
    )]
    InvalidUid {
        /// The rejected uid (truncated to 80 characters).
        uid: String,
    },
    /// A request field is malformed.
    #[error("{field}: {problem}")]
    InvalidField {
        /// The field, e.g. "claim.namespace" or "devices[1].request_names[0]".
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// The request allocates no device.
    #[error("the claim allocates no device; pass at least one device from GetInventory")]
    NoDevices,
    /// A device the node does not have.
    #[error("device {device:?} is not in this node's inventory (known: {known})")]
    UnknownDevice {
        /// The name asked for.
        device: String,
        /// The names the node offers.
        known: String,
    },
    /// The same device twice in one claim.
    #[error("device {device} is listed twice in the claim")]
    DuplicateDevice {
        /// The repeated name.
        device: String,
    },
    /// A device lacks what the claim asks of it (MIG, MPS or its limits,
    /// time-slice settings): the message names the GPU, what it lacks and
    /// what to ask instead.
    #[error(transparent)]
    FeatureMissing(#[from] crate::features::Missing),
    /// An opaque sharing config that cannot be used (the message names the
    /// field, e.g. `configs[1].sharing.mpsConfig.defaultActiveThreadPercentage`).
    #[error(transparent)]
    Sharing(#[from] SharingError),
    /// A claim's `LimitsConfig` that this node's `[limits] claim_override`
    /// does not let stand (the message names the config and what to do).
    #[error(transparent)]
    Limits(#[from] crate::opaque::admit::AdmitError),
    /// The device, or part of it, is held by another claim.
    #[error(
        "device {device} is not free: claim {holder} holds {holder_device} on the same GPU; \
         unprepare that claim first"
    )]
    DeviceHeld {
        /// The device asked for.
        device: String,
        /// The uid of the claim holding it.
        holder: String,
        /// The device that claim holds (the same one, the whole GPU, or a slice).
        holder_device: String,
    },
    /// The GPU is shared by other claims, and this claim does not share it
    /// the same way (or asks for it whole, or for a slice of it).
    #[error(
        "device {device} is shared under {} by claim {holder}; only a claim with a matching \
         sharing config (opaque GpuConfig with sharing.strategy) can join it: add one, or \
         allocate another device",
        .mode.words()
    )]
    GpuShared {
        /// The device asked for.
        device: String,
        /// A claim sharing it.
        holder: String,
        /// How it is shared: MPS or time-slicing.
        mode: AccessKind,
    },
    /// A new claim names a whole GPU that is offered as slices only (a
    /// MIG-managed GPU in layout mode).
    #[error(
        "device {device} is not offered whole: the [mig] config manages it and [mig] advertise = \
         \"layout\" offers only its slices ({slices}); allocate a slice (a layout with the GPU's \
         largest profile offers all of it as one), leave the GPU out of [mig], or use advertise = \
         \"partitionable\""
    )]
    NotOfferedWhole {
        /// The GPU.
        device: String,
        /// Its slices offered.
        slices: String,
    },
    /// Sharing asked for a whole GPU that the `[mig]` config manages.
    #[error(
        "device {device} is MIG-managed by the [mig] config; sharing a whole GPU across claims \
         needs a GPU outside [mig] (or MPS on a MIG slice with a MigDeviceConfig)"
    )]
    SharingOnMigManaged {
        /// The device.
        device: String,
    },
    /// A memory share larger than what is left on the GPU.
    #[error(
        "{gpu} ({uuid}) has {} left for memory shares; this claim asks for {}; promised to: \
         {holders}; ask for less, or for another GPU",
        bytes_text(.left),
        bytes_text(.asked)
    )]
    MemoryExhausted {
        /// The GPU's inventory name.
        gpu: String,
        /// Its UUID.
        uuid: String,
        /// Bytes asked for.
        asked: u64,
        /// Bytes not promised yet.
        left: u64,
        /// "claim (amount)", comma-separated.
        holders: String,
    },
    /// The claim asks for MPS or time-slicing, but this engine was built
    /// without the tools for it (a library user that did not call
    /// `Engine::with_sharing`).
    #[error(
        "claim {uid} asks for GPU sharing, but this gpusliced runs without MPS and time-slice support"
    )]
    SharingNotConfigured {
        /// The claim.
        uid: String,
    },
    /// An MPS control daemon could not be started, joined or stopped.
    #[error(transparent)]
    Mps(#[from] MpsError),
    /// A time-slice request conflicts with other claims, or nvidia-smi failed.
    #[error(transparent)]
    TimeSlicing(#[from] TimeSliceError),
    /// Two devices of one claim overlap on one GPU.
    #[error("devices {first} and {second} of the claim overlap on one GPU; allocate disjoint ones")]
    DevicesOverlap {
        /// The first device.
        first: String,
        /// The device overlapping it.
        second: String,
    },
    /// The claim is prepared already, with other devices, sharing or configs.
    #[error(
        "claim {uid} is already prepared with {prepared}, and this prepare asks for {asked}; \
         a prepared claim cannot change: unprepare it first, or use a new claim uid"
    )]
    PreparedDifferently {
        /// The claim.
        uid: String,
        /// What differs, as the claim has it: "devices [gpu-3]", "gpu-3
        /// time-sliced (interval Long)", "the opaque configs [...]".
        prepared: String,
        /// The same, as this prepare asks for it.
        asked: String,
    },
    /// A device node the container needs is missing on the host.
    #[error(
        "device node {path} for {device} is missing: is the NVIDIA driver loaded, and is \
         dev_root right?"
    )]
    DeviceNodeMissing {
        /// The device.
        device: String,
        /// The host path looked for.
        path: String,
    },
    /// A GPU the claim holds is no longer on the node.
    #[error("GPU {uuid} (was {device}) of claim {uid} is no longer on this node")]
    DeviceGone {
        /// The claim.
        uid: String,
        /// The name it was prepared as.
        device: String,
        /// The GPU's UUID.
        uuid: String,
    },
    /// The CDI spec could not be written or removed.
    #[error("CDI spec of claim {uid}: {error}")]
    CdiFile {
        /// The claim.
        uid: String,
        /// What failed.
        error: AtomicError,
    },
    /// The spec built for the claim breaks a CDI rule (a bug, or a driver
    /// root with names CDI cannot carry); nothing was written.
    #[error("CDI spec built for claim {uid} is invalid: {error}")]
    InvalidSpec {
        /// The claim.
        uid: String,
        /// The rule broken.
        error: gpuslice_cdi::validate::SpecError,
    },
    /// A slice's placement is taken by a GPU instance nobody asked for.
    #[error(
        "{gpu}: memory slices {start}.. for {profile} are taken by GPU instance {gpu_instance}, \
         which gpusliced did not create; destroy it (nvidia-smi mig -dgi) or allocate another slice"
    )]
    SliceOccupied {
        /// The GPU.
        gpu: String,
        /// The profile asked for.
        profile: String,
        /// The first memory slice asked for.
        start: u32,
        /// The instance in the way.
        gpu_instance: u32,
    },
    /// A whole GPU was asked for while MIG instances exist on it.
    #[error(
        "{gpu} is partitioned ({instances} MIG GPU instances, e.g. id {first}); a whole-GPU \
         claim needs it free of instances"
    )]
    GpuPartitioned {
        /// The GPU.
        gpu: String,
        /// How many instances exist.
        instances: usize,
        /// One of them.
        first: u32,
    },
    /// The configured layout cannot be placed on a GPU.
    #[error("{gpu}: the [mig] layout cannot be applied: {reason}")]
    LayoutUnplaceable {
        /// The GPU.
        gpu: String,
        /// The planner's reason.
        reason: String,
    },
    /// MIG mode could not be switched now (Ampere switches only when idle).
    #[error(
        "{gpu}: MIG mode cannot become {wanted} now ({reason}); wait until nothing runs on the \
         GPU, or take it out of the [mig] config"
    )]
    MigModeStuck {
        /// The GPU.
        gpu: String,
        /// The mode asked for.
        wanted: &'static str,
        /// Why, in NVML's words.
        reason: String,
    },
    /// A device of a new claim is unhealthy (an XID, an ECC error, a lost GPU).
    #[error(
        "device {device} is unhealthy: {reason}; new claims on it are refused: allocate a healthy \
         device (with taint_unhealthy the DRA plugin taints this one), or fix the GPU (reset or \
         reboot) and run `gpuslicectl health clear {gpu}`"
    )]
    DeviceUnhealthy {
        /// The device asked for.
        device: String,
        /// Why, and since when.
        reason: String,
        /// The GPU it is, or is part of.
        gpu: String,
    },
    /// The claim record could not be written or removed.
    #[error(transparent)]
    State(#[from] StateError),
    /// The hardware refused.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// "20.0 GiB (21474836480 bytes)": readable, and exact (gpuslice-quantity's
/// one way to print a byte amount).
pub fn bytes_text(bytes: &u64) -> String {
    gpuslice_quantity::show::gib_exact(*bytes)
}
