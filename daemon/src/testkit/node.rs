//! [`SimNodeBuilder`] and the [`SimNode`] it starts: a claim engine on
//! simulated GPUs in a temp folder (`sim-hardware.json`, `state/`, `cdi/`,
//! `run/mps/`, and `root/` for a real-size driver root), built and started
//! as gpusliced builds and starts its own ([`Engine::start_up`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tempfile::TempDir;

use super::root::{real_size_root, sim_root};
use crate::claims::compute_policy::FakeNvidiaSmi;
use crate::claims::mps_daemon::{FakeMps, MpsManager, MpsSettings, NoShmMount};
use crate::claims::{Engine, EngineSettings, SharingTools};
use crate::config::{LimitsConfig, MigConfig};
use crate::driver::{DriverFiles, Roots};
use crate::gpu::sim::{SimBackend, SimModel};
use crate::gpu::{ComputeMode, GpuBackend, MigMode};
use crate::inventory::Inventory;
use crate::state::Store;

/// Upper bound for an MPS daemon to answer (the fakes answer at once).
const READY_BOUND: Duration = Duration::from_secs(30);

/// How a simulated node is made; [`SimNodeBuilder::start`] makes it.
#[derive(Debug, Clone)]
pub struct SimNodeBuilder {
    models: Vec<SimModel>,
    seed: String,
    mig: MigConfig,
    boot: String,
    fakes: bool,
    base: Option<PathBuf>,
    real_size_root: bool,
    hardware_file: bool,
    foreign: Vec<(u32, String, usize)>,
    start_up: bool,
    limits: LimitsConfig,
}

impl SimNodeBuilder {
    /// `n` H100 80GB.
    pub fn h100s(n: usize) -> Self {
        Self::models(&vec![SimModel::H100_80GB; n])
    }

    /// These models, by index; no MIG, no sharing tools, boot `boot`.
    pub fn models(models: &[SimModel]) -> Self {
        Self {
            models: models.to_vec(),
            seed: "test".to_owned(),
            mig: MigConfig::default(),
            boot: "boot".to_owned(),
            fakes: false,
            base: None,
            real_size_root: false,
            hardware_file: true,
            foreign: Vec::new(),
            start_up: true,
            limits: LimitsConfig::default(),
        }
    }

    /// The simulator's node seed (default "test"): it makes the GPUs'
    /// UUIDs, serials and PCI addresses.
    #[must_use]
    pub fn seed(mut self, seed: &str) -> Self {
        seed.clone_into(&mut self.seed);
        self
    }

    /// The `[mig]` config (inventory and MIG set-up).
    #[must_use]
    pub fn mig(mut self, mig: MigConfig) -> Self {
        self.mig = mig;
        self
    }

    /// The `[limits]` config (whether claims may set their own limits).
    #[must_use]
    pub fn limits(mut self, limits: LimitsConfig) -> Self {
        self.limits = limits;
        self
    }

    /// The boot id of the node (records and simulated hardware carry it).
    #[must_use]
    pub fn boot(mut self, boot: &str) -> Self {
        boot.clone_into(&mut self.boot);
        self
    }

    /// MPS and time-slicing through [`FakeMps`] and [`FakeNvidiaSmi`].
    #[must_use]
    pub fn fake_tools(mut self) -> Self {
        self.fakes = true;
        self
    }

    /// The node's folder goes under `base` (default: the temp dir).
    #[must_use]
    pub fn in_dir(mut self, base: &Path) -> Self {
        self.base = Some(base.to_path_buf());
        self
    }

    /// The node's folder goes on /dev/shm where there is one: for tests
    /// whose cases wait on the engine's fsyncs and are not about disks.
    #[must_use]
    pub fn on_tmpfs(mut self) -> Self {
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            self.base = Some(shm.to_path_buf());
        }
        self
    }

    /// A real-size driver root in the node's folder (see [`super::root`])
    /// instead of `examples/sim-root`: CDI specs of a real node's size.
    #[must_use]
    pub fn real_size_root(mut self) -> Self {
        self.real_size_root = true;
        self
    }

    /// The simulated hardware lives in memory only (no `sim-hardware.json`
    /// written on each MIG change); [`SimNode::restart`] keeps it,
    /// [`SimNode::reboot`] is then refused.
    #[must_use]
    pub fn hardware_in_memory(mut self) -> Self {
        self.hardware_file = false;
        self
    }

    /// A MIG instance (and its compute instance) of `profile` at its
    /// `pick`-th placement on GPU `gpu`, made behind gpusliced's back
    /// before it starts.
    #[must_use]
    pub fn foreign_instance(mut self, gpu: u32, profile: &str, pick: usize) -> Self {
        self.foreign.push((gpu, profile.to_owned(), pick));
        self
    }

    /// The engine is built but not started (no reconcile, MIG set-up or
    /// sharing restore): for tests that drive [`Engine::start_up`] or its
    /// steps themselves.
    #[must_use]
    pub fn engine_only(mut self) -> Self {
        self.start_up = false;
        self
    }

    /// Makes the node and starts its engine.
    pub fn start(self) -> SimNode {
        let dir = match &self.base {
            Some(base) => tempfile::Builder::new()
                .prefix("gpuslice-node-")
                .tempdir_in(base),
            None => tempfile::Builder::new().prefix("gpuslice-node-").tempdir(),
        }
        .expect("a temp folder for the node");
        let sim = Arc::new(self.open_sim(dir.path()));
        for (gpu, profile, pick) in &self.foreign {
            make_foreign(sim.as_ref(), *gpu, profile, *pick);
        }
        let root = if self.real_size_root {
            let root = dir.path().join("root");
            real_size_root(&root, self.models.len());
            root
        } else {
            sim_root()
        };
        std::fs::create_dir_all(dir.path().join("cdi")).expect("the CDI folder");
        let (mps, smi) = if self.fakes {
            (
                Some(Arc::new(FakeMps::default())),
                Some(Arc::new(FakeNvidiaSmi::default())),
            )
        } else {
            (None, None)
        };
        let mut node = SimNode {
            dir,
            sim,
            mps,
            smi,
            root,
            plan: self,
            engine: None,
        };
        node.engine = Some(Arc::new(node.build_engine()));
        node
    }

    fn open_sim(&self, dir: &Path) -> SimBackend {
        if self.hardware_file {
            SimBackend::open_at_boot(
                self.models.clone(),
                &self.seed,
                &dir.join("sim-hardware.json"),
                &self.boot,
            )
            .expect("the simulated hardware")
        } else {
            SimBackend::new(self.models.clone(), &self.seed)
        }
    }
}

/// A simulated node with its engine running. Dropping it unprepares every
/// claim still prepared when it has sharing tools, so nothing a claim set up
/// outlives a test that failed.
#[derive(Debug)]
pub struct SimNode {
    /// The node's folder.
    pub dir: TempDir,
    /// The simulated GPUs (to start fake processes, inject faults, count calls).
    pub sim: Arc<SimBackend>,
    /// The fake MPS control daemons, with [`SimNodeBuilder::fake_tools`].
    pub mps: Option<Arc<FakeMps>>,
    /// The fake nvidia-smi, with [`SimNodeBuilder::fake_tools`].
    pub smi: Option<Arc<FakeNvidiaSmi>>,
    root: PathBuf,
    plan: SimNodeBuilder,
    engine: Option<Arc<Engine>>,
}

impl SimNode {
    /// The engine.
    pub fn engine(&self) -> &Arc<Engine> {
        self.engine.as_ref().expect("the node's engine")
    }

    /// A new engine on the same folder, hardware and fakes, as after a
    /// restart of gpusliced (the old one is dropped without an unprepare).
    pub fn restart(&mut self) {
        self.restart_with(|_| {});
    }

    /// As [`SimNode::restart`], with `change` run while gpusliced is down
    /// (the old engine gone, the new one not built): what a crash left or
    /// someone did meanwhile. It may change the hardware through `sim` (with
    /// [`SimNodeBuilder::hardware_in_memory`], even put other hardware in
    /// its place: a GPU gone), files in the folder, or the `[mig]` config
    /// ([`SimNode::set_mig`]).
    pub fn restart_with(&mut self, change: impl FnOnce(&mut Self)) {
        self.engine = None;
        if self.plan.hardware_file {
            self.sim = Arc::new(self.plan.open_sim(self.dir.path()));
        }
        change(self);
        self.engine = Some(Arc::new(self.build_engine()));
    }

    /// A restart after the node rebooted into boot `boot`: MIG instances and
    /// MPS daemons are gone, records and CDI files are kept.
    pub fn reboot(&mut self, boot: &str) {
        self.reboot_with(boot, |_| {});
    }

    /// As [`SimNode::reboot`], with `change` run on the rebooted node
    /// before gpusliced starts (see [`SimNode::restart_with`]).
    pub fn reboot_with(&mut self, boot: &str, change: impl FnOnce(&mut Self)) {
        assert!(
            self.plan.hardware_file,
            "a node with its hardware in memory cannot reboot"
        );
        boot.clone_into(&mut self.plan.boot);
        if let Some(mps) = &self.mps {
            mps.reboot();
        }
        self.restart_with(change);
    }

    /// The `[mig]` config the next restart reads (an operator's edit).
    pub fn set_mig(&mut self, mig: MigConfig) {
        self.plan.mig = mig;
    }

    fn build_engine(&self) -> Engine {
        let backend: Arc<dyn GpuBackend> = self.sim.clone();
        let mig = &self.plan.mig;
        let inventory = Inventory::from_backend(backend.as_ref(), mig, &|_, _| {
            crate::mig::Ownership::Foreign
        })
        .expect("the inventory of the simulated GPUs");
        let roots = Roots {
            driver_root: &self.root,
            dev_root: &self.root,
        };
        let driver = DriverFiles::discover(roots, &inventory.driver.driver_version);
        let settings = EngineSettings {
            cdi_dir: self.cdi_dir(),
            dev_root: self.root.clone(),
            cdi_hook: None,
            boot_id: self.plan.boot.clone(),
            limits: self.plan.limits.clone(),
        };
        let store = Store::open(&self.state_dir()).expect("the records folder");
        let mut engine = Engine::new(backend, inventory, driver, store, settings);
        if let Some(tools) = self.tools() {
            engine = engine.with_sharing(tools);
        }
        if self.plan.start_up {
            engine
                .start_up(|engine| engine.setup_mig(mig))
                .expect("the engine's start-up");
        }
        engine
    }

    fn tools(&self) -> Option<SharingTools> {
        let (mps, smi) = (self.mps.clone()?, self.smi.clone()?);
        let settings = MpsSettings {
            control_program: PathBuf::from("nvidia-cuda-mps-control"),
            mps_dir: self.dir.path().join("run/mps"),
            ready_bound: READY_BOUND,
            bind_shm: false,
        };
        Some(SharingTools {
            mps: Arc::new(MpsManager::new(
                settings,
                mps.clone(),
                mps,
                Arc::new(NoShmMount),
            )),
            timeslice: smi,
        })
    }

    /// The CDI folder.
    pub fn cdi_dir(&self) -> PathBuf {
        self.dir.path().join("cdi")
    }

    /// The records folder (`state/`; the claims are in `state/claims/`).
    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    /// The driver root (also the dev root).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of claim `uid`'s CDI spec.
    pub fn spec_path(&self, uid: &str) -> PathBuf {
        self.cdi_dir()
            .join(format!("k8s.gpuslice.dev-claim_{uid}.json"))
    }

    /// The path of claim `uid`'s record.
    pub fn record_path(&self, uid: &str) -> PathBuf {
        self.state_dir().join("claims").join(format!("{uid}.json"))
    }

    /// Claim `uid`'s CDI spec, parsed, when there is one.
    pub fn spec(&self, uid: &str) -> Option<serde_json::Value> {
        let bytes = std::fs::read(self.spec_path(uid)).ok()?;
        Some(serde_json::from_slice(&bytes).expect("a CDI spec is JSON"))
    }

    /// Whether claim `uid` has a record.
    pub fn has_record(&self, uid: &str) -> bool {
        self.record_path(uid).exists()
    }

    /// The names in the CDI folder, sorted.
    pub fn cdi_files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.cdi_dir())
            .expect("the CDI folder")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The UUID of the GPU at inventory position `index`.
    pub fn uuid(&self, index: usize) -> String {
        self.engine().inventory().gpus[index].info.uuid.clone()
    }

    /// The inventory name of the first MIG slice of `profile` (e.g.
    /// "3g.40gb") the engine's inventory lists.
    pub fn slice(&self, profile: &str) -> String {
        self.engine()
            .inventory()
            .mig
            .iter()
            .find(|m| m.profile.name == profile)
            .unwrap_or_else(|| panic!("a {profile} slice"))
            .name
            .clone()
    }

    /// The compute mode of GPU `index`.
    pub fn mode(&self, index: u32) -> ComputeMode {
        self.sim.compute_mode(index).expect("a simulated GPU")
    }
}

impl Drop for SimNode {
    fn drop(&mut self) {
        let Some(engine) = self.engine.take() else {
            return;
        };
        if self.mps.is_some() {
            for claim in engine.claims() {
                let _ = engine.unprepare(&claim.uid);
            }
        }
    }
}

/// Makes a GPU instance (and its compute instance) behind gpusliced's back.
fn make_foreign(backend: &dyn GpuBackend, index: u32, profile: &str, pick: usize) {
    backend
        .set_mig_mode(index, MigMode::Enabled)
        .expect("MIG mode on");
    let profiles = backend.mig_profiles(index).expect("the MIG profiles");
    let profile = profiles
        .iter()
        .find(|p| p.name == profile)
        .expect("a profile of this model");
    let placement = profile.placements[pick % profile.placements.len()];
    let gi = backend
        .create_gpu_instance(index, profile.id, placement)
        .expect("a foreign GPU instance");
    backend
        .create_compute_instance(index, gi.id)
        .expect("its compute instance");
}
