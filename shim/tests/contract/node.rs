//! The node under test: gpusliced's real claim engine in process, over
//! simulated GPUs in a private folder, with the stand-in MPS control program
//! (tests/tools) for claims that share a GPU by memory. It publishes what the
//! DRA plugin would publish (GetInventory's answer, `api::inventory_response`,
//! built into ResourceSlices by `slices::build_pool`) and prepares claims the
//! way the plugin does (`claim::plan`, then `api::prepare_request`, then
//! `Engine::prepare`).
//!
//! Every claim still prepared when the node is dropped is unprepared, so no
//! MPS stand-in outlives a failing case.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gpuslice::claims::{Engine, EngineSettings, SharingTools};
use gpuslice::config::{MigAdvertise, MigConfig, MigCreate, MigGpuConfig};
use gpuslice::driver::{DriverFiles, Roots};
use gpuslice::gpu::sim::{SimBackend, SimModel};
use gpuslice::gpu::{GpuBackend, MigMode};
use gpuslice::health::{Cause, Fault, Target};
use gpuslice::inventory::Inventory;
use gpuslice::mig::Ownership;
use gpuslice::mps::{ChildSupervisor, MpsManager, MpsSettings, NoShmMount};
use gpuslice::state::Store;
use gpuslice::timeslice::NvidiaSmi;
use gpuslice_dra_plugin::claim;
use gpuslice_dra_plugin::slices::{PoolTarget, build_pool};
use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSliceSpec};

/// The DRA driver name the plugin publishes under by default.
pub const DRIVER: &str = "gpu.nvidia.com";
/// The node (and pool) name.
pub const NODE: &str = "node-a";
/// Upper bound for an MPS stand-in to answer; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(30);

/// One GPU of a generated node: its model and, when MIG-managed, its layout
/// (profile names).
#[derive(Debug, Clone)]
pub struct GpuPlan {
    /// The simulated model.
    pub model: SimModel,
    /// `Some(layout)`: in `[mig]` with this layout.
    pub mig: Option<Vec<String>>,
    /// A MIG instance gpuslice did not make, there before gpusliced
    /// starts: (profile name, which of its placements).
    pub foreign: Option<(String, usize)>,
    /// A fault the health monitor recorded before the case begins.
    pub fault: Option<FaultPlan>,
}

/// A fault in force on a GPU.
#[derive(Debug, Clone)]
pub enum FaultPlan {
    /// The whole GPU (an XID on it).
    Whole,
    /// A GPU instance that has since gone (its claim released), at one
    /// placement of this profile: (profile name, which placement).
    Instance(String, usize),
}

/// How the node is configured.
#[derive(Debug, Clone)]
pub struct NodePlan {
    /// The GPUs, by index.
    pub gpus: Vec<GpuPlan>,
    /// `[mig] advertise`.
    pub advertise: MigAdvertise,
    /// `[mig] create` (layout mode).
    pub create: MigCreate,
    /// The DRA plugin's `consumable_capacity`.
    pub consumable_capacity: bool,
}

/// The running node.
pub struct Node {
    dir: tempfile::TempDir,
    engine: Option<Engine>,
    consumable_capacity: bool,
    /// Whether MPS claims can run (python3 for the stand-in).
    pub mps: bool,
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let text = format!("#!/bin/sh\n{body}\n");
    gpuslice_cdi::write_atomic(dir, name, text.as_bytes(), 0o755).expect("write script");
    dir.join(name)
}

/// Whether python3 (the MPS stand-in's interpreter) runs here.
pub fn python3() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "pass"])
        .status()
        .is_ok_and(|s| s.success())
}

fn mig_config(plan: &NodePlan) -> MigConfig {
    MigConfig {
        advertise: plan.advertise,
        create: plan.create,
        gpu: (0u32..)
            .zip(&plan.gpus)
            .filter_map(|(index, g)| {
                g.mig.as_ref().map(|layout| MigGpuConfig {
                    index: Some(index),
                    uuid: None,
                    layout: layout.clone(),
                })
            })
            .collect(),
    }
}

fn sharing_tools(d: &Path) -> SharingTools {
    let control = script(
        d,
        "mps-control",
        &format!(
            "FAKE_MPS_RECORD={} exec {} \"$@\"",
            d.join("mps.record").display(),
            repo("tests/tools/fake-mps-control").display()
        ),
    );
    let smi = script(
        d,
        "nvidia-smi",
        &format!(
            "FAKE_SMI_RECORD={} exec {} \"$@\"",
            d.join("smi.record").display(),
            repo("tests/tools/fake-nvidia-smi").display()
        ),
    );
    SharingTools {
        mps: Arc::new(MpsManager::new(
            MpsSettings {
                control_program: control,
                mps_dir: d.join("run/mps"),
                ready_bound: BOUND,
                bind_shm: false,
            },
            Arc::new(ChildSupervisor::default()),
            Arc::new(NoShmMount),
        )),
        nvidia_smi: NvidiaSmi::new(&smi),
    }
}

/// Makes a GPU instance (and its compute instance) behind gpusliced's back.
fn make_foreign(backend: &dyn GpuBackend, index: u32, profile: &str, pick: usize) {
    backend
        .set_mig_mode(index, MigMode::Enabled)
        .expect("MIG mode on");
    let profiles = backend.mig_profiles(index).expect("profiles");
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

/// Records each planned fault as the health monitor does (an XID 94 on
/// the GPU or on one GPU instance), so the publication taints what it
/// covers.
fn record_faults(engine: &Engine, plan: &NodePlan) {
    let inventory = engine.inventory();
    for (index, gpu) in (0u32..).zip(&plan.gpus) {
        let Some(fault) = &gpu.fault else {
            continue;
        };
        let uuid = &inventory
            .gpus
            .iter()
            .find(|g| g.info.index == index)
            .expect("a GPU of the plan")
            .info
            .uuid;
        let target = match fault {
            FaultPlan::Whole => Target::Gpu,
            FaultPlan::Instance(profile, pick) => {
                let profiles = engine.backend().mig_profiles(index).expect("profiles");
                let profile = profiles
                    .iter()
                    .find(|p| p.name == *profile)
                    .expect("a profile of this model");
                Target::Instance {
                    // An instance id no live instance has: it is gone.
                    gpu_instance: 100,
                    placement: profile.placements[pick % profile.placements.len()],
                }
            }
        };
        let xid = Fault {
            cause: Cause::Xid(94),
            detail: "contract case".to_owned(),
            since: 0,
        };
        engine.health().record(uuid, index, target, xid);
    }
    engine.health_changed();
}

impl Node {
    /// Starts the engine as gpusliced does: scan, reconcile, MIG setup.
    pub fn start(plan: &NodePlan, mps: bool) -> Node {
        // On tmpfs where there is one: the engine's durable writes (fsync)
        // are what a case waits on, and the contract is not about disks.
        let shm = Path::new("/dev/shm");
        let base = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("gpuslice-contract-")
            .tempdir_in(base)
            .expect("temp folder");
        let d = dir.path();
        let models = plan.gpus.iter().map(|g| g.model).collect();
        let backend: Arc<dyn GpuBackend> = Arc::new(SimBackend::new(models, "contract"));
        for (index, gpu) in (0u32..).zip(&plan.gpus) {
            if let Some((profile, pick)) = &gpu.foreign {
                make_foreign(backend.as_ref(), index, profile, *pick);
            }
        }
        let mig = mig_config(plan);
        let inventory = Inventory::from_backend(backend.as_ref(), &mig, &|_, _| Ownership::Foreign)
            .expect("inventory");
        let root = repo("examples/sim-root");
        let roots = Roots {
            driver_root: &root,
            dev_root: &root,
        };
        let driver = DriverFiles::discover(roots, &inventory.driver.driver_version);
        let settings = EngineSettings {
            cdi_dir: d.join("cdi"),
            dev_root: root.clone(),
            cdi_hook: None,
            boot_id: "contract-boot".to_owned(),
        };
        std::fs::create_dir_all(d.join("cdi")).expect("CDI folder");
        let store = Store::open(&d.join("state")).expect("state folder");
        let mut engine = Engine::new(backend, inventory, driver, store, settings);
        if mps {
            engine = engine.with_sharing(sharing_tools(d));
        }
        engine.reconcile().expect("reconcile");
        engine.setup_mig(&mig).expect("MIG setup");
        record_faults(&engine, plan);
        Node {
            dir,
            engine: Some(engine),
            consumable_capacity: plan.consumable_capacity,
            mps,
        }
    }

    fn engine(&self) -> &Engine {
        self.engine.as_ref().expect("engine")
    }

    /// The ResourceSlices the DRA plugin would publish now (resource.k8s.io/v1).
    pub fn publish(&self) -> Vec<ResourceSliceSpec> {
        let inventory = gpuslice::api::inventory_response(&self.engine().view());
        let target = PoolTarget {
            driver: DRIVER,
            node_name: NODE,
            taint_unhealthy: true,
            consumable_capacity: self.consumable_capacity,
        };
        let built = build_pool(&inventory, &target, 1);
        assert!(
            built.skipped.is_empty(),
            "devices left out of the pool: {:?}",
            built.skipped
        );
        built.slices
    }

    /// Prepares an allocated claim as the plugin does; the error as text.
    pub fn prepare(&self, claim: &ResourceClaim) -> Result<(), String> {
        let uid = claim.metadata.uid.clone().unwrap_or_default();
        let plan = claim::plan(claim, &uid, DRIVER).map_err(|e| format!("claim::plan: {e}"))?;
        let request = pb::PrepareRequest {
            claim: Some(pb::ClaimRef {
                uid,
                namespace: claim.metadata.namespace.clone().unwrap_or_default(),
                name: claim.metadata.name.clone().unwrap_or_default(),
            }),
            devices: plan.devices,
            configs: plan.configs,
        };
        let converted = gpuslice::api::prepare_request(request)
            .map_err(|s| format!("conversion: {}", s.message()))?;
        self.engine().prepare(&converted).map_err(|e| {
            let status = gpuslice::api::claim_status(e);
            format!("{:?}: {}", status.code(), status.message())
        })?;
        Ok(())
    }

    /// Unprepares a claim; it must have been prepared.
    pub fn unprepare(&self, uid: &str) {
        self.engine()
            .unprepare(uid)
            .unwrap_or_else(|e| panic!("unprepare {uid}: {e}"));
    }

    /// Claims the engine holds.
    pub fn claim_count(&self) -> usize {
        self.engine().claim_count()
    }

    /// The CDI folder.
    pub fn cdi_dir(&self) -> PathBuf {
        self.dir.path().join("cdi")
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(engine) = self.engine.take() {
            for record in engine.claims() {
                let _ = engine.unprepare(&record.uid);
            }
        }
    }
}
