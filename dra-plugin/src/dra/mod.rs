//! The kubelet's DRA calls, version-neutral: one core both gRPC versions
//! ([`v1`], [`v1beta1`]) adapt to, one core per driver served. Prepare reads
//! each claim from the API server, checks it ([`crate::claim`]) and forwards
//! to gpusliced (GPUs to `Prepare`, the ComputeDomain driver's IMEX channels
//! to `PrepareChannel`, see [`Forward`], with the ComputeDomain it vouches
//! for, checked by [`channel`]); Unprepare forwards by uid. Every
//! claim asked about gets an entry in the answer, with an error string where
//! it failed (the kubelet retries those claims).

pub mod channel;
pub mod v1;
pub mod v1beta1;

use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::api::resource::v1::ResourceClaim;
use kube::Api;
use tracing::{info, warn};

use crate::claim::{self, ClaimError};
use crate::gpusliced::GpuSlice;
use crate::proto::dra_v1 as api;
pub use channel::{ChannelRefusal, ChannelSide};

/// Why one claim could not be prepared or unprepared.
#[derive(Debug, thiserror::Error)]
pub enum ClaimCallError {
    /// The API server did not give us the claim.
    #[error("cannot read ResourceClaim {claim} from the API server: {error}")]
    ReadClaim {
        /// `namespace/name`.
        claim: String,
        /// kube's error.
        error: kube::Error,
    },
    /// The claim is not one we can prepare.
    #[error(transparent)]
    Claim(#[from] ClaimError),
    /// A channel claim refused before gpusliced: another node's, or its
    /// ComputeDomain not the claim namespace's.
    #[error(transparent)]
    Channel(#[from] ChannelRefusal),
    /// gpusliced answered with an error status.
    #[error("gpusliced refused claim {claim} ({code:?}): {message}")]
    Gpusliced {
        /// `namespace/name`.
        claim: String,
        /// The gRPC code.
        code: tonic::Code,
        /// gpusliced's message.
        message: String,
    },
}

/// Which of gpusliced's calls a driver's claims go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forward {
    /// GPUs and their slices: `Prepare` and `Unprepare`.
    Gpus,
    /// ComputeDomain IMEX channels: `PrepareChannel` and `UnprepareChannel`.
    Channels,
}

/// What the DRA services of one driver share.
#[derive(Clone)]
pub struct DraCore {
    driver: String,
    forward: Forward,
    kube: kube::Client,
    gpusliced: GpuSlice,
    /// The channel driver's checks (with [`Forward::Channels`]).
    channels: Option<ChannelSide>,
}

impl std::fmt::Debug for DraCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DraCore")
            .field("driver", &self.driver)
            .field("forward", &self.forward)
            .finish_non_exhaustive()
    }
}

impl DraCore {
    /// A core for `driver` using these clients, forwarding as `forward`.
    pub fn new(driver: String, forward: Forward, kube: kube::Client, gpusliced: GpuSlice) -> Self {
        Self {
            driver,
            forward,
            kube,
            gpusliced,
            channels: None,
        }
    }

    /// The same core checking channel claims with `side` (their node, their
    /// ComputeDomain) and waking its loop after each.
    #[must_use]
    pub fn with_channels(mut self, side: ChannelSide) -> Self {
        self.channels = Some(side);
        self
    }

    /// NodePrepareResources: one entry per claim uid. Claims are handled
    /// concurrently, so one slow claim does not hold up the others.
    pub async fn prepare(&self, claims: Vec<api::Claim>) -> api::NodePrepareResourcesResponse {
        api::NodePrepareResourcesResponse {
            claims: self.each_claim(claims, Self::prepare_entry).await,
        }
    }

    /// NodeUnprepareResources: one entry per claim uid; unknown claims
    /// succeed. Claims are handled concurrently.
    pub async fn unprepare(&self, claims: Vec<api::Claim>) -> api::NodeUnprepareResourcesResponse {
        api::NodeUnprepareResourcesResponse {
            claims: self.each_claim(claims, Self::unprepare_entry).await,
        }
    }

    /// Runs `one` for each claim concurrently, on a clone of this core;
    /// every claim's uid with its entry.
    async fn each_claim<Entry, Answer, Entries>(
        &self,
        claims: Vec<api::Claim>,
        one: impl Fn(Self, api::Claim) -> Answer,
    ) -> Entries
    where
        Answer: Future<Output = Entry> + Send + 'static,
        Entry: Send + 'static,
        Entries: FromIterator<(String, Entry)>,
    {
        let mut tasks = tokio::task::JoinSet::new();
        for claim in claims {
            let uid = claim.uid.clone();
            let answer = one(self.clone(), claim);
            tasks.spawn(async move { (uid, answer.await) });
        }
        tasks.join_all().await.into_iter().collect()
    }

    /// One claim's prepare, logged: its devices, or the error the kubelet
    /// retries.
    async fn prepare_entry(self, claim: api::Claim) -> api::NodePrepareResourceResponse {
        match self.prepare_one(&claim).await {
            Ok(devices) => {
                info!(claim_uid = %claim.uid, namespace = %claim.namespace, name = %claim.name,
                      devices = devices.len(), "prepared");
                api::NodePrepareResourceResponse {
                    devices,
                    error: String::new(),
                }
            }
            Err(err) => {
                warn!(claim_uid = %claim.uid, namespace = %claim.namespace, name = %claim.name,
                      error = %err, "prepare failed; the kubelet will retry");
                api::NodePrepareResourceResponse {
                    devices: Vec::new(),
                    error: err.to_string(),
                }
            }
        }
    }

    /// One claim's unprepare, logged: an empty error, or the one the kubelet
    /// retries.
    async fn unprepare_entry(self, claim: api::Claim) -> api::NodeUnprepareResourceResponse {
        let error = match self.unprepare_one(&claim).await {
            Ok(was_prepared) => {
                info!(claim_uid = %claim.uid, was_prepared, "unprepared");
                String::new()
            }
            Err(err) => {
                warn!(claim_uid = %claim.uid, error = %err, "unprepare failed; the kubelet will retry");
                err.to_string()
            }
        };
        api::NodeUnprepareResourceResponse { error }
    }

    async fn prepare_one(&self, claim: &api::Claim) -> Result<Vec<api::Device>, ClaimCallError> {
        let id = format!("{}/{}", claim.namespace, claim.name);
        let object = Api::<ResourceClaim>::namespaced(self.kube.clone(), &claim.namespace)
            .get(&claim.name)
            .await
            .map_err(|error| ClaimCallError::ReadClaim {
                claim: id.clone(),
                error,
            })?;
        let plan = claim::plan(&object, &claim.uid, &self.driver)?;
        let request = pb::PrepareRequest {
            claim: Some(claim_ref(claim)),
            devices: plan.devices.clone(),
            configs: plan.configs.clone(),
        };
        let mut gpusliced = self.gpusliced.clone();
        let reply = match self.forward {
            Forward::Gpus => gpusliced.prepare(request).await,
            Forward::Channels => {
                let domain = match &self.channels {
                    Some(side) => Some(side.vouch(&id, &claim.namespace, &plan).await?),
                    None => None,
                };
                let reply = gpusliced
                    .prepare_channel(pb::PrepareChannelRequest {
                        claim: Some(request),
                        domain,
                    })
                    .await;
                self.wake_domains();
                reply
            }
        }
        .map_err(|status| gpusliced_error(&id, &status))?
        .into_inner();
        Ok(reply
            .devices
            .into_iter()
            .map(|d| api::Device {
                request_names: d.request_names,
                pool_name: d.pool,
                device_name: d.device,
                cdi_device_ids: d.cdi_device_ids,
                share_id: (!d.share_id.is_empty()).then_some(d.share_id),
            })
            .collect())
    }

    async fn unprepare_one(&self, claim: &api::Claim) -> Result<bool, ClaimCallError> {
        let id = format!("{}/{}", claim.namespace, claim.name);
        let request = pb::UnprepareRequest {
            claim: Some(claim_ref(claim)),
        };
        let mut gpusliced = self.gpusliced.clone();
        let reply = match self.forward {
            Forward::Gpus => gpusliced.unprepare(request).await,
            Forward::Channels => {
                let reply = gpusliced.unprepare_channel(request).await;
                self.wake_domains();
                reply
            }
        }
        .map_err(|status| gpusliced_error(&id, &status))?;
        Ok(reply.into_inner().was_prepared)
    }
}

impl DraCore {
    /// Wakes the loop keeping the ComputeDomains (a channel came or went).
    fn wake_domains(&self) {
        if let Some(side) = &self.channels {
            side.wake.notify_one();
        }
    }
}

fn claim_ref(claim: &api::Claim) -> pb::ClaimRef {
    pb::ClaimRef {
        uid: claim.uid.clone(),
        namespace: claim.namespace.clone(),
        name: claim.name.clone(),
    }
}

fn gpusliced_error(claim: &str, status: &tonic::Status) -> ClaimCallError {
    ClaimCallError::Gpusliced {
        claim: claim.to_owned(),
        code: status.code(),
        message: status.message().to_owned(),
    }
}
