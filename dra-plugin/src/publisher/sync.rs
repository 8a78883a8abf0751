//! One sync: settle the MIG advertise form (`super::mig_form`), read the
//! inventory, build the pool (the channel pool: built as it is), and (unless nothing can
//! have changed) list our slices, plan ([`crate::sync_plan`]) and write.
//!
//! The API server is not asked at all when the pool built from the
//! inventory equals the one published last and no foreign change or relist
//! was seen since (`dirty`): an inventory change that publishes nothing new
//! (a claim prepared, say) costs one GetInventory. Otherwise it lists (field
//! selector `spec.nodeName=<node>,spec.driver=<driver>`, the only list the
//! node authorizer allows) and writes what differs, noting each write's
//! echo for the slice watch.

use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{ResourceSlice, ResourceSliceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams, Preconditions};
use tracing::warn;

use super::{PoolKind, PublishError, Publisher, SyncReport};
use crate::probe::Verdict;
use crate::slice_watch::selector;
use crate::slices::{self, BuiltPool, PoolTarget};
use crate::sync_plan::{self, Existing, Write};

impl Publisher {
    /// One comparison and the writes it needs.
    pub async fn sync_once(&mut self) -> Result<SyncReport, PublishError> {
        let built = self.build().await?;
        if !self.dirty && self.last_built.as_ref() == Some(&built.slices) {
            return Ok(SyncReport {
                generation: self.last_published,
                writes: 0,
                listed: false,
            });
        }
        for problem in &built.skipped {
            warn!(error = %problem, "not published");
        }
        let owner = self.owner().await?;
        let api = Api::<ResourceSlice>::all(self.kube.clone());
        let listed = api
            .list(&ListParams::default().fields(&selector(&self.node_name, &self.driver)))
            .await
            .map_err(|error| PublishError::List {
                node: self.node_name.clone(),
                error,
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
        self.last_built = Some(built.slices);
        self.dirty = false;
        Ok(SyncReport {
            generation: plan.generation,
            writes,
            listed: true,
        })
    }

    /// The pool as it should be, at generation 0.
    async fn build(&mut self) -> Result<BuiltPool, PublishError> {
        if self.pool == PoolKind::Channels {
            return Ok(crate::compute_domains::pool(&self.node_name));
        }
        self.settle_mig_form().await?;
        let inventory = self
            .gpusliced
            .get_inventory(pb::GetInventoryRequest {})
            .await
            .map_err(PublishError::Inventory)?
            .into_inner();
        let target = PoolTarget {
            driver: &self.driver,
            node_name: &self.node_name,
            taint_unhealthy: self.taint_unhealthy,
            consumable_capacity: self.consumable_capacity,
        };
        Ok(slices::build_pool(&inventory, &target, 0))
    }

    async fn apply(
        &mut self,
        api: &Api<ResourceSlice>,
        owner: &OwnerReference,
        write: Write,
    ) -> Result<(), PublishError> {
        match write {
            Write::Create(spec) => {
                let prefix = format!("{}-{}-", self.node_name, self.driver);
                let slice = self.slice(None, None, owner, spec);
                let created = api.create(&PostParams::default(), &slice).await;
                let created = self.written("create", prefix, &slice, created)?;
                self.echo(&created);
            }
            Write::Update {
                name,
                resource_version,
                spec,
            } => {
                let slice = self.slice(Some(name.clone()), resource_version, owner, spec);
                let updated = api.replace(&name, &PostParams::default(), &slice).await;
                let updated = self.written("update", name, &slice, updated)?;
                self.echo(&updated);
            }
            Write::Delete {
                name,
                uid,
                resource_version,
            } => {
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: uid.clone(),
                        resource_version,
                    }),
                    ..DeleteParams::default()
                };
                api.delete(&name, &params)
                    .await
                    .map_err(|source| write_error("delete", name.clone(), source))?;
                if let Some(uid) = uid {
                    self.echoes.deleted(&name, &uid);
                }
            }
        }
        self.writes_taken += 1;
        Ok(())
    }

    /// A create's or update's answer: an error, or the slice as stored. A
    /// refusal as invalid or forbidden, or an answer that lost counters we
    /// sent, means the API server is not what the probe found: probe again.
    /// Anything else (a conflict, a rate limit, a server error, a slice
    /// gone) says nothing about it: the verdict is kept for the retry.
    fn written(
        &mut self,
        action: &'static str,
        slice: String,
        sent: &ResourceSlice,
        answer: Result<ResourceSlice, kube::Error>,
    ) -> Result<ResourceSlice, PublishError> {
        let stored = answer.map_err(|source| {
            let refused = crate::probe::refusal(&source).map(|r| r.verdict);
            if matches!(refused, Some(Verdict::Invalid | Verdict::Forbidden)) {
                self.probe_again();
            }
            write_error(action, slice.clone(), source)
        })?;
        if let Some(field) = crate::advertise::dropped(&sent.spec, &stored.spec) {
            self.probe_again();
            self.echo(&stored);
            return Err(PublishError::Dropped { slice, field });
        }
        Ok(stored)
    }

    /// The watch will report this write: not a reason to sync again.
    fn echo(&mut self, written: &ResourceSlice) {
        if let (Some(name), Some(version)) =
            (&written.metadata.name, &written.metadata.resource_version)
        {
            self.echoes.wrote(name, version);
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
    pub(super) async fn owner(&mut self) -> Result<OwnerReference, PublishError> {
        let uid = match &self.node_uid {
            Some(uid) => uid.clone(),
            None => {
                let node = Api::<Node>::all(self.kube.clone())
                    .get(&self.node_name)
                    .await
                    .map_err(|error| PublishError::Node {
                        node: self.node_name.clone(),
                        error,
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

fn write_error(action: &'static str, slice: String, error: kube::Error) -> PublishError {
    PublishError::Write {
        action,
        slice,
        error,
    }
}
