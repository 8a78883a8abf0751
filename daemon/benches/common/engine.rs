//! The in-process benches' node: a claim engine on `gpus` simulated H100s
//! over a fake host root (common/fake_root.rs), its records and CDI
//! folders on the disk being measured, and the request for one exclusive
//! claim on one GPU.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::fake_root::DRIVER_VERSION;
use gpuslice::claims::{DeviceRequest, Engine, EngineSettings, PrepareRequest};
use gpuslice::driver::{DriverFiles, Roots};
use gpuslice::gpu::GpuBackend;
use gpuslice::gpu::sim::{SimBackend, SimModel};
use gpuslice::inventory::Inventory;
use gpuslice::state::Store;

/// The folders of one engine.
pub struct Fixture {
    pub root: PathBuf,
    pub cdi_dir: PathBuf,
    pub state_dir: PathBuf,
}

impl Fixture {
    /// `root`, `cdi` and `state` under `dir`.
    pub fn under(dir: &Path) -> Self {
        Self {
            root: dir.join("root"),
            cdi_dir: dir.join("cdi"),
            state_dir: dir.join("state"),
        }
    }
}

/// An engine on `gpus` simulated H100s, reconciled on an empty state.
pub fn engine(fx: &Fixture, gpus: usize) -> Engine {
    let backend: Arc<dyn GpuBackend> =
        Arc::new(SimBackend::new(vec![SimModel::H100_80GB; gpus], "bench"));
    let inventory = Inventory::from_backend(
        backend.as_ref(),
        &gpuslice::config::MigConfig::default(),
        &|_, _| gpuslice::mig::Ownership::Foreign,
    )
    .expect("sim inventory");
    let roots = Roots {
        driver_root: &fx.root,
        dev_root: &fx.root,
    };
    let engine = Engine::new(
        backend,
        inventory,
        DriverFiles::discover(roots, DRIVER_VERSION),
        Store::open(&fx.state_dir).expect("cannot open the records folder"),
        EngineSettings {
            cdi_dir: fx.cdi_dir.clone(),
            dev_root: fx.root.clone(),
            cdi_hook: None,
            boot_id: "bench-boot".to_owned(),
        },
    );
    engine.reconcile().expect("reconcile of an empty state");
    engine
}

/// An exclusive claim `uid` on `gpu-<gpu>`.
pub fn request(uid: String, gpu: usize) -> PrepareRequest {
    PrepareRequest {
        uid,
        namespace: "bench".to_owned(),
        name: "claim".to_owned(),
        devices: vec![DeviceRequest {
            device: format!("gpu-{gpu}"),
            request_names: vec!["gpu".to_owned()],
            pool: "node".to_owned(),
            consumed_memory: None,
            share_id: String::new(),
        }],
        configs: vec![],
    }
}
