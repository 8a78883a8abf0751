//! The claim engine's tests on the simulated backend, in temp folders.
//!
//! This module owns the engine-wide tests and their fixtures: the request
//! builder ([`requests`]), the inventory generation ([`generation`]),
//! device health ([`health`]), reloads among claims in flight ([`reload`]),
//! and the prepare/unprepare basics (this file). Tests of one kind of access
//! live in its own module (`mig/tests.rs`, `sharing/tests.rs`). Nothing here
//! is built outside `cargo test`.

mod generation;
mod health;
mod reload;
pub(crate) mod requests;
mod upgrade_fixture;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gpuslice_cdi::atomic::write_atomic;

use super::{ClaimError, Engine, EngineSettings, Prepared, Unprepared};
use crate::config::MigConfig;
use crate::driver::{DriverFiles, Roots};
use crate::gpu::GpuBackend;
use crate::gpu::sim::{SimBackend, SimModel};
use crate::inventory::Inventory;
use crate::state::{Phase, Store};
use requests::request as req;

/// An engine on `backend` with `mig`'s inventory, its state and CDI folders
/// in `dir`, the stand-in driver tree, boot `b1`; reconciled, as start-up
/// leaves it. Every MIG instance found counts as foreign.
pub(crate) fn sim_engine(dir: &Path, backend: Arc<dyn GpuBackend>, mig: &MigConfig) -> Engine {
    let inventory = Inventory::from_backend(backend.as_ref(), mig, &|_, _| {
        crate::mig::Ownership::Foreign
    })
    .unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root");
    let roots = Roots {
        driver_root: &root,
        dev_root: &root,
    };
    let engine = Engine::new(
        backend,
        inventory,
        DriverFiles::discover(roots, "580.95.05"),
        Store::open(&dir.join("state")).unwrap(),
        EngineSettings {
            cdi_dir: dir.join("cdi"),
            dev_root: root.clone(),
            cdi_hook: None,
            boot_id: "b1".to_owned(),
        },
    );
    engine.reconcile().unwrap();
    engine
}

pub(crate) fn sim_backend(gpus: u32) -> Arc<dyn GpuBackend> {
    Arc::new(SimBackend::new(
        vec![SimModel::H100_80GB; usize::try_from(gpus).unwrap()],
        "test",
    ))
}

pub(crate) fn fixture_inventory(gpus: u32) -> Inventory {
    Inventory::from_backend(
        sim_backend(gpus).as_ref(),
        &MigConfig::default(),
        &|_, _| crate::mig::Ownership::Foreign,
    )
    .unwrap()
}

const A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const B: &str = "bbbbbbbb-0000-4000-8000-000000000002";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    cdi_dir: PathBuf,
    state_dir: PathBuf,
}

impl Fixture {
    fn new(gpus: u32) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("dev")).unwrap();
        for node in (0..gpus)
            .map(|i| format!("nvidia{i}"))
            .chain(["nvidiactl".into()])
        {
            symlink("/dev/null", root.join("dev").join(node)).unwrap();
        }
        Self {
            cdi_dir: dir.path().join("cdi"),
            state_dir: dir.path().join("state"),
            root,
            _dir: dir,
        }
    }

    fn engine(&self, gpus: u32, boot_id: &str) -> Engine {
        let backend = sim_backend(gpus);
        let inventory =
            Inventory::from_backend(backend.as_ref(), &MigConfig::default(), &|_, _| {
                crate::mig::Ownership::Foreign
            })
            .unwrap();
        let roots = Roots {
            driver_root: &self.root,
            dev_root: &self.root,
        };
        let engine = Engine::new(
            backend,
            inventory,
            DriverFiles::discover(roots, "580.95.05"),
            Store::open(&self.state_dir).unwrap(),
            EngineSettings {
                cdi_dir: self.cdi_dir.clone(),
                dev_root: self.root.clone(),
                cdi_hook: None,
                boot_id: boot_id.to_owned(),
            },
        );
        engine.reconcile().unwrap();
        engine
    }

    fn spec_path(&self, uid: &str) -> PathBuf {
        self.cdi_dir
            .join(format!("k8s.gpuslice.dev-claim_{uid}.json"))
    }

    fn record_path(&self, uid: &str) -> PathBuf {
        self.state_dir.join("claims").join(format!("{uid}.json"))
    }
}

fn ids(p: &Prepared) -> Vec<String> {
    p.record()
        .devices
        .iter()
        .flat_map(|d| d.cdi_device_ids.clone())
        .collect()
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn sim_prepare_writes_spec_and_record() {
    let fx = Fixture::new(2);
    let engine = fx.engine(2, "boot-1");
    let prepared = engine.prepare(&req(A, &["gpu-1"])).unwrap();
    assert!(matches!(prepared, Prepared::Created(_)));
    assert_eq!(
        ids(&prepared),
        vec![format!("k8s.gpuslice.dev/claim={A}-gpu-1")]
    );
    let spec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fx.spec_path(A)).unwrap()).unwrap();
    assert_eq!(spec["devices"][0]["name"], format!("{A}-gpu-1"));
    assert_eq!(
        spec["devices"][0]["containerEdits"]["deviceNodes"][0]["path"],
        "/dev/nvidia1"
    );
    assert!(fx.record_path(A).exists());
}

#[test]
fn sim_prepare_twice_returns_the_same_ids() {
    let fx = Fixture::new(2);
    let engine = fx.engine(2, "boot-1");
    let first = engine.prepare(&req(A, &["gpu-0", "gpu-1"])).unwrap();
    let again = engine.prepare(&req(A, &["gpu-1", "gpu-0"])).unwrap();
    assert!(matches!(again, Prepared::AlreadyPrepared(_)));
    assert_eq!(ids(&first), ids(&again));
}

#[test]
fn sim_reprepare_rewrites_a_deleted_spec() {
    let fx = Fixture::new(1);
    let engine = fx.engine(1, "boot-1");
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    std::fs::remove_file(fx.spec_path(A)).unwrap();
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    assert!(fx.spec_path(A).exists());
}

#[test]
fn sim_a_held_gpu_is_refused_naming_the_holder() {
    let fx = Fixture::new(2);
    let engine = fx.engine(2, "boot-1");
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    let err = engine.prepare(&req(B, &["gpu-1", "gpu-0"])).unwrap_err();
    assert!(
        matches!(&err, ClaimError::DeviceHeld { holder, .. } if holder == A),
        "{err}"
    );
    // Nothing of B is left: its other GPU is free, no spec, no record.
    assert!(!fx.spec_path(B).exists());
    assert!(!fx.record_path(B).exists());
    engine.prepare(&req(B, &["gpu-1"])).unwrap();
}

#[test]
fn sim_same_claim_with_other_devices_is_refused() {
    let fx = Fixture::new(2);
    let engine = fx.engine(2, "boot-1");
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    let err = engine.prepare(&req(A, &["gpu-1"])).unwrap_err();
    assert!(
        matches!(err, ClaimError::PreparedDifferently { .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "claim {A} is already prepared with devices [gpu-0], and this prepare asks for \
             devices [gpu-1]; a prepared claim cannot change: unprepare it first, or use a new \
             claim uid"
        )
    );
}

#[test]
fn sim_unprepare_frees_everything_and_is_idempotent() {
    let fx = Fixture::new(1);
    let engine = fx.engine(1, "boot-1");
    engine.prepare(&req(A, &["gpu-0"])).unwrap();
    assert_eq!(engine.unprepare(A).unwrap(), Unprepared::Removed);
    assert_eq!(engine.unprepare(A).unwrap(), Unprepared::NotPresent);
    assert!(!fx.spec_path(A).exists());
    assert!(!fx.record_path(A).exists());
    engine.prepare(&req(B, &["gpu-0"])).unwrap();
}

#[test]
fn sim_unprepare_of_an_unknown_claim_succeeds() {
    let fx = Fixture::new(1);
    let engine = fx.engine(1, "boot-1");
    assert_eq!(engine.unprepare(B).unwrap(), Unprepared::NotPresent);
    assert!(matches!(
        engine.unprepare("x/../y"),
        Err(ClaimError::InvalidUid { .. })
    ));
}

#[test]
fn sim_a_missing_device_node_fails_cleanly() {
    let fx = Fixture::new(1);
    let engine = fx.engine(2, "boot-1");
    let err = engine.prepare(&req(A, &["gpu-1"])).unwrap_err();
    assert!(matches!(err, ClaimError::DeviceNodeMissing { .. }), "{err}");
    assert!(!fx.spec_path(A).exists());
    assert!(!fx.record_path(A).exists());
    engine.prepare(&req(B, &["gpu-1"])).unwrap_err();
    engine.prepare(&req(B, &["gpu-0"])).unwrap();
}

#[test]
fn sim_restart_keeps_claims_and_ids() {
    let fx = Fixture::new(2);
    let first = fx.engine(2, "boot-1").prepare(&req(A, &["gpu-1"])).unwrap();
    let engine = fx.engine(2, "boot-1");
    assert_eq!(engine.claims().len(), 1);
    let again = engine.prepare(&req(A, &["gpu-1"])).unwrap();
    assert_eq!(ids(&first), ids(&again));
    let err = engine.prepare(&req(B, &["gpu-1"])).unwrap_err();
    assert!(matches!(err, ClaimError::DeviceHeld { .. }));
}

#[test]
fn sim_reboot_rewrites_wiped_specs_and_restamps_records() {
    let fx = Fixture::new(1);
    fx.engine(1, "boot-1").prepare(&req(A, &["gpu-0"])).unwrap();
    std::fs::remove_dir_all(&fx.cdi_dir).unwrap();
    let engine = fx.engine(1, "boot-2");
    assert!(fx.spec_path(A).exists());
    assert_eq!(engine.claims()[0].boot_id, "boot-2");
}

#[test]
fn sim_reconcile_removes_stray_specs_and_rolls_back_half_prepares() {
    let fx = Fixture::new(2);
    {
        let engine = fx.engine(2, "boot-1");
        engine.prepare(&req(A, &["gpu-0"])).unwrap();
        engine.prepare(&req(B, &["gpu-1"])).unwrap();
    }
    // A spec whose record never got written, and a record cut off mid-prepare.
    std::fs::remove_file(fx.record_path(A)).unwrap();
    let store = Store::open(&fx.state_dir).unwrap();
    let mut half = store.load_all().unwrap().records.remove(0);
    half.phase = Phase::Preparing;
    store.save(&half).unwrap();
    let plant = |name: &str, bytes: &[u8]| write_atomic(&fx.cdi_dir, name, bytes, 0o644).unwrap();
    plant(".k8s.gpuslice.dev-claim_x.json.tmp-1-1", b"{");
    plant("other-vendor.json", b"{}");
    let engine = fx.engine(2, "boot-1");
    assert!(engine.claims().is_empty());
    assert_eq!(dir_names(&fx.cdi_dir), vec!["other-vendor.json"]);
    assert!(dir_names(&fx.state_dir.join("claims")).is_empty());
}

#[test]
fn sim_a_vanished_gpu_is_a_problem_not_a_crash() {
    let fx = Fixture::new(2);
    fx.engine(2, "boot-1").prepare(&req(A, &["gpu-1"])).unwrap();
    std::fs::remove_dir_all(&fx.cdi_dir).unwrap();
    let engine = fx.engine(1, "boot-1");
    assert_eq!(engine.claims().len(), 1);
    let problems = engine.problems().join("\n");
    assert!(problems.contains("no longer on this node"), "{problems}");
    assert_eq!(engine.unprepare(A).unwrap(), Unprepared::Removed);
}

#[test]
fn sim_concurrent_prepares_of_one_gpu_give_it_to_one_claim() {
    let fx = Fixture::new(1);
    let engine = Arc::new(fx.engine(1, "boot-1"));
    let uids: Vec<String> = (0..16)
        .map(|i| format!("cccccccc-0000-4000-8000-{i:012}"))
        .collect();
    let threads: Vec<_> = uids
        .iter()
        .cloned()
        .map(|uid| {
            let engine = engine.clone();
            std::thread::spawn(move || engine.prepare(&req(&uid, &["gpu-0"])).is_ok())
        })
        .collect();
    let won = threads
        .into_iter()
        .map(|t| t.join().unwrap())
        .filter(|ok| *ok)
        .count();
    assert_eq!(won, 1);
    assert_eq!(dir_names(&fx.cdi_dir).len(), 1);
}
