//! The fixture of the sharing engine tests: a simulated node whose engine
//! drives the stand-in control program and nvidia-smi (tests/tools), and
//! stops every daemon when the test ends, however it ends.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::claims::{Engine, EngineSettings, SharingTools};
use crate::config::MigConfig;
use crate::driver::{DriverFiles, Roots};
use crate::gpu::sim::{SimBackend, SimModel};
use crate::gpu::{ComputeMode, GpuBackend};
use crate::inventory::Inventory;
use crate::mps::{ChildSupervisor, ControlProgram, MpsManager, MpsSettings, NoShmMount};
use crate::state::Store;
use crate::timeslice::NvidiaSmi;

/// Upper bound for a daemon to answer; only a hang reaches it.
pub(in crate::claims) const BOUND: Duration = Duration::from_secs(30);

fn tool(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/tools")
        .join(name)
}

fn sim_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root")
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    gpuslice_cdi::write_atomic(dir, name, format!("#!/bin/sh\n{body}\n").as_bytes(), 0o755)
        .unwrap();
    dir.join(name)
}

/// A simulated node with the stand-ins; its engine is stopped (every claim
/// unprepared, so every daemon quits) when the test ends, even by a panic.
pub(in crate::claims) struct Node {
    pub(in crate::claims) dir: tempfile::TempDir,
    pub(in crate::claims) backend: Arc<SimBackend>,
    engine: Option<Engine>,
}

impl Node {
    /// `None` (and a line saying why) without python3, the stand-in
    /// control program's interpreter.
    pub(in crate::claims) fn new(gpus: usize, mig: &MigConfig, fail_start: bool) -> Option<Self> {
        let fail = if fail_start {
            "FAKE_MPS_FAIL_START=1 "
        } else {
            ""
        };
        Self::with_control(gpus, mig, |_| fail.to_owned())
    }

    /// A node whose control daemon, once started (`-f`), writes "started"
    /// to the FIFO `started` in the node's folder and waits for a line on
    /// the FIFO `gate` before it runs: a test can hold a prepare mid-way
    /// with no sleep.
    pub(in crate::claims) fn gated(gpus: usize) -> Option<Self> {
        Self::with_control(gpus, &MigConfig::default(), |d| {
            for fifo in ["started", "gate"] {
                nix::unistd::mkfifo(&d.join(fifo), nix::sys::stat::Mode::S_IRWXU).unwrap();
            }
            format!(
                "if [ \"$1\" = \"-f\" ]; then echo started > {d}/started; read go < {d}/gate; fi\n",
                d = d.display()
            )
        })
    }

    /// `prefix(folder)` goes before the line that runs the stand-in.
    fn with_control(
        gpus: usize,
        mig: &MigConfig,
        prefix: impl FnOnce(&Path) -> String,
    ) -> Option<Self> {
        if std::process::Command::new("python3")
            .arg("-c")
            .arg("pass")
            .status()
            .is_err()
        {
            eprintln!(
                "skipping: python3 (the stand-in MPS control program's interpreter) is missing"
            );
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let prefix = prefix(d);
        let control = script(
            d,
            "mps-control",
            &format!(
                "{prefix}FAKE_MPS_RECORD={} exec {} \"$@\"",
                d.join("mps.record").display(),
                tool("fake-mps-control").display()
            ),
        );
        let smi = script(
            d,
            "nvidia-smi",
            &format!(
                "FAKE_SMI_RECORD={} FAKE_SMI_UNSUPPORTED=\"$(cat {} 2>/dev/null)\" exec {} \"$@\"",
                d.join("smi.record").display(),
                d.join("unsupported").display(),
                tool("fake-nvidia-smi").display()
            ),
        );
        let backend = Arc::new(
            SimBackend::open_at_boot(
                vec![SimModel::H100_80GB; gpus],
                "test",
                &d.join("hw.json"),
                "boot",
            )
            .unwrap(),
        );
        let dyn_backend: Arc<dyn GpuBackend> = backend.clone();
        let inventory = Inventory::from_backend(dyn_backend.as_ref(), mig, &|_, _| {
            crate::mig::Ownership::Foreign
        })
        .unwrap();
        let root = sim_root();
        let roots = Roots {
            driver_root: &root,
            dev_root: &root,
        };
        let tools = SharingTools {
            mps: Arc::new(MpsManager::new(
                MpsSettings {
                    control_program: control.clone(),
                    mps_dir: d.join("run/mps"),
                    ready_bound: BOUND,
                    bind_shm: false,
                },
                Arc::new(ChildSupervisor::default()),
                Arc::new(ControlProgram::new(&control)),
                Arc::new(NoShmMount),
            )),
            timeslice: Arc::new(NvidiaSmi::new(&smi)),
        };
        let engine = Engine::new(
            dyn_backend,
            inventory,
            DriverFiles::discover(roots, "580.95.05"),
            Store::open(&d.join("state")).unwrap(),
            EngineSettings {
                cdi_dir: d.join("cdi"),
                dev_root: root.clone(),
                cdi_hook: None,
                boot_id: "boot".to_owned(),
            },
        )
        .with_sharing(tools);
        engine.reconcile().unwrap();
        engine.setup_mig(mig).unwrap();
        engine.restore_sharing();
        Some(Self {
            dir,
            backend,
            engine: Some(engine),
        })
    }

    pub(in crate::claims) fn plain(gpus: usize) -> Option<Self> {
        Self::new(gpus, &MigConfig::default(), false)
    }

    pub(in crate::claims) fn engine(&self) -> &Engine {
        self.engine.as_ref().unwrap()
    }

    pub(in crate::claims) fn lines(&self, file: &str) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join(file))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    pub(in crate::claims) fn starts(&self) -> usize {
        self.lines("mps.record")
            .iter()
            .filter(|l| l.starts_with("start "))
            .count()
    }

    pub(in crate::claims) fn spec(&self, uid: &str) -> Option<serde_json::Value> {
        let path = self
            .dir
            .path()
            .join(format!("cdi/k8s.gpuslice.dev-claim_{uid}.json"));
        std::fs::read(path)
            .ok()
            .map(|b| serde_json::from_slice(&b).unwrap())
    }

    pub(in crate::claims) fn has_record(&self, uid: &str) -> bool {
        self.dir
            .path()
            .join(format!("state/claims/{uid}.json"))
            .exists()
    }

    pub(in crate::claims) fn uuid(&self, index: usize) -> String {
        self.engine().inventory().gpus[index].info.uuid.clone()
    }

    pub(in crate::claims) fn mode(&self, index: u32) -> ComputeMode {
        self.backend.compute_mode(index).unwrap()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(engine) = self.engine.take() {
            for claim in engine.claims() {
                let _ = engine.unprepare(&claim.uid);
            }
        }
    }
}
