//! Records and held claims for this module's tests (test builds only).

use std::collections::BTreeMap;

use crate::activity::held::{HeldClaim, HeldDevice};
use crate::activity::snapshot::DeviceActivity;
use crate::state::{
    AccessKind, ClaimRecord, DeviceSharing, MigSlice, MpsSharing, Phase, RecordDevice,
};

pub const A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
pub const B: &str = "bbbbbbbb-0000-4000-8000-000000000002";
pub const C: &str = "cccccccc-0000-4000-8000-000000000003";

pub const GIB: u64 = 1 << 30;

/// A prepared record of `uid` holding `devices`.
pub fn record(uid: &str, devices: Vec<RecordDevice>) -> ClaimRecord {
    ClaimRecord {
        version: 2,
        uid: uid.to_owned(),
        namespace: "ns".to_owned(),
        name: format!("claim-{}", &uid[..4]),
        phase: Phase::Prepared,
        boot_id: "b1".to_owned(),
        devices,
        configs: Vec::new(),
        cdi_spec_file: String::new(),
        prepared_at: 1_000,
        limits: None,
    }
}

/// Whole GPU `name` with `uuid`, the claim's alone.
pub fn whole(name: &str, uuid: &str) -> RecordDevice {
    RecordDevice {
        device: name.to_owned(),
        uuid: uuid.to_owned(),
        request_names: vec!["r".to_owned()],
        pool: "node".to_owned(),
        ..RecordDevice::default()
    }
}

/// Whole GPU shared by time-slicing.
pub fn timesliced(name: &str, uuid: &str) -> RecordDevice {
    RecordDevice {
        sharing: Some(DeviceSharing::TimeSlicing {
            interval: crate::opaque::TimeSliceInterval::Default,
        }),
        ..whole(name, uuid)
    }
}

/// Whole GPU shared by MPS, with an optional memory share and pinned limit.
pub fn mps(name: &str, uuid: &str, share: Option<u64>, pinned: Option<u64>) -> RecordDevice {
    RecordDevice {
        sharing: Some(DeviceSharing::Mps(MpsSharing {
            devices: vec![name.to_owned()],
            active_thread_percentage: None,
            pinned_memory_limits: pinned
                .map(|p| BTreeMap::from([(name.to_owned(), p)]))
                .unwrap_or_default(),
            memory_share: share,
        })),
        ..whole(name, uuid)
    }
}

/// MIG slice `name` of the GPU `uuid`, GPU instance `gi`.
pub fn slice(name: &str, uuid: &str, gi: u32) -> RecordDevice {
    RecordDevice {
        mig: Some(MigSlice {
            profile: "3g.40gb".to_owned(),
            profile_id: 9,
            start: 0,
            size: 4,
            gpu_instance: Some(gi),
            compute_instance: Some(0),
            mig_uuid: Some(format!("MIG-{gi}")),
            created: true,
        }),
        ..whole(name, uuid)
    }
}

/// Held whole GPU `index` ("gpu-<index>", UUID "GPU-<index>", 80 GiB), used
/// as `sharing` with the claim's memory `share`.
pub fn held_gpu(index: u32, sharing: AccessKind, share: Option<u64>) -> HeldDevice {
    HeldDevice {
        device: format!("gpu-{index}"),
        gpu: format!("gpu-{index}"),
        gpu_index: Some(index),
        uuid: format!("GPU-{index}"),
        gpu_instance: None,
        sharing,
        memory_share: share,
        memory_total: 80 * GIB,
        pool: "node".to_owned(),
        share_id: String::new(),
    }
}

/// Held claim `uid` (`ns/c-<first letter>`, prepared at 1000) of `kind`
/// holding `devices`.
pub fn held_claim(uid: &str, kind: AccessKind, devices: Vec<HeldDevice>) -> HeldClaim {
    HeldClaim {
        uid: uid.to_owned(),
        namespace: "ns".to_owned(),
        name: format!("c-{}", &uid[..1]),
        kind,
        prepared_at: 1_000,
        devices,
        limits: None,
    }
}

/// Held claim `uid` of `kind` holding only whole GPU `index`, used the same
/// way, with memory `share`.
pub fn holding(uid: &str, index: u32, kind: AccessKind, share: Option<u64>) -> HeldClaim {
    held_claim(uid, kind, vec![held_gpu(index, kind, share)])
}

/// A sampled whole GPU `name` (UUID "GPU-<name>", 80 GiB) used as `sharing`,
/// the claim's processes using `used` bytes of its memory `share`; no
/// process listed, no SM figure, no summary.
pub fn device_activity(
    name: &str,
    sharing: AccessKind,
    used: u64,
    share: Option<u64>,
) -> DeviceActivity {
    DeviceActivity {
        device: name.to_owned(),
        gpu: name.to_owned(),
        uuid: format!("GPU-{name}"),
        sharing,
        memory_used: used,
        memory_share: share,
        memory_total: 80 * GIB,
        device_memory_used: None,
        sm_percent: None,
        processes: Vec::new(),
        pool: String::new(),
        share_id: String::new(),
        summary: None,
    }
}
