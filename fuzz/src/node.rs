//! The simulated node the prepare targets run on: the real claim engine over
//! five simulated GPUs (an H100, an A100-40GB and an A30 in MIG layout mode
//! with slices made at prepare, an H200 and an H100 whole), built by the
//! daemon's test kit (`gpuslice::testkit`) with its state and CDI folders in
//! a private temp folder, and what the node looked like when it started, so
//! a target can tell that a request left nothing behind.
//!
//! One node per process, built on first use. "Touched" is measured two ways:
//! inotify on the CDI, state and records folders (every file event), and the
//! simulator's call counters (every GPU call, reads included).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use gpuslice::claims::Engine;
use gpuslice::config::{MigConfig, MigCreate, MigGpuConfig, MigOffering};
use gpuslice::gpu::sim::{SimBackend, SimModel, op};
use gpuslice::gpu::{GpuBackend, GpuInstance};
use gpuslice::inventory::Inventory;
use gpuslice::testkit::{SimNode, SimNodeBuilder};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

/// The simulated node: three MIG GPUs of different models, two whole.
const MODELS: [SimModel; 5] = [
    SimModel::H100_80GB,
    SimModel::A100_40GB,
    SimModel::A30_24GB,
    SimModel::H200_141GB,
    SimModel::H100_80GB,
];
/// Layouts of the MIG GPUs (indexes 0, 1, 2), made at prepare.
const LAYOUTS: [&[&str]; 3] = [
    &["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"],
    &["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"],
    &["2g.12gb", "1g.6gb", "1g.6gb"],
];

/// The claim engine over simulated GPUs in a private folder, and what it
/// looked like when it started.
pub struct Node {
    /// The engine under test.
    pub engine: Arc<Engine>,
    sim: Arc<SimBackend>,
    watch: Inotify,
    folders: Vec<PathBuf>,
    baseline_files: Vec<Vec<String>>,
    baseline_inventory: Arc<Inventory>,
    baseline_instances: Vec<Vec<GpuInstance>>,
    /// Every inventory device name (for the structured target).
    pub device_names: Vec<String>,
    /// Kept for the process's life (statics are never dropped): run.sh points
    /// `GPUSLICE_FUZZ_TMP` at a folder it removes afterwards.
    _node: SimNode,
}

/// The one node of this process.
pub fn node() -> &'static Node {
    static NODE: OnceLock<Node> = OnceLock::new();
    NODE.get_or_init(Node::start)
}

fn mig_config() -> MigConfig {
    MigConfig {
        advertise: Some(MigOffering::Layout),
        create: MigCreate::OnPrepare,
        gpu: (0u32..)
            .zip(LAYOUTS)
            .map(|(index, layout)| MigGpuConfig {
                index: Some(index),
                uuid: None,
                layout: layout.iter().map(|p| (*p).to_owned()).collect(),
            })
            .collect(),
    }
}

fn names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("read {}: {e}", folder.display()))
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("read {}: {e}", folder.display()));
    names.sort();
    names
}

impl Node {
    fn start() -> Node {
        let base =
            std::env::var_os("GPUSLICE_FUZZ_TMP").map_or_else(std::env::temp_dir, PathBuf::from);
        let node = SimNodeBuilder::models(&MODELS)
            .seed("fuzz")
            .mig(mig_config())
            .boot("fuzz-boot")
            .in_dir(&base)
            .hardware_in_memory()
            .engine_only()
            .start();
        let engine = Arc::clone(node.engine());
        engine
            .start_up(|engine| {
                let problems = engine.setup_mig(&mig_config())?;
                assert!(problems.is_empty(), "MIG setup problems: {problems:?}");
                Ok(problems)
            })
            .expect("start-up");
        let (cdi_dir, state_dir, sim) = (node.cdi_dir(), node.state_dir(), Arc::clone(&node.sim));
        let folders = vec![cdi_dir, state_dir.clone(), state_dir.join("claims")];
        let watch = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).expect("inotify");
        for folder in &folders {
            watch
                .add_watch(folder, AddWatchFlags::IN_ALL_EVENTS)
                .expect("inotify watch");
        }
        let baseline_inventory = engine.inventory();
        let device_names = baseline_inventory
            .device_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let mut node = Node {
            baseline_files: folders.iter().map(|f| names(f)).collect(),
            baseline_instances: Vec::new(),
            baseline_inventory,
            device_names,
            engine,
            sim,
            watch,
            folders,
            _node: node,
        };
        node.baseline_instances = node.instances();
        node
    }

    /// The CDI folder.
    pub fn cdi_dir(&self) -> &Path {
        &self.folders[0]
    }

    fn instances(&self) -> Vec<Vec<GpuInstance>> {
        (0u32..)
            .take(MODELS.len())
            .map(|i| self.sim.gpu_instances(i).unwrap_or_default())
            .collect()
    }

    /// Every simulated GPU call made so far.
    pub fn hardware_calls(&self) -> u64 {
        op::ALL.iter().map(|o| self.sim.faults().calls(o)).sum()
    }

    /// File events since the last call, as "mask name" strings.
    pub fn file_events(&self) -> Vec<String> {
        let mut all = Vec::new();
        while let Ok(events) = self.watch.read_events() {
            if events.is_empty() {
                break;
            }
            all.extend(
                events
                    .into_iter()
                    .map(|e| format!("{:?} {:?}", e.mask, e.name)),
            );
        }
        all
    }

    /// The node is as it started: same files, no claim, same inventory and
    /// MIG instances.
    pub fn assert_as_started(&self, after: &str) {
        for (folder, baseline) in self.folders.iter().zip(&self.baseline_files) {
            assert_eq!(
                &names(folder),
                baseline,
                "{after}: files left in {}",
                folder.display()
            );
        }
        let claims = self.engine.claims();
        assert!(claims.is_empty(), "{after}: claims left: {claims:?}");
        assert!(
            *self.engine.inventory() == *self.baseline_inventory,
            "{after}: the inventory changed"
        );
        assert_eq!(
            self.instances(),
            self.baseline_instances,
            "{after}: MIG instances changed"
        );
    }
}
