use super::{StateError, Store};
use crate::state::{
    ClaimRecord, DeviceSharing, MpsSharing, Phase, RECORD_VERSION, RECORD_VERSION_PLAIN,
    RecordDevice,
};

fn record(uid: &str) -> ClaimRecord {
    ClaimRecord {
        version: RECORD_VERSION_PLAIN,
        uid: uid.to_owned(),
        namespace: "ns".to_owned(),
        name: "claim".to_owned(),
        phase: Phase::Prepared,
        boot_id: "boot".to_owned(),
        devices: vec![RecordDevice {
            mig: None,
            restore_mig_mode: false,
            device: "gpu-0".to_owned(),
            uuid: "GPU-1".to_owned(),
            request_names: vec!["gpu".to_owned()],
            pool: "node".to_owned(),
            cdi_device_ids: vec![format!("k8s.gpuslice.dev/claim={uid}-gpu-0")],
            ..RecordDevice::default()
        }],
        configs: vec![],
        cdi_spec_file: format!("k8s.gpuslice.dev-claim_{uid}.json"),
        prepared_at: 1,
        limits: None,
    }
}

const A: &str = "11111111-1111-4111-8111-111111111111";
const B: &str = "22222222-2222-4222-8222-222222222222";

#[test]
fn save_load_remove_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.save(&record(B)).unwrap();
    store.save(&record(A)).unwrap();
    let loaded = store.load_all().unwrap();
    assert_eq!(loaded.records, vec![record(A), record(B)]);
    assert!(store.remove(A).unwrap());
    assert!(!store.remove(A).unwrap());
    assert_eq!(store.load_all().unwrap().records, vec![record(B)]);
}

#[test]
fn records_are_private_files() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.save(&record(A)).unwrap();
    let meta = std::fs::metadata(store.dir().join(format!("{A}.json"))).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
}

#[test]
fn leftover_temp_files_are_removed_and_corrupt_records_set_aside() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.save(&record(A)).unwrap();
    let tmp = store.dir().join(format!(".{B}.json.tmp-1-1"));
    let bad = store.dir().join(format!("{B}.json"));
    let wrong_name = store
        .dir()
        .join("33333333-3333-4333-8333-333333333333.json");
    std::fs::copy(store.dir().join(format!("{A}.json")), &wrong_name).unwrap();
    for (path, text) in [(&tmp, "{"), (&bad, "{not json")] {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(path)
            .unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
            .unwrap();
    }
    let loaded = store.load_all().unwrap();
    assert_eq!(loaded.records, vec![record(A)]);
    assert_eq!(loaded.unreadable.len(), 2, "{:?}", loaded.unreadable);
    assert!(!tmp.exists());
    assert!(!bad.exists());
    assert!(store.dir().join(format!(".{B}.json.corrupt")).exists());
}

#[test]
fn a_record_from_a_newer_format_stops_loading() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let mut newer = record(A);
    newer.version = RECORD_VERSION + 1;
    store.save(&newer).unwrap();
    let err = store.load_all().unwrap_err();
    assert!(matches!(err, StateError::NewerVersion { found, .. } if found == RECORD_VERSION + 1));
    assert!(err.to_string().contains("newer"), "{err}");
}

#[test]
fn a_symlink_planted_at_a_record_name_is_set_aside_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    // A well-formed record outside the folder, linked in under A's name.
    Store::open(elsewhere.path())
        .unwrap()
        .save(&record(A))
        .unwrap();
    let store = Store::open(dir.path()).unwrap();
    let name = format!("{A}.json");
    let outside = elsewhere.path().join("claims").join(&name);
    let before = std::fs::read(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, store.dir().join(&name)).unwrap();
    let loaded = store.load_all().unwrap();
    assert!(loaded.records.is_empty(), "{:?}", loaded.records);
    assert_eq!(loaded.unreadable.len(), 1, "{:?}", loaded.unreadable);
    assert!(
        loaded.unreadable[0].contains("symbolic link"),
        "{:?}",
        loaded.unreadable
    );
    assert_eq!(
        std::fs::read(&outside).unwrap(),
        before,
        "the link's target is untouched"
    );
    assert!(!store.dir().join(&name).exists(), "the link is set aside");
}

#[test]
fn version_1_records_load_and_sharing_records_are_version_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    // A record exactly as the first release wrote it: no sharing fields.
    let v1 = format!(
        r#"{{"version":1,"uid":"{A}","namespace":"ns","name":"claim","phase":"prepared",
            "boot_id":"boot","devices":[{{"device":"gpu-0","uuid":"GPU-1","kind":"exclusive",
            "request_names":["gpu"],"pool":"node",
            "cdi_device_ids":["k8s.gpuslice.dev/claim={A}-gpu-0"]}}],"configs":[],
            "cdi_spec_file":"k8s.gpuslice.dev-claim_{A}.json","prepared_at":1}}"#
    );
    gpuslice_cdi::write_atomic(store.dir(), &format!("{A}.json"), v1.as_bytes(), 0o600).unwrap();
    let loaded = store.load_all().unwrap().records;
    assert_eq!(loaded, vec![record(A)]);
    assert_eq!(loaded[0].format_version(), RECORD_VERSION_PLAIN);
    let mut shared = record(B);
    shared.devices[0].sharing = Some(DeviceSharing::Mps(MpsSharing {
        devices: vec!["gpu-0".to_owned()],
        active_thread_percentage: Some(50),
        pinned_memory_limits: std::collections::BTreeMap::new(),
        memory_share: Some(1 << 30),
    }));
    shared.version = shared.format_version();
    assert_eq!(shared.version, RECORD_VERSION);
    store.save(&shared).unwrap();
    let text = std::fs::read_to_string(store.dir().join(format!("{B}.json"))).unwrap();
    assert!(text.contains("\"mode\": \"mps\""), "{text}");
    assert!(text.contains("\"kind\": \"shared\""), "{text}");
    assert_eq!(store.load_all().unwrap().records[1], shared);
}
