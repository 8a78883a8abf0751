//! A tower layer around the whole gRPC server that feeds the event metrics:
//! every RPC's status code (`gpuslice_errors_total`) and the latency of
//! Prepare and Unprepare, from the request's arrival to its response headers.
//!
//! It sits outside the peer check and the decoder, so refusals
//! (PERMISSION_DENIED) and oversized requests (OUT_OF_RANGE) are counted too.
//! A unary error is a trailers-only response: its `grpc-status` is in the
//! headers; a success carries its status in the trailers, so a response
//! without the header is OK. The service marks successful Prepare and
//! Unprepare responses with a [`metrics::Outcome`] extension, read here.
//! The `rpc` label is taken only from the service's known methods, never
//! from the client's path as sent, so it cannot grow without bound.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tonic::codegen::http;

use crate::metrics::{self, Metrics};

/// The service's methods, as the `rpc` label spells them.
const METHODS: [&str; 19] = [
    "Prepare",
    "Unprepare",
    "GetInventory",
    "ListClaims",
    "GetStatus",
    "GetMigLayout",
    "GetHealth",
    "ClearHealth",
    "GetSharing",
    "WatchInventory",
    "WatchActivity",
    "SetMigAdvertise",
    "GetActivity",
    "GetAdvice",
    "SetClaimStatusState",
    "PrepareChannel",
    "UnprepareChannel",
    "SetDomainMembers",
    "ListDomains",
];

/// The `rpc` label of a request path `/gpuslice.v1.GpuSlice/<Method>`.
pub fn rpc_of(path: &str, service: &str) -> &'static str {
    let method = path
        .strip_prefix('/')
        .and_then(|p| p.strip_prefix(service))
        .and_then(|p| p.strip_prefix('/'));
    METHODS
        .iter()
        .copied()
        .find(|m| Some(*m) == method)
        .unwrap_or("unknown")
}

/// The status code of a response (see the module doc).
fn status_code(headers: &http::HeaderMap) -> tonic::Code {
    headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i32>().ok())
        .map_or(tonic::Code::Ok, tonic::Code::from_i32)
}

/// Wraps a service with [`Observe`].
#[derive(Debug, Clone)]
pub struct ObserveLayer {
    metrics: Arc<Metrics>,
    service: &'static str,
}

impl ObserveLayer {
    /// A layer feeding `metrics`, for the gRPC service named `service`.
    pub fn new(metrics: Arc<Metrics>, service: &'static str) -> Self {
        Self { metrics, service }
    }
}

impl<S> tower::Layer<S> for ObserveLayer {
    type Service = Observe<S>;

    fn layer(&self, inner: S) -> Observe<S> {
        Observe {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service [`ObserveLayer`] makes.
#[derive(Debug, Clone)]
pub struct Observe<S> {
    inner: S,
    layer: ObserveLayer,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> tower::Service<http::Request<B>> for Observe<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let rpc = rpc_of(request.uri().path(), self.layer.service);
        let started = Instant::now();
        let metrics = self.layer.metrics.clone();
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await;
            if let Ok(response) = &response {
                let code = status_code(response.headers());
                let outcome = if code == tonic::Code::Ok {
                    response.extensions().get::<metrics::Outcome>().copied()
                } else {
                    metrics.count_error(rpc, code);
                    None
                };
                metrics.observe(rpc, outcome, started.elapsed());
            }
            response
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_methods_become_labels() {
        let svc = "gpuslice.v1.GpuSlice";
        assert_eq!(rpc_of("/gpuslice.v1.GpuSlice/Prepare", svc), "Prepare");
        assert_eq!(
            rpc_of("/gpuslice.v1.GpuSlice/GetMigLayout", svc),
            "GetMigLayout"
        );
        assert_eq!(rpc_of("/gpuslice.v1.GpuSlice/Nope", svc), "unknown");
        assert_eq!(rpc_of("/other.Service/Prepare", svc), "unknown");
        assert_eq!(rpc_of("/gpuslice.v1.GpuSlice/Prepare/x", svc), "unknown");
    }

    #[test]
    fn every_rpc_of_the_proto_has_a_label() {
        let proto = include_str!("../../../proto/gpuslice/v1/gpuslice.proto");
        let rpcs: Vec<&str> = proto
            .lines()
            .filter_map(|l| l.trim().strip_prefix("rpc "))
            .filter_map(|l| l.split('(').next())
            .map(str::trim)
            .collect();
        assert_eq!(rpcs.len(), METHODS.len(), "{rpcs:?}");
        for rpc in rpcs {
            let path = format!("/gpuslice.v1.GpuSlice/{rpc}");
            assert_eq!(rpc_of(&path, "gpuslice.v1.GpuSlice"), rpc);
        }
    }

    #[test]
    fn a_response_without_grpc_status_is_ok() {
        let mut headers = http::HeaderMap::new();
        assert_eq!(status_code(&headers), tonic::Code::Ok);
        headers.insert("grpc-status", http::HeaderValue::from_static("9"));
        assert_eq!(status_code(&headers), tonic::Code::FailedPrecondition);
    }
}
