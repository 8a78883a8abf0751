//! The gRPC service: one short method per RPC. Unwrap the request, convert,
//! make one engine call on the blocking pool, convert back (WatchInventory:
//! and WatchActivity: a stream from `watch_streams`; GetActivity: the
//! sampler's latest snapshot, or a fresh one when asked, listing the claim
//! table's claims; GetAdvice: the advice over the sampler's history;
//! SetClaimStatusState: kept on a board that GetStatus reads).
//! No business logic, no locks, no hardware here. Prepare and Unprepare
//! responses carry a [`Outcome`] extension for the latency metrics
//! (`super::observe`).

use std::sync::Arc;

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_server::GpuSlice;
use tokio::sync::watch;
use tonic::{Request, Response, Status};

use super::activity::{self, ActivityView};
use super::claim_status_state::{self, Board};
use super::{
    advice, compute_domains, convert, health, mig_layout, mig_offering, sharing, watch_streams,
};
use crate::claims::{Engine, Prepared, Unprepared};
use crate::compute_domains::{Domains, PreparedChannel};
use crate::metrics::Outcome;
use crate::node::Node;

/// The API over one engine.
#[derive(Debug, Clone)]
pub struct Service {
    /// The claim engine, its MIG offering and the channels (SetMigAdvertise,
    /// the channel RPCs: unimplemented where it serves none).
    node: Node,
    /// Turns true when the daemon starts stopping: open watches end.
    stopping: watch::Receiver<bool>,
    /// Per-claim GPU use (GetActivity, the warnings of GetStatus).
    activity: ActivityView,
    /// What the DRA plugin last said about claim status (SetClaimStatusState).
    claim_status: Arc<Board>,
}

impl Service {
    /// A service over `node`; streams end when `stopping` turns true.
    pub fn new(node: Node, stopping: watch::Receiver<bool>) -> Self {
        Self {
            node,
            stopping,
            activity: ActivityView::default(),
            claim_status: Arc::default(),
        }
    }

    /// Runs `f` on the blocking pool over the channel engine.
    async fn on_domains<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Domains) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let domains = self.node.domains().cloned().ok_or_else(|| {
            Status::unimplemented("this gpusliced prepares no ComputeDomain channels")
        })?;
        tokio::task::spawn_blocking(move || f(&domains))
            .await
            .map_err(|e| Status::internal(format!("channel task failed: {e}")))?
    }

    /// The same service showing `activity` (by default: sampling off, no
    /// simulated process folder).
    #[must_use]
    pub fn with_activity(mut self, activity: ActivityView) -> Self {
        self.activity = activity;
        self
    }

    /// Runs `f` on the blocking pool: engine calls do file I/O and NVML calls.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Engine) -> Result<T, Status> + Send + 'static,
    ) -> Result<T, Status> {
        let engine = Arc::clone(self.node.engine());
        tokio::task::spawn_blocking(move || f(&engine))
            .await
            .map_err(|e| Status::internal(format!("engine task failed: {e}")))?
    }
}

/// A response carrying `outcome` for the metrics layer.
fn marked<T>(reply: T, outcome: Outcome) -> Response<T> {
    let mut response = Response::new(reply);
    response.extensions_mut().insert(outcome);
    response
}

#[tonic::async_trait]
impl GpuSlice for Service {
    type WatchInventoryStream = watch_streams::InventoryStream;
    type WatchActivityStream = watch_streams::ActivityStream;

    #[tracing::instrument(skip_all, fields(claim_uid = tracing::field::Empty))]
    async fn prepare(
        &self,
        request: Request<pb::PrepareRequest>,
    ) -> Result<Response<pb::PrepareResponse>, Status> {
        let req = convert::prepare_request(request.into_inner())?;
        tracing::Span::current().record("claim_uid", req.uid.as_str());
        let prepared = self
            .blocking(move |engine| engine.prepare(&req).map_err(convert::error))
            .await?;
        let outcome = match prepared {
            Prepared::Created(_) => Outcome::Prepared,
            Prepared::AlreadyPrepared(_) => Outcome::AlreadyPrepared,
        };
        Ok(marked(convert::prepare_response(&prepared), outcome))
    }

    #[tracing::instrument(skip_all, fields(claim_uid = tracing::field::Empty))]
    async fn unprepare(
        &self,
        request: Request<pb::UnprepareRequest>,
    ) -> Result<Response<pb::UnprepareResponse>, Status> {
        let uid = convert::claim_uid(request.into_inner().claim)?;
        tracing::Span::current().record("claim_uid", uid.as_str());
        let done = self
            .blocking(move |engine| engine.unprepare(&uid).map_err(convert::error))
            .await?;
        let outcome = match done {
            Unprepared::Removed => Outcome::Unprepared,
            Unprepared::NotPresent => Outcome::NotPrepared,
        };
        let reply = pb::UnprepareResponse {
            was_prepared: done == Unprepared::Removed,
        };
        Ok(marked(reply, outcome))
    }

    async fn get_inventory(
        &self,
        _request: Request<pb::GetInventoryRequest>,
    ) -> Result<Response<pb::GetInventoryResponse>, Status> {
        let offerings = Arc::clone(self.node.offerings());
        let reply = self
            .blocking(move |engine| {
                Ok(offerings.read(|in_force| {
                    let view = engine.view();
                    let mut reply = convert::inventory_response(&view);
                    let offering = view.inventory.mig_offering;
                    reply.mig_advertise = Some(mig_offering::inventory_state(in_force, offering));
                    reply
                }))
            })
            .await?;
        Ok(Response::new(reply))
    }

    async fn set_mig_advertise(
        &self,
        request: Request<pb::SetMigAdvertiseRequest>,
    ) -> Result<Response<pb::MigAdvertiseState>, Status> {
        let asked = mig_offering::asked(request.into_inner())?;
        let offerings = Arc::clone(self.node.offerings());
        let in_force = self
            .blocking(move |engine| offerings.ask(engine, asked).map_err(convert::error))
            .await?;
        Ok(Response::new(mig_offering::state(&in_force)))
    }

    async fn watch_inventory(
        &self,
        _request: Request<pb::WatchInventoryRequest>,
    ) -> Result<Response<Self::WatchInventoryStream>, Status> {
        Ok(Response::new(watch_streams::stream(
            self.node.engine().watch_generation(),
            self.stopping.clone(),
        )))
    }

    async fn watch_activity(
        &self,
        _request: Request<pb::WatchActivityRequest>,
    ) -> Result<Response<Self::WatchActivityStream>, Status> {
        Ok(Response::new(watch_streams::activity_stream(
            self.activity.handle.watch(),
            self.stopping.clone(),
        )))
    }

    async fn list_claims(
        &self,
        _request: Request<pb::ListClaimsRequest>,
    ) -> Result<Response<pb::ListClaimsResponse>, Status> {
        let reply = self
            .blocking(|engine| Ok(convert::claims_response(engine)))
            .await?;
        Ok(Response::new(reply))
    }

    async fn get_status(
        &self,
        _request: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::GetStatusResponse>, Status> {
        let offerings = Arc::clone(self.node.offerings());
        let mut reply = self
            .blocking(move |engine| {
                let mut reply = convert::status_response(engine);
                reply.mig_advertise = Some(mig_offering::state(&offerings.in_force()));
                Ok(reply)
            })
            .await?;
        reply.warnings = activity::warning_lines(&self.activity.handle.latest());
        if let Some(dir) = &self.activity.sim_processes_dir {
            reply.sim_processes_dir = dir.display().to_string();
        }
        reply.claim_status = self.claim_status.state();
        Ok(Response::new(reply))
    }

    async fn set_claim_status_state(
        &self,
        request: Request<pb::ClaimStatusState>,
    ) -> Result<Response<pb::ClaimStatusState>, Status> {
        let said = claim_status_state::said(request.into_inner())?;
        let reply = claim_status_state::state(&said);
        self.claim_status.set(said);
        Ok(Response::new(reply))
    }

    async fn get_activity(
        &self,
        request: Request<pb::GetActivityRequest>,
    ) -> Result<Response<pb::GetActivityResponse>, Status> {
        let snapshot = if request.into_inner().fresh {
            self.activity.handle.fresh().await
        } else {
            self.activity.handle.latest()
        };
        let limits = self.activity.limits.clone();
        let reply = self
            .blocking(move |engine| {
                let now = crate::activity::current(&snapshot, engine);
                let report = limits.report();
                Ok(activity::activity_response(
                    &now,
                    &report,
                    activity::unix_now(),
                ))
            })
            .await?;
        Ok(Response::new(reply))
    }

    async fn get_advice(
        &self,
        _request: Request<pb::GetAdviceRequest>,
    ) -> Result<Response<pb::GetAdviceResponse>, Status> {
        let history = self.activity.handle.history().cloned();
        let settings = self.activity.advice;
        let reply = self
            .blocking(move |engine| {
                let node = history.map(|h| crate::advice::view::advice_now(engine, &h, settings));
                let now = activity::unix_now();
                Ok(advice::advice_response(node.as_ref(), settings, now))
            })
            .await?;
        Ok(Response::new(reply))
    }

    async fn get_mig_layout(
        &self,
        _request: Request<pb::GetMigLayoutRequest>,
    ) -> Result<Response<pb::GetMigLayoutResponse>, Status> {
        let reply = self
            .blocking(|engine| Ok(mig_layout::mig_layout_response(engine)))
            .await?;
        Ok(Response::new(reply))
    }

    async fn get_health(
        &self,
        _request: Request<pb::GetHealthRequest>,
    ) -> Result<Response<pb::GetHealthResponse>, Status> {
        let reply = self
            .blocking(|engine| Ok(health::health_response(engine)))
            .await?;
        Ok(Response::new(reply))
    }

    #[tracing::instrument(skip_all, fields(device = tracing::field::Empty))]
    async fn clear_health(
        &self,
        request: Request<pb::ClearHealthRequest>,
    ) -> Result<Response<pb::ClearHealthResponse>, Status> {
        let device = convert::device_name(request.into_inner().device)?;
        tracing::Span::current().record("device", device.as_str());
        let cleared = self
            .blocking(move |engine| engine.clear_health(&device).map_err(convert::error))
            .await?;
        Ok(Response::new(health::clear_response(cleared)))
    }

    async fn get_sharing(
        &self,
        _request: Request<pb::GetSharingRequest>,
    ) -> Result<Response<pb::GetSharingResponse>, Status> {
        let reply = self
            .blocking(|engine| Ok(sharing::sharing_response(engine)))
            .await?;
        Ok(Response::new(reply))
    }

    #[tracing::instrument(skip_all, fields(claim_uid = tracing::field::Empty))]
    async fn prepare_channel(
        &self,
        request: Request<pb::PrepareChannelRequest>,
    ) -> Result<Response<pb::PrepareResponse>, Status> {
        let req = compute_domains::channel_request(request.into_inner())?;
        tracing::Span::current().record("claim_uid", req.uid.as_str());
        let prepared = self
            .on_domains(move |d| d.prepare(&req).map_err(compute_domains::error))
            .await?;
        let outcome = match prepared {
            PreparedChannel::Created(_) => Outcome::Prepared,
            PreparedChannel::AlreadyPrepared(_) => Outcome::AlreadyPrepared,
        };
        Ok(marked(compute_domains::prepared(&prepared), outcome))
    }

    #[tracing::instrument(skip_all, fields(claim_uid = tracing::field::Empty))]
    async fn unprepare_channel(
        &self,
        request: Request<pb::UnprepareRequest>,
    ) -> Result<Response<pb::UnprepareResponse>, Status> {
        let uid = convert::claim_uid(request.into_inner().claim)?;
        tracing::Span::current().record("claim_uid", uid.as_str());
        let was_prepared = self
            .on_domains(move |d| d.unprepare(&uid).map_err(compute_domains::error))
            .await?;
        let outcome = if was_prepared {
            Outcome::Unprepared
        } else {
            Outcome::NotPrepared
        };
        Ok(marked(pb::UnprepareResponse { was_prepared }, outcome))
    }

    async fn set_domain_members(
        &self,
        request: Request<pb::SetDomainMembersRequest>,
    ) -> Result<Response<pb::SetDomainMembersResponse>, Status> {
        let req = request.into_inner();
        let members = compute_domains::members(&req.members);
        let (changed, skipped) = self
            .on_domains(move |d| {
                d.set_members(&req.domain, &members)
                    .map_err(compute_domains::error)
            })
            .await?;
        Ok(Response::new(pb::SetDomainMembersResponse {
            changed,
            skipped,
        }))
    }

    async fn list_domains(
        &self,
        _request: Request<pb::ListDomainsRequest>,
    ) -> Result<Response<pb::ListDomainsResponse>, Status> {
        let reply = self
            .on_domains(|d| {
                Ok(pb::ListDomainsResponse {
                    domains: d
                        .list()
                        .into_iter()
                        .map(compute_domains::domain_info)
                        .collect(),
                    clique: d.clique().unwrap_or_default().to_owned(),
                    bind_address: d
                        .bind_address()
                        .map(|ip| ip.to_string())
                        .unwrap_or_default(),
                    rack_network: d
                        .rack_network()
                        .networks()
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                })
            })
            .await?;
        Ok(Response::new(reply))
    }
}
