//! The gRPC API (gpuslice.v1) on a local unix socket.
//!
//! [`socket`] binds the socket (mode 0660, group from config) and refuses to
//! steal one a live daemon still serves; [`peer`] admits root, the daemon's
//! own user and the configured group only (SO_PEERCRED); [`service`] is a thin
//! adapter, one short method per RPC; [`convert`] turns proto messages into
//! domain types and back; [`grpc_status`] is the one place domain errors become
//! gRPC codes; `mig_offering` converts SetMigAdvertise and the offering in force;
//! `claim_status_state` keeps what the DRA plugin last said about claim
//! status (SetClaimStatusState) for GetStatus;
//! `watch_streams` streams the inventory generation
//! (WatchInventory) and each activity sample (WatchActivity) until shutdown;
//! `activity` turns the sampler's latest snapshot into GetActivity and the
//! warnings of GetStatus; `advice` turns the node's advice into GetAdvice;
//! `domains` converts the channel RPCs of ComputeDomains and their errors;
//! [`observe`] is a tower layer that feeds
//! the event metrics (status codes, Prepare and Unprepare latency) from every
//! response.

mod activity;
mod advice;
mod claim_status_state;
mod compute_domains;
mod convert;
mod grpc_status;
mod health;
mod mig_layout;
mod mig_offering;
pub mod observe;
pub mod peer;
mod service;
mod sharing;
pub mod socket;
#[cfg(test)]
mod tests;
mod watch_streams;

use std::sync::Arc;

use gpuslice_proto::gpuslice::v1::gpu_slice_server::{GpuSliceServer, SERVICE_NAME};
use tokio::net::UnixListener;
use tokio::sync::watch;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::service::interceptor::InterceptedService;

use crate::metrics::Metrics;
pub use activity::ActivityView;
pub use observe::ObserveLayer;
pub use peer::PeerPolicy;
pub use service::Service;
// The Prepare conversion and the error-to-status mapping the service applies,
// public so the fuzz targets (fuzz/) drive exactly what a request goes through.
pub use convert::{MAX_FIELD, prepare_request};
// What GetInventory answers, public so the DRA plugin's contract test builds
// the node's ResourceSlices from exactly what the socket would serve.
pub use convert::inventory_response;
pub use grpc_status::error as grpc_status;

/// Largest request accepted: a prepare is a few KB; anything near this is
/// hostile and is refused (OUT_OF_RANGE) before it is decoded.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;

/// Serves the API on `listener` until `stopping` turns true, then ends the
/// open inventory watches, finishes the requests in flight and returns.
/// Every call is counted in `metrics`. `service` is built over the same
/// `stopping` ([`Service::new`]).
pub async fn serve(
    listener: UnixListener,
    service: Service,
    policy: PeerPolicy,
    metrics: Arc<Metrics>,
    stopping: watch::Receiver<bool>,
) -> Result<(), tonic::transport::Error> {
    let server = GpuSliceServer::new(service).max_decoding_message_size(MAX_REQUEST_BYTES);
    let service = InterceptedService::new(server, move |req| policy.check(req));
    tonic::transport::Server::builder()
        .layer(ObserveLayer::new(metrics, SERVICE_NAME))
        .add_service(service)
        .serve_with_incoming_shutdown(UnixListenerStream::new(listener), stopped(stopping))
        .await
}

/// Resolves once `stopping` turns true (or its sender is gone).
pub async fn stopped(mut stopping: watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}
