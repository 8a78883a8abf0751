//! Keeps the node's ResourceSlices equal to gpusliced's inventory.
//!
//! Every `resync_seconds` (and once at start): read the inventory, list our
//! slices (field selector `spec.nodeName=<node>,spec.driver=<driver>`, the
//! only list the node authorizer allows), plan ([`crate::sync_plan`]) and
//! write. That one loop republishes after an inventory change and after the
//! kubelet deleted the slices (it does on its own restart). Slices are owned
//! by the Node, so deleting the Node garbage-collects them. Errors are logged
//! and retried at the next tick; the loop never ends the process.

use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{ResourceSlice, ResourceSliceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams, Preconditions};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::gpusliced::GpuSlice;
use crate::slices::{self, PoolTarget};
use crate::sync_plan::{self, Existing, Write};

/// A sync that did not finish (retried at the next tick).
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// gpusliced did not answer GetInventory.
    #[error("cannot read gpusliced's inventory ({code:?}): {message}", code = .0.code(), message = .0.message())]
    Inventory(tonic::Status),
    /// The Node could not be read (its uid is the slices' owner).
    #[error("cannot read Node {node}: {source}")]
    Node {
        /// The node.
        node: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
    /// Listing our slices failed.
    #[error("cannot list ResourceSlices of node {node}: {source}")]
    List {
        /// The node.
        node: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
    /// One write failed (the next sync lists again and redoes what is left).
    #[error("cannot {action} ResourceSlice {slice}: {source}")]
    Write {
        /// "create", "update" or "delete".
        action: &'static str,
        /// The slice name (the generateName prefix for a create).
        slice: String,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
}

/// What one sync did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncReport {
    /// The pool generation now published.
    pub generation: i64,
    /// How many writes it took (0: already in sync).
    pub writes: usize,
}

/// The publishing loop's state.
pub struct Publisher {
    kube: kube::Client,
    gpusliced: GpuSlice,
    driver: String,
    node_name: String,
    taint_unhealthy: bool,
    consumable_capacity: bool,
    resync: Duration,
    node_uid: Option<String>,
    last_published: i64,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("driver", &self.driver)
            .field("node_name", &self.node_name)
            .field("resync", &self.resync)
            .finish_non_exhaustive()
    }
}

impl Publisher {
    /// A publisher for `node_name`'s pool of `driver`.
    pub fn new(
        kube: kube::Client,
        gpusliced: GpuSlice,
        target: &PoolTarget<'_>,
        resync: Duration,
    ) -> Self {
        Self {
            kube,
            gpusliced,
            driver: target.driver.to_owned(),
            node_name: target.node_name.to_owned(),
            taint_unhealthy: target.taint_unhealthy,
            consumable_capacity: target.consumable_capacity,
            resync,
            node_uid: None,
            last_published: 0,
        }
    }

    /// Syncs now and every `resync` until `shutdown` turns true.
    pub async fn run(mut self, mut shutdown: watch::Receiver<bool>) {
        let mut ticks = tokio::time::interval(self.resync);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = ticks.tick() => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
            match self.sync_once().await {
                Ok(report) if report.writes > 0 => info!(
                    node = %self.node_name, generation = report.generation, writes = report.writes,
                    "published ResourceSlices"
                ),
                Ok(report) => debug!(generation = report.generation, "ResourceSlices in sync"),
                Err(err) => {
                    warn!(error = %err, "ResourceSlice sync failed; retrying at the next tick")
                }
            }
        }
    }

    /// One comparison and the writes it needs.
    pub async fn sync_once(&mut self) -> Result<SyncReport, PublishError> {
        let inventory = self
            .gpusliced
            .get_inventory(pb::GetInventoryRequest {})
            .await
            .map_err(PublishError::Inventory)?
            .into_inner();
        let owner = self.owner().await?;
        let api = Api::<ResourceSlice>::all(self.kube.clone());
        let selector = format!(
            "spec.nodeName={},spec.driver={}",
            self.node_name, self.driver
        );
        let listed = api
            .list(&ListParams::default().fields(&selector))
            .await
            .map_err(|source| PublishError::List {
                node: self.node_name.clone(),
                source,
            })?;
        let existing: Vec<Existing> = listed
            .items
            .into_iter()
            .map(|slice| Existing {
                name: slice.metadata.name.unwrap_or_default(),
                uid: slice.metadata.uid,
                resource_version: slice.metadata.resource_version,
                spec: slice.spec,
            })
            .collect();
        let target = PoolTarget {
            driver: &self.driver,
            node_name: &self.node_name,
            taint_unhealthy: self.taint_unhealthy,
            consumable_capacity: self.consumable_capacity,
        };
        let built = slices::build_pool(&inventory, &target, 0);
        for problem in &built.skipped {
            warn!(error = %problem, "not published");
        }
        let plan = sync_plan::plan(&existing, self.last_published, |generation| {
            let mut specs = built.slices.clone();
            for spec in &mut specs {
                spec.pool.generation = generation;
            }
            specs
        });
        let writes = plan.writes.len();
        for write in plan.writes {
            self.apply(&api, &owner, write).await?;
        }
        self.last_published = plan.generation;
        Ok(SyncReport {
            generation: plan.generation,
            writes,
        })
    }

    async fn apply(
        &self,
        api: &Api<ResourceSlice>,
        owner: &OwnerReference,
        write: Write,
    ) -> Result<(), PublishError> {
        match write {
            Write::Create(spec) => {
                let prefix = format!("{}-{}-", self.node_name, self.driver);
                let slice = self.slice(None, None, owner, spec);
                api.create(&PostParams::default(), &slice)
                    .await
                    .map(drop)
                    .map_err(|source| write_error("create", prefix, source))
            }
            Write::Update {
                name,
                resource_version,
                spec,
            } => {
                let slice = self.slice(Some(name.clone()), resource_version, owner, spec);
                api.replace(&name, &PostParams::default(), &slice)
                    .await
                    .map(drop)
                    .map_err(|source| write_error("update", name, source))
            }
            Write::Delete {
                name,
                uid,
                resource_version,
            } => {
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid,
                        resource_version,
                    }),
                    ..DeleteParams::default()
                };
                api.delete(&name, &params)
                    .await
                    .map(drop)
                    .map_err(|source| write_error("delete", name, source))
            }
        }
    }

    fn slice(
        &self,
        name: Option<String>,
        resource_version: Option<String>,
        owner: &OwnerReference,
        spec: ResourceSliceSpec,
    ) -> ResourceSlice {
        let generate_name = name
            .is_none()
            .then(|| format!("{}-{}-", self.node_name, self.driver));
        ResourceSlice {
            metadata: ObjectMeta {
                name,
                generate_name,
                resource_version,
                owner_references: Some(vec![owner.clone()]),
                ..ObjectMeta::default()
            },
            spec,
        }
    }

    /// The owner reference to our Node (its uid read once).
    async fn owner(&mut self) -> Result<OwnerReference, PublishError> {
        let uid = match &self.node_uid {
            Some(uid) => uid.clone(),
            None => {
                let node = Api::<Node>::all(self.kube.clone())
                    .get(&self.node_name)
                    .await
                    .map_err(|source| PublishError::Node {
                        node: self.node_name.clone(),
                        source,
                    })?;
                let uid = node.metadata.uid.unwrap_or_default();
                self.node_uid = Some(uid.clone());
                uid
            }
        };
        Ok(OwnerReference {
            api_version: "v1".to_owned(),
            kind: "Node".to_owned(),
            name: self.node_name.clone(),
            uid,
            controller: Some(true),
            block_owner_deletion: None,
        })
    }
}

fn write_error(action: &'static str, slice: String, source: kube::Error) -> PublishError {
    PublishError::Write {
        action,
        slice,
        source,
    }
}
