//! The record of one claim, as stored on disk.
//!
//! Versioned: a reader refuses a record from a newer format instead of
//! guessing. Unknown fields are ignored so that a downgrade within one
//! version reads what an upgrade wrote.
//!
//! Version 2 added sharing (MPS, time-slicing, memory shares, consumed
//! capacity), as fields that default when absent, so version 1 records load
//! unchanged. A record is written as version 1 when it uses none of them, so
//! an older gpusliced keeps reading the claims it understands, and refuses
//! (instead of misreading as exclusive) a claim whose GPU is shared.
//!
//! A claim's own limits (`limits`, its admitted `LimitsConfig`) are an
//! optional field, written only when the claim has them, and need no version
//! of their own: a build that does not know them ignores the field and
//! applies the node's `[limits]`, which is what such a build would do for
//! any claim; nothing is misread about who holds what. Records without them
//! are byte for byte what earlier builds wrote.

mod disk;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::opaque::{ClaimLimits, TimeSliceInterval};

/// The newest format version this build reads and writes.
pub const RECORD_VERSION: u32 = 2;
/// The version of records that use no version-2 field.
pub const RECORD_VERSION_PLAIN: u32 = 1;

/// Where a claim stands: "preparing" or "prepared", in records and text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[derive(strum::Display, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Phase {
    /// Hardware steps may have been taken; the claim is not usable yet. A
    /// record found in this phase at start-up is rolled back.
    Preparing,
    /// The CDI spec is written; the claim is usable.
    Prepared,
}

/// How a device is shared, with other claims (whole GPUs) or among the
/// claim's own processes (an MPS daemon on its MIG slices).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum DeviceSharing {
    /// Compute time-slicing of the whole GPU at `interval`.
    #[serde(rename = "timeslicing")]
    TimeSlicing {
        /// The time-slice level.
        interval: TimeSliceInterval,
    },
    /// A client of the MPS control daemon over [`MpsSharing::devices`].
    Mps(MpsSharing),
}

/// The MPS daemon a device's request uses, in terms that survive a reboot
/// (device names, not MIG UUIDs, which change when a slice is made again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MpsSharing {
    /// The claim's devices (record names) the daemon covers, sorted: its key.
    pub devices: Vec<String>,
    /// `defaultActiveThreadPercentage` of the daemon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_thread_percentage: Option<u8>,
    /// Default pinned memory limits of the daemon, by device name, in bytes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pinned_memory_limits: BTreeMap<String, u64>,
    /// This device's memory share for the claim's clients, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_share: Option<u64>,
}

/// The MIG slice a device of a claim is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MigSlice {
    /// Profile name, e.g. "3g.40gb".
    pub profile: String,
    /// NVML profile ID of the GPU instance.
    pub profile_id: u32,
    /// First memory slice.
    pub start: u32,
    /// Memory slices occupied.
    pub size: u32,
    /// GPU instance id, once created or found.
    pub gpu_instance: Option<u32>,
    /// Compute instance id, once created or found.
    pub compute_instance: Option<u32>,
    /// The MIG device UUID, once it exists.
    pub mig_uuid: Option<String>,
    /// True when this claim's prepare created the instance (so its
    /// unprepare destroys it); false for a slice made ahead from the layout.
    pub created: bool,
}

/// One device of a claim. Written in the form of [`disk`], which also
/// carries the `kind` word every release wrote ("exclusive", "mig",
/// "shared"), derived from `mig` and `sharing` and checked against them when
/// read; how the device is used is [`super::AccessKind::of_device`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "disk::DeviceOnDisk", try_from = "disk::DeviceOnDisk")]
pub struct RecordDevice {
    /// The inventory name at prepare time, e.g. "gpu-0".
    pub device: String,
    /// The (parent) GPU's UUID, which survives renumbering across reboots.
    pub uuid: String,
    /// The slice, when the device is a MIG slice.
    pub mig: Option<MigSlice>,
    /// For a whole GPU whose MIG mode this claim switched off: switch it back
    /// on at unprepare.
    pub restore_mig_mode: bool,
    /// Request names the device satisfies.
    pub request_names: Vec<String>,
    /// The pool the device was allocated from.
    pub pool: String,
    /// The CDI ids returned to the kubelet; never change once returned.
    pub cdi_device_ids: Vec<String>,
    /// How the device is shared; absent: it is the claim's alone.
    pub sharing: Option<DeviceSharing>,
    /// Memory the scheduler counted for this allocation
    /// (DRAConsumableCapacity), in bytes.
    pub consumed_memory: Option<u64>,
    /// The allocation's share id (DRAConsumableCapacity), echoed to the kubelet.
    pub share_id: String,
}

impl RecordDevice {
    /// Whether the device uses a version-2 field.
    fn needs_version_2(&self) -> bool {
        self.sharing.is_some() || self.consumed_memory.is_some() || !self.share_id.is_empty()
    }
}

/// The durable record of one claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// Format version, [`RECORD_VERSION`].
    pub version: u32,
    /// The claim uid (validated before any record exists).
    pub uid: String,
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// Where the claim stands.
    pub phase: Phase,
    /// The boot id when the record was written.
    pub boot_id: String,
    /// The claim's devices, in request order.
    pub devices: Vec<RecordDevice>,
    /// The opaque configs the claim was prepared with, as received.
    pub configs: Vec<String>,
    /// The CDI spec file name (in the CDI dir).
    pub cdi_spec_file: String,
    /// Unix seconds of the prepare.
    pub prepared_at: i64,
    /// The claim's own over-share mode and grace (its `LimitsConfig`, as the
    /// node admitted it at prepare); absent: the node's `[limits]` apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ClaimLimits>,
}

impl ClaimRecord {
    /// The lowest format version that holds this record (see the module doc).
    pub fn format_version(&self) -> u32 {
        if self.devices.iter().any(RecordDevice::needs_version_2) {
            RECORD_VERSION
        } else {
            RECORD_VERSION_PLAIN
        }
    }
}

#[cfg(test)]
mod tests {
    use strum::VariantArray;

    use super::Phase;

    #[test]
    fn a_phase_prints_as_its_name_in_records() {
        for phase in Phase::VARIANTS {
            assert_eq!(
                serde_json::to_string(phase).unwrap(),
                format!("\"{phase}\"")
            );
        }
    }
}
