//! Records and held claims for this module's tests (test builds only).

use std::collections::BTreeMap;

use crate::state::{ClaimRecord, DeviceSharing, MigSlice, MpsSharing, Phase, RecordDevice};

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
            interval: crate::sharing::TimeSliceInterval::Default,
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
