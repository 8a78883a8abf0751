//! The upgrade fixtures (`tests/fixtures/upgrade/<release>/`, what an
//! earlier release left on disk) read by today's loaders, and written back
//! by today's writers byte for byte: a field renamed, reordered or newly
//! written fails here, without starting a daemon. The end-to-end half
//! (`tests/e2e/upgrade_fixtures.rs`) has the real gpusliced adopt them.

use std::path::{Path, PathBuf};

use crate::activity::persist::{self, Persister};
use crate::gpu::sim::{SimBackend, SimModel};
use crate::gpu::{ComputeMode, GpuBackend};
use crate::health::HealthStore;
use crate::state::Store;
use crate::testkit::SimNodeBuilder;

/// The fixture of the first release.
fn v0(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/upgrade/v0")
        .join(rel)
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A state dir holding copies of the fixture's `files` (under `state/`).
fn state_with(files: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for file in files {
        let to = dir.path().join(file);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(v0(&format!("state/{file}")), to).unwrap();
    }
    dir
}

/// The boot the fixture was made in.
fn boot_id() -> String {
    let hardware: serde_json::Value = serde_json::from_slice(&read(&v0("sim-hardware.json")))
        .expect("the fixture's hardware file");
    hardware["boot_id"].as_str().unwrap().to_owned()
}

#[test]
fn v0_records_load_and_are_written_back_byte_for_byte() {
    let names: Vec<String> = std::fs::read_dir(v0("state/claims"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let files: Vec<String> = names.iter().map(|n| format!("claims/{n}")).collect();
    let dir = state_with(&files.iter().map(String::as_str).collect::<Vec<_>>());
    let loaded = Store::open(dir.path()).unwrap().load_all().unwrap();
    assert!(loaded.unreadable.is_empty(), "{:?}", loaded.unreadable);
    assert_eq!(loaded.records.len(), 8);
    let out = tempfile::tempdir().unwrap();
    let store = Store::open(out.path()).unwrap();
    for record in &loaded.records {
        store.save(record).unwrap();
        let name = format!("claims/{}.json", record.uid);
        assert_eq!(
            String::from_utf8(read(&out.path().join(&name))).unwrap(),
            String::from_utf8(read(&v0(&format!("state/{name}")))).unwrap(),
            "{name} written back"
        );
    }
}

#[test]
fn v0_mig_ledger_loads_and_is_written_back_byte_for_byte() {
    let mut node = SimNodeBuilder::h100s(5).engine_only().start();
    node.restart_with(|node| {
        let ledger = node.state_dir().join("mig-ahead.json");
        std::fs::copy(v0("state/mig-ahead.json"), ledger).unwrap();
    });
    let engine = node.engine();
    engine.reconcile().unwrap();
    let made = engine.kinds.mig.made_ahead(&engine.cx());
    assert_eq!(made.len(), 2, "both slices made ahead");
    assert_eq!(
        serde_json::to_vec_pretty(&made).unwrap(),
        read(&v0("state/mig-ahead.json")),
        "the ledger as save_ledger writes it"
    );
}

#[test]
fn v0_health_loads_in_its_boot_and_is_written_back_byte_for_byte() {
    let dir = state_with(&["health.json"]);
    let table = HealthStore::new(dir.path(), &boot_id()).load().unwrap();
    let out = tempfile::tempdir().unwrap();
    HealthStore::new(out.path(), &boot_id())
        .save(&table)
        .unwrap();
    assert_eq!(
        String::from_utf8(read(&out.path().join("health.json"))).unwrap(),
        String::from_utf8(read(&v0("state/health.json"))).unwrap(),
    );
    let later = HealthStore::new(dir.path(), "a-later-boot").load().unwrap();
    assert_ne!(table, later, "faults are kept in their boot only");
}

#[test]
fn v0_activity_loads_its_open_episodes_and_is_written_back_byte_for_byte() {
    let dir = state_with(&["activity.json"]);
    let saved = persist::load(dir.path());
    assert_eq!(
        saved.episodes.len(),
        2,
        "the over-share and the unclaimed process"
    );
    assert_eq!(saved.last_active.len(), 1);
    let out = tempfile::tempdir().unwrap();
    let mut persister = Persister::new(out.path(), persist::Saved::default());
    let wrote = persister
        .save(0, &saved.last_active, &saved.episodes, true)
        .unwrap();
    assert!(wrote);
    assert_eq!(
        String::from_utf8(read(&out.path().join(persist::FILE_NAME))).unwrap(),
        String::from_utf8(read(&v0("state/activity.json"))).unwrap(),
    );
}

#[test]
fn v0_sim_hardware_loads_in_its_boot_with_every_instance() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim-hardware.json");
    std::fs::copy(v0("sim-hardware.json"), &path).unwrap();
    let backend =
        SimBackend::open_at_boot(vec![SimModel::H100_80GB; 5], "fixture", &path, &boot_id())
            .unwrap();
    let instances = backend.gpu_instances(2).unwrap();
    assert_eq!(instances.len(), 4, "{instances:?}");
    assert!(instances.iter().all(|gi| gi.compute_instances.len() == 1));
    assert_eq!(
        backend.compute_mode(3).unwrap(),
        ComputeMode::ExclusiveProcess
    );
    assert_eq!(read(&path), read(&v0("sim-hardware.json")), "not rewritten");
}
