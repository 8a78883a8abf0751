//! What a refused prepare of a prepared claim says differs.

use std::collections::BTreeMap;

use super::{Difference, device_words, difference};
use crate::claims::tests::requests::{request, request_with};
use crate::opaque::TimeSliceInterval;
use crate::state::{ClaimRecord, DeviceSharing, MpsSharing, Phase, RecordDevice};

const A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const GIB: u64 = 1 << 30;

/// A prepared record of `uid` holding `devices`, without configs.
fn record(uid: &str, devices: Vec<RecordDevice>) -> ClaimRecord {
    ClaimRecord {
        version: 2,
        uid: uid.to_owned(),
        namespace: "ns".to_owned(),
        name: "claim".to_owned(),
        phase: Phase::Prepared,
        boot_id: "b1".to_owned(),
        devices,
        configs: Vec::new(),
        cdi_spec_file: String::new(),
        prepared_at: 1_000,
        limits: None,
    }
}

/// Device `name` of GPU `uuid`, shared as `sharing` (`None`: the claim's).
fn device(name: &str, uuid: &str, sharing: Option<DeviceSharing>) -> RecordDevice {
    RecordDevice {
        device: name.to_owned(),
        uuid: uuid.to_owned(),
        mig: None,
        restore_mig_mode: false,
        request_names: vec!["gpu".to_owned()],
        pool: "node".to_owned(),
        sharing,
        ..RecordDevice::default()
    }
}

fn whole(name: &str, uuid: &str) -> RecordDevice {
    device(name, uuid, None)
}

fn timeslicing(interval: TimeSliceInterval) -> Option<DeviceSharing> {
    Some(DeviceSharing::TimeSlicing { interval })
}

fn mps_sharing(device: &str, atp: Option<u8>, share: Option<u64>) -> Option<DeviceSharing> {
    Some(DeviceSharing::Mps(MpsSharing {
        devices: vec![device.to_owned()],
        active_thread_percentage: atp,
        pinned_memory_limits: BTreeMap::new(),
        memory_share: share,
    }))
}

fn differs(prepared: &str, asked: &str) -> Option<Difference> {
    Some(Difference {
        prepared: prepared.to_owned(),
        asked: asked.to_owned(),
    })
}

#[test]
fn the_same_devices_and_configs_are_the_claim_again() {
    let held = record(A, vec![whole("gpu-0", "GPU-0"), whole("gpu-1", "GPU-1")]);
    let again = request(A, &["gpu-1", "gpu-0"]);
    assert_eq!(difference(&held, &again, &[None, None]), None, "any order");
}

#[test]
fn other_devices_are_listed_both_ways_with_their_sharing() {
    let held = record(A, vec![whole("gpu-0", "GPU-0")]);
    assert_eq!(
        difference(&held, &request(A, &["gpu-1"]), &[None]),
        differs("devices [gpu-0]", "devices [gpu-1]")
    );
    let ts = timeslicing(TimeSliceInterval::Default);
    let mut shared = record(A, vec![device("gpu-3", "GPU-3", ts)]);
    shared.configs = vec!["{}".to_owned()];
    let asked = request(A, &["gpu-3", "gpu-4"]);
    assert_eq!(
        difference(&shared, &asked, &[None, None]),
        differs(
            "devices [gpu-3 time-sliced (interval Default)]",
            "devices [gpu-3, gpu-4]"
        )
    );
}

#[test]
fn other_sharing_on_the_same_device_names_both() {
    let ts = timeslicing(TimeSliceInterval::Long);
    let mut held = record(A, vec![device("gpu-3", "GPU-3", ts)]);
    held.configs = vec!["time-slicing Long".to_owned()];
    let asked = request_with(A, &["gpu-3"], &["MPS"]);
    assert_eq!(
        difference(&held, &asked, &[mps_sharing("gpu-3", Some(50), None)]),
        differs(
            "gpu-3 time-sliced (interval Long)",
            "gpu-3 shared by MPS (active threads 50%)"
        )
    );
    let whole_now = request(A, &["gpu-3"]);
    assert_eq!(
        difference(&held, &whole_now, &[None]),
        differs("gpu-3 time-sliced (interval Long)", "gpu-3")
    );
}

#[test]
fn only_the_devices_whose_sharing_differs_are_named() {
    let shared = device("gpu-0", "GPU-0", mps_sharing("gpu-0", None, None));
    let mut held = record(A, vec![shared, whole("gpu-1", "GPU-1")]);
    held.configs = vec!["a".to_owned()];
    let asked = request_with(A, &["gpu-0", "gpu-1"], &["b"]);
    let now = [mps_sharing("gpu-0", None, Some(20 * GIB)), None];
    assert_eq!(
        difference(&held, &asked, &now),
        differs(
            "gpu-0 shared by MPS",
            "gpu-0 shared by MPS (memory share 20.0 GiB)"
        )
    );
}

#[test]
fn configs_that_differ_in_text_only_are_shown() {
    let mut held = record(A, vec![whole("gpu-0", "GPU-0")]);
    held.configs = vec![r#"{"a": 1}"#.to_owned()];
    let asked = request_with(A, &["gpu-0"], &[r#"{"a":1}"#]);
    assert_eq!(
        difference(&held, &asked, &[None]),
        differs(
            r#"the opaque configs [{"a": 1}]"#,
            r#"the opaque configs [{"a":1}] (the same devices and sharing)"#
        )
    );
    let none = request(A, &["gpu-0"]);
    assert_eq!(
        difference(&held, &none, &[None]).map(|d| d.asked),
        Some("no opaque configs (the same devices and sharing)".to_owned())
    );
    let long = "x".repeat(500);
    let asked = request_with(A, &["gpu-0"], &[long.as_str()]);
    let shown = difference(&held, &asked, &[None]).unwrap().asked;
    assert!(
        shown.contains(&format!("[{}…]", "x".repeat(160))),
        "{shown}"
    );
}

#[test]
fn mps_words_carry_every_limit_given() {
    let mut sharing = mps_sharing("gpu-2", Some(40), Some(8 * GIB));
    if let Some(DeviceSharing::Mps(m)) = sharing.as_mut() {
        m.pinned_memory_limits.insert("gpu-2".to_owned(), 4 * GIB);
    }
    assert_eq!(
        device_words("gpu-2", sharing.as_ref()),
        "gpu-2 shared by MPS (active threads 40%, memory share 8.0 GiB, pinned memory limit 4.0 GiB)"
    );
    assert_eq!(
        device_words("gpu-0-mig-1g.10gb-0", None),
        "gpu-0-mig-1g.10gb-0"
    );
}
