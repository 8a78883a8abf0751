//! The node under test: gpusliced's real claim engine in process, over
//! simulated GPUs in a private folder on tmpfs, with the fake MPS control
//! daemons and nvidia-smi, all from `gpuslice::testkit`. It publishes what the
//! DRA plugin would publish (GetInventory's answer, `api::inventory_response`,
//! built into ResourceSlices by `slices::build_pool`) and prepares claims the
//! way the plugin does (`claim::plan`, then `api::prepare_request`, then
//! `Engine::prepare`).
//!
//! Every claim still prepared when the node is dropped is unprepared.

use std::path::PathBuf;

use gpuslice::claims::Engine;
use gpuslice::config::{MigConfig, MigCreate, MigGpuConfig, MigOffering};
use gpuslice::gpu::sim::SimModel;
use gpuslice::health::{Cause, Fault, Target};
use gpuslice::testkit::{SimNode, SimNodeBuilder};
use gpuslice_dra_plugin::claim;
use gpuslice_dra_plugin::slices::{PoolTarget, build_pool};
use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSliceSpec};

/// The DRA driver name the plugin publishes under by default.
pub const DRIVER: &str = "gpu.nvidia.com";
/// The node (and pool) name.
pub const NODE: &str = "node-a";

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
    pub advertise: Option<MigOffering>,
    /// `[mig] create` (layout mode).
    pub create: MigCreate,
    /// The DRA plugin's `consumable_capacity`.
    pub consumable_capacity: bool,
}

/// The running node.
pub struct Node {
    node: SimNode,
    consumable_capacity: bool,
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
    /// Starts the engine as gpusliced does (the test kit's node: scan,
    /// reconcile, MIG setup), with the planned foreign instances and faults.
    pub fn start(plan: &NodePlan) -> Node {
        let models: Vec<SimModel> = plan.gpus.iter().map(|g| g.model).collect();
        let mut builder = SimNodeBuilder::models(&models)
            .seed("contract")
            .mig(mig_config(plan))
            .boot("contract-boot")
            .fake_tools()
            .on_tmpfs()
            .hardware_in_memory();
        for (index, gpu) in (0u32..).zip(&plan.gpus) {
            if let Some((profile, pick)) = &gpu.foreign {
                builder = builder.foreign_instance(index, profile, *pick);
            }
        }
        let node = builder.start();
        record_faults(node.engine(), plan);
        Node {
            node,
            consumable_capacity: plan.consumable_capacity,
        }
    }

    fn engine(&self) -> &Engine {
        self.node.engine()
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
            let status = gpuslice::api::grpc_status(e);
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
        self.node.cdi_dir()
    }
}
