//! Why an opaque sharing config was refused. Every message starts with the
//! field it is about (`configs[N].sharing.mpsConfig.…`) and says what to write
//! instead; all of them are the caller's mistake (INVALID_ARGUMENT).

use super::ConfigKind;

/// A sharing config that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SharingError {
    /// A device's GPU lacks what the config asks of it (MPS, its limits).
    #[error(transparent)]
    FeatureMissing(#[from] crate::features::Missing),
    /// Larger than Kubernetes stores.
    #[error("{field}: the parameters are {bytes} bytes; at most {max} are allowed")]
    TooLarge {
        /// "configs[N]".
        field: String,
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// Not JSON, a wrong type, or an unknown field (the decoder's message names it).
    #[error("{field}: {problem}")]
    Malformed {
        /// The path of the offending value, e.g. "configs[0].sharing".
        field: String,
        /// The decoder's message.
        problem: String,
    },
    /// An apiVersion this daemon does not read.
    #[error(
        "{field}: apiVersion {api_version:?} is not supported; use \
         \"resource.nvidia.com/v1beta1\" (GpuConfig, MigDeviceConfig) or \
         \"gpuslice.dev/v1alpha1\" (MpsMemoryConfig, LimitsConfig)"
    )]
    UnknownApiVersion {
        /// "configs[N].apiVersion".
        field: String,
        /// What was written.
        api_version: String,
    },
    /// A kind this daemon does not read under that apiVersion.
    #[error("{field}: kind {kind:?} is not supported under {api_version}; use {expected}")]
    UnknownKind {
        /// "configs[N].kind".
        field: String,
        /// The apiVersion given.
        api_version: String,
        /// What was written.
        kind: String,
        /// The kinds that exist there.
        expected: &'static str,
    },
    /// A value outside its allowed set or range.
    #[error("{field}: {value} {problem}")]
    BadValue {
        /// The full path of the field.
        field: String,
        /// The value as written.
        value: String,
        /// What is allowed.
        problem: String,
    },
    /// Settings of one strategy under another.
    #[error(
        "{field} is set but the strategy is {strategy:?}; remove it or change sharing.strategy"
    )]
    OtherStrategysConfig {
        /// The path of the misplaced config, e.g. "configs[0].sharing.mpsConfig".
        field: String,
        /// The strategy chosen.
        strategy: String,
    },
    /// Time-slicing asked for a MIG device.
    #[error(
        "{field}: TimeSlicing cannot be set on a MigDeviceConfig: the time-slice is a \
         property of the whole physical GPU; use strategy MPS, or a GpuConfig on a whole GPU"
    )]
    TimeSliceOnMig {
        /// "configs[N].sharing.strategy".
        field: String,
    },
    /// A config kind that does not fit the allocated device.
    #[error(
        "{field}: kind {kind} cannot apply to device {device} of request {request:?}, \
         which is a {device_kind}; use kind {expected}"
    )]
    WrongDeviceKind {
        /// "configs[N].kind".
        field: String,
        /// The config's kind.
        kind: ConfigKind,
        /// The request.
        request: String,
        /// The device (UUID).
        device: String,
        /// "whole GPU" or "MIG device".
        device_kind: &'static str,
        /// The kind that would fit.
        expected: ConfigKind,
    },
    /// A memory limit above what the device has.
    #[error(
        "{field}: {limit_bytes} bytes is more than device {device} has ({memory_bytes} bytes); \
         ask for at most that"
    )]
    OverDeviceMemory {
        /// The path of the limit.
        field: String,
        /// The limit.
        limit_bytes: u64,
        /// The device (UUID).
        device: String,
        /// Its memory.
        memory_bytes: u64,
    },
    /// A per-device limit keyed by something that is not one of the request's devices.
    #[error(
        "{field}: key {key:?} names none of request {request:?}'s devices; use an index \
         0..{count} into them or one of their UUIDs ({uuids})"
    )]
    UnknownDeviceKey {
        /// "configs[N].sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit".
        field: String,
        /// The key written.
        key: String,
        /// The request.
        request: String,
        /// How many devices the request has.
        count: usize,
        /// Their UUIDs, comma-separated.
        uuids: String,
    },
    /// Two settings that cannot be combined.
    #[error("{field}: {problem}")]
    Conflict {
        /// The field that cannot stay.
        field: String,
        /// Why, and what to do.
        problem: String,
    },
}
