//! The loopback listener: `GET /metrics` over HTTP/1.1 (hyper), nothing else.
//!
//! Bound to a loopback address only (config validation refuses others).
//! Resource bounds, since any local user can connect: at most
//! [`MAX_CONNECTIONS`] at once (further ones wait in the kernel's backlog),
//! and a connection that sends no complete request header within
//! [`HEADER_TIMEOUT`] (including an idle keep-alive one) is closed.
//! `GET` and `HEAD` of `/metrics` answer 200 in the negotiated format; other
//! paths 404, other methods 405. Stop closes the listener and gives open
//! connections [`DRAIN`] to finish their response.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{ACCEPT, ALLOW, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, oneshot};
use tokio::task::JoinHandle;

use super::{Format, Metrics, MetricsError, UsageSource, scrape};

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 16;
/// Bound for a client to send a request header.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound for open connections to finish at shutdown.
pub const DRAIN: Duration = Duration::from_secs(5);

/// A running listener.
#[derive(Debug)]
pub struct Listener {
    addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Listener {
    /// Binds `addr` and serves until [`Listener::stop`].
    pub async fn start(
        addr: SocketAddr,
        source: Arc<dyn UsageSource>,
        metrics: Arc<Metrics>,
    ) -> Result<Self, MetricsError> {
        let bind = |error| MetricsError::Bind { addr, error };
        let listener = TcpListener::bind(addr).await.map_err(bind)?;
        let bound = listener.local_addr().map_err(bind)?;
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, source, metrics, stopped));
        Ok(Self {
            addr: bound,
            stop,
            task,
        })
    }

    /// The address actually bound (the port chosen when the config said 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Closes the listener and waits for open connections (at most [`DRAIN`]).
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if let Err(err) = self.task.await {
            tracing::warn!(error = %err, "metrics listener task failed");
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    source: Arc<dyn UsageSource>,
    metrics: Arc<Metrics>,
    mut stopped: oneshot::Receiver<()>,
) {
    let graceful = GracefulShutdown::new();
    let limit = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => break,
            permit = limit.clone().acquire_owned() => match permit {
                Ok(permit) => tokio::select! {
                    _ = &mut stopped => break,
                    accepted = listener.accept() => accepted.map(|conn| (conn, permit)),
                },
                Err(_) => break,
            },
        };
        let ((stream, _peer), permit) = match accepted {
            Ok(conn) => conn,
            Err(err) => {
                // EMFILE and the like: back off instead of spinning.
                tracing::warn!(error = %err, "metrics listener: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let (source, metrics) = (source.clone(), metrics.clone());
        let service = hyper::service::service_fn(move |req| {
            let (source, metrics) = (source.clone(), metrics.clone());
            async move { Ok::<_, Infallible>(respond(req, &source, &metrics).await) }
        });
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(err) = conn.await {
                tracing::debug!(error = %err, "metrics connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(grace = ?DRAIN, "metrics connections still open at shutdown; closing them");
    }
}

async fn respond(
    req: Request<Incoming>,
    source: &Arc<dyn UsageSource>,
    metrics: &Arc<Metrics>,
) -> Response<Full<Bytes>> {
    if req.uri().path() != "/metrics" {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: metrics are at /metrics\n",
        );
    }
    // hyper sends no body in answer to HEAD, only the headers.
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "use GET\n");
        response
            .headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let accept = req.headers().get(ACCEPT).and_then(|v| v.to_str().ok());
    let format = Format::negotiate(accept);
    match scrape(source, metrics, format).await {
        Ok(text) => {
            let mut response = Response::new(Full::new(Bytes::from(text)));
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(format.content_type()),
            );
            response
        }
        Err(err) => {
            tracing::error!(error = %err, "metrics scrape failed");
            plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "metrics unavailable; see the journal\n",
            )
        }
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *response.status_mut() = status;
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}
