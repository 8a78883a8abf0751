//! `[backend.sim]`: the simulated node. Its GPUs are a list of models
//! (`gpus`, on a generic two-socket PCIe server of `numa_nodes`) or a cloud
//! instance type (`instance`, whose shape sets the GPUs, their places,
//! NUMA nodes and NVLink); a GB200 instance's multi-node NVLink fabric is
//! `[backend.sim.fabric]`. Parsed and validated here, opened in `run`.

use std::path::PathBuf;

use serde::Deserialize;

use super::validate::{ConfigError, invalid};
use crate::gpu::FabricState;
use crate::gpu::sim::instances::{FabricKind, InstanceShape};
use crate::gpu::sim::{SimFabric, SimModel, topology};

/// Linux's `MAX_NUMNODES` at its largest (`1 << CONFIG_NODES_SHIFT`, the
/// shift capped at 10), the bound Kubernetes' `deviceattribute` helpers
/// check a NUMA node against.
const MAX_NUMA_NODES: u32 = 1024;

/// The cluster of every simulated GB200 node unless `[backend.sim.fabric]`
/// says otherwise: all of them in one NVLink domain, as the nodes of one
/// UltraServer are.
pub const DEFAULT_CLUSTER_UUID: &str = "4f3c2b1a-5d6e-4f70-8a9b-0c1d2e3f4a5b";

/// `[backend.sim]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// One entry per simulated GPU, by model. Default (without `instance`):
    /// one "H100-80GB".
    pub gpus: Option<Vec<SimModel>>,
    /// A cloud instance type whose GPUs, PCI places, NUMA nodes and NVLink
    /// the node takes (`gpu::sim::instances`), instead of `gpus`.
    pub instance: Option<String>,
    /// Seed for the simulated GPUs' UUIDs; nodes with different seeds get
    /// different UUIDs. Default "gpuslice-sim".
    pub seed: String,
    /// The simulated GPUs' own state (MIG mode, instances, compute mode),
    /// kept so it outlives a daemon restart as real hardware state does.
    /// Default: `sim-hardware.json` next to the socket (so under the runtime
    /// dir, /run/gpuslice: gone at reboot, like MIG instances). See
    /// [`super::Config::sim_hardware_state`].
    pub hardware_state: Option<PathBuf>,
    /// A file a test or an operator appends health events to, one a line
    /// (`gpu=0 xid=79`; syntax in `gpu::sim::health_spec`). Default:
    /// `sim-health-events` next to `hardware_state`. See
    /// [`super::Config::sim_health_events`].
    pub health_events: Option<PathBuf>,
    /// The folder of fake GPU processes (`gpuslicectl sim exec` writes one
    /// file per process; format in `gpu::sim::process_file`). Default:
    /// `sim-processes` next to `hardware_state`. See
    /// [`super::Config::sim_processes`].
    pub processes: Option<PathBuf>,
    /// NUMA nodes of a `gpus` node; GPUs sit four to a PCIe root, roots
    /// dealt out to the nodes in turn (`gpu::sim::topology`). 0: the kernel
    /// gives the GPUs no NUMA affinity, as in many VMs. Default 2; an
    /// `instance` sets its own.
    pub numa_nodes: Option<u32>,
    /// `[backend.sim.fabric]`: the multi-node NVLink fabric of an instance
    /// that has one.
    pub fabric: Option<SimFabricConfig>,
}

/// `[backend.sim.fabric]`: what the GPUs of a multi-node NVLink instance
/// report of their fabric.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimFabricConfig {
    /// The cluster (NVLink domain) UUID. Default [`DEFAULT_CLUSTER_UUID`].
    pub cluster_uuid: String,
    /// The clique id within the cluster. Default 1.
    pub clique_id: u32,
    /// The registration state: "completed" (default), "in-progress",
    /// "not-started".
    pub state: FabricState,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            gpus: None,
            instance: None,
            seed: "gpuslice-sim".to_owned(),
            hardware_state: None,
            health_events: None,
            processes: None,
            numa_nodes: None,
            fabric: None,
        }
    }
}

impl Default for SimFabricConfig {
    fn default() -> Self {
        Self {
            cluster_uuid: DEFAULT_CLUSTER_UUID.to_owned(),
            clique_id: 1,
            state: FabricState::Completed,
        }
    }
}

impl SimConfig {
    /// The instance's shape, when `instance` names one.
    pub fn shape(&self) -> Option<&'static InstanceShape> {
        self.instance.as_deref().and_then(InstanceShape::named)
    }

    /// The simulated GPUs in index order: `gpus`, the instance's, or one
    /// H100.
    pub fn models(&self) -> Vec<SimModel> {
        match (&self.gpus, self.shape()) {
            (Some(gpus), _) => gpus.clone(),
            (None, Some(shape)) => (0..shape.gpus).map(|_| shape.model).collect(),
            (None, None) => vec![SimModel::H100_80GB],
        }
    }

    /// NUMA nodes of a `gpus` node.
    pub fn numa_nodes(&self) -> u32 {
        self.numa_nodes.unwrap_or(topology::DEFAULT_NUMA_NODES)
    }

    /// What a multi-node instance's GPUs report of their fabric.
    pub fn fabric(&self) -> SimFabric {
        let config = self.fabric.clone().unwrap_or_default();
        SimFabric {
            cluster_uuid: config.cluster_uuid,
            clique_id: config.clique_id,
            state: config.state,
        }
    }

    /// The rules serde cannot check.
    pub(super) fn validate(&self, simulated: bool) -> Result<(), ConfigError> {
        if let Some(name) = &self.instance {
            let Some(shape) = InstanceShape::named(name) else {
                return Err(invalid(
                    "backend.sim.instance",
                    format!(
                        "unknown instance type {name:?}; the simulator knows {}",
                        InstanceShape::names().join(", ")
                    ),
                ));
            };
            if self.gpus.is_some() {
                return Err(invalid(
                    "backend.sim.gpus",
                    format!("{name} brings its own GPUs: give gpus or instance, not both"),
                ));
            }
            if self.numa_nodes.is_some() {
                return Err(invalid(
                    "backend.sim.numa_nodes",
                    format!(
                        "{name} has {} NUMA nodes of its own: remove numa_nodes",
                        shape.numa_nodes
                    ),
                ));
            }
            if self.fabric.is_some() && shape.fabric != Some(FabricKind::MultiNode) {
                return Err(no_fabric(&format!(
                    "{name} has no multi-node NVLink fabric"
                )));
            }
        } else if self.fabric.is_some() {
            return Err(no_fabric("a gpus list has no NVLink fabric"));
        }
        if simulated && self.gpus.as_ref().is_some_and(Vec::is_empty) {
            return Err(invalid(
                "backend.sim.gpus",
                "the simulated node needs at least one GPU, e.g. gpus = [\"H100-80GB\"]",
            ));
        }
        if self.seed.is_empty() {
            return Err(invalid("backend.sim.seed", "must not be empty"));
        }
        if let Some(numa_nodes) = self.numa_nodes
            && numa_nodes > MAX_NUMA_NODES
        {
            return Err(invalid(
                "backend.sim.numa_nodes",
                format!(
                    "{numa_nodes} is more than Linux allows ({MAX_NUMA_NODES}); use e.g. 2 for \
                     two sockets, or 0 for no NUMA affinity"
                ),
            ));
        }
        if let Some(fabric) = &self.fabric {
            let canonical = uuid::Uuid::try_parse(&fabric.cluster_uuid)
                .ok()
                .filter(|u| !u.is_nil())
                .map(|u| u.hyphenated().to_string());
            if canonical.as_deref() != Some(fabric.cluster_uuid.as_str()) {
                return Err(invalid(
                    "backend.sim.fabric.cluster_uuid",
                    format!(
                        "{:?} is not a lowercase, hyphenated, non-zero UUID, e.g. {DEFAULT_CLUSTER_UUID:?}",
                        fabric.cluster_uuid
                    ),
                ));
            }
        }
        Ok(())
    }
}

fn no_fabric(why: &str) -> ConfigError {
    let multi: Vec<&str> = (InstanceShape::all().iter())
        .filter(|s| s.fabric == Some(FabricKind::MultiNode))
        .map(|s| s.name)
        .collect();
    invalid(
        "backend.sim.fabric",
        format!(
            "{why}; only an instance with one ({}) takes [backend.sim.fabric]",
            multi.join(", ")
        ),
    )
}
