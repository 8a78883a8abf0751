//! Start-up, serving and shutdown, as named tasks under one `select!`.
//!
//! Order: API-server and gpusliced clients; the DRA socket served (v1 and
//! v1beta1, and the device-health watch in v1 and v1alpha1) before the
//! registration socket appears, so the kubelet never dials an endpoint that
//! is not there; then the publisher and what wakes it: the follower of
//! gpusliced's inventory and the watch of our slices; then the claim-status
//! writer (with its own API-server identity when `[claim_status] kubeconfig`
//! is set), or, with `[claim_status] mode = "off"`, only what tells
//! gpusliced that it is off. The process ends on
//! SIGTERM or SIGINT (success), when the kubelet refuses the registration or
//! a server fails (errors). Either way both sockets are closed and removed.

use std::sync::Arc;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::UnixListenerStream;
use tonic::transport::Server;
use tracing::{info, warn};

use crate::claim_status::{entries, plan, task as claim_status, tell};
use crate::config::{ApiAccess, ClaimStatusMode, Resolved};
use crate::dra::{DraCore, v1::V1Service, v1beta1::V1beta1Service};
use crate::health::{HealthCore, v1::V1HealthService, v1alpha1::V1alpha1HealthService};
use crate::publisher::{Publisher, Triggers};
use crate::registration::{RegistrationService, RegistrationState};
use crate::slices::PoolTarget;
use crate::sockets::{self, SocketError};
use crate::{gpusliced, gpusliced_watch, slice_watch};

/// How long calls in flight may take to finish at shutdown.
const DRAIN: Duration = Duration::from_secs(5);

/// Slice watch events waiting for the publisher (a busy publisher holds the
/// watch back beyond this).
const SLICE_EVENTS: usize = 64;

/// Why the shim stopped other than by a signal.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The kubeconfig or in-cluster credentials could not be loaded.
    #[error("cannot set up the API-server client ({what}): {message}")]
    ApiClient {
        /// Which access was tried.
        what: String,
        /// kube's message.
        message: String,
    },
    /// A socket could not be set up.
    #[error(transparent)]
    Socket(#[from] SocketError),
    /// Signal handlers could not be installed.
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    /// The kubelet refused the plugin.
    #[error("the kubelet refused to register the plugin: {0}")]
    Refused(String),
    /// A gRPC server stopped by itself.
    #[error("the {server} server stopped: {message}")]
    Server {
        /// "DRA" or "registration".
        server: &'static str,
        /// Why.
        message: String,
    },
}

/// Runs the DRA plugin until a signal (Ok) or a failure (Err).
pub async fn run(resolved: Resolved) -> Result<(), RunError> {
    let config = &resolved.config;
    let kube = kube_client(&resolved.api).await?;
    let status_kube = match (&config.claim_status.mode, &config.claim_status.kubeconfig) {
        (ClaimStatusMode::Off, _) => None,
        (ClaimStatusMode::Auto, None) => Some(kube.clone()),
        (ClaimStatusMode::Auto, Some(path)) => {
            Some(kube_client(&ApiAccess::Kubeconfig(path.clone())).await?)
        }
    };
    let gpusliced = gpusliced::connect_lazy(config.gpusliced_socket.clone());
    let mut sigterm = signal(SignalKind::terminate()).map_err(RunError::Signals)?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(RunError::Signals)?;
    let (stop, stopped) = watch::channel(false);

    let core = Arc::new(DraCore::new(
        config.driver_name.clone(),
        kube.clone(),
        gpusliced.clone(),
    ));
    let dra_path = config.dra_socket();
    let (dra_listener, dra_file) = sockets::bind(&dra_path)?;
    let health = HealthCore::new(
        gpusliced.clone(),
        resolved.node_name.clone(),
        Duration::from_secs(config.health_seconds),
        stopped.clone(),
    );
    let mut dra = serve(
        "DRA",
        Server::builder()
            .add_service(V1Service::server(Arc::clone(&core)))
            .add_service(V1beta1Service::server(core))
            .add_service(V1HealthService::server(health.clone()))
            .add_service(V1alpha1HealthService::server(health)),
        dra_listener,
        stopped.clone(),
    );

    let (registration, mut verdicts) =
        RegistrationService::server(&config.driver_name, dra_file.path());
    let (reg_listener, reg_file) = sockets::bind(&config.registration_socket())?;
    let mut reg = serve(
        "registration",
        Server::builder().add_service(registration),
        reg_listener,
        stopped.clone(),
    );
    info!(driver = %config.driver_name, node = %resolved.node_name, dra = %dra_path.display(),
          registration = %reg_file.path().display(), "serving; waiting for the kubelet");

    let tasks = Tasks::spawn(&resolved, kube, gpusliced, status_kube, stopped);

    let outcome = tokio::select! {
        _ = sigterm.recv() => { info!("SIGTERM: stopping"); Ok(()) }
        _ = sigint.recv() => { info!("SIGINT: stopping"); Ok(()) }
        refused = refused(&mut verdicts) => Err(RunError::Refused(refused)),
        ended = &mut dra => Err(server_ended("DRA", ended)),
        ended = &mut reg => Err(server_ended("registration", ended)),
    };
    stop.send_replace(true);
    for (name, task) in [("DRA", &mut dra), ("registration", &mut reg)] {
        if !task.is_finished() && tokio::time::timeout(DRAIN, task).await.is_err() {
            warn!(
                server = name,
                "calls still in flight after the drain time; closing anyway"
            );
        }
    }
    tasks.drain().await;
    drop(reg_file);
    drop(dra_file);
    outcome
}

/// The plugin's tasks beside its two gRPC servers: the ResourceSlice
/// publisher, the claim-status writer (or, with it off, what says so to
/// gpusliced), and the two watches that wake them.
struct Tasks {
    publishing: JoinHandle<()>,
    writing_status: JoinHandle<()>,
    following: JoinHandle<()>,
    watching: JoinHandle<()>,
}

impl Tasks {
    /// Starts them; they run until `stopped`.
    fn spawn(
        resolved: &Resolved,
        kube: kube::Client,
        gpusliced: gpusliced::GpuSlice,
        status_kube: Option<kube::Client>,
        stopped: watch::Receiver<bool>,
    ) -> Self {
        let config = &resolved.config;
        let target = PoolTarget {
            driver: &config.driver_name,
            node_name: &resolved.node_name,
            taint_unhealthy: config.taint_unhealthy,
            consumable_capacity: config.consumable_capacity,
        };
        let publisher = Publisher::new(
            kube.clone(),
            gpusliced.clone(),
            &target,
            Duration::from_secs(config.resync_seconds),
        );
        let (inventory_changes, inventory) = watch::channel(0u64);
        let writing_status = match status_kube {
            Some(status_kube) => tokio::spawn(claim_status::run(
                gpusliced.clone(),
                status_kube,
                claim_status_settings(resolved),
                inventory.clone(),
                stopped.clone(),
            )),
            None => tokio::spawn(tell::mode_off_until_shutdown(
                gpusliced.clone(),
                inventory.clone(),
                stopped.clone(),
            )),
        };
        let following = tokio::spawn(gpusliced_watch::inventory(
            gpusliced,
            inventory_changes,
            stopped.clone(),
        ));
        let (slice_events, slices) = mpsc::channel(SLICE_EVENTS);
        let watching = tokio::spawn(slice_watch::run(
            kube,
            slice_watch::selector(&resolved.node_name, &config.driver_name),
            slice_events,
            stopped.clone(),
        ));
        let publishing = tokio::spawn(publisher.run(Triggers {
            inventory,
            slices,
            shutdown: stopped,
        }));

        Self {
            publishing,
            writing_status,
            following,
            watching,
        }
    }

    /// Waits up to [`DRAIN`] for each to finish what it has in flight.
    async fn drain(self) {
        let Self {
            mut publishing,
            writing_status,
            following,
            watching,
        } = self;
        if tokio::time::timeout(DRAIN, &mut publishing).await.is_err() {
            warn!("a ResourceSlice write was still in flight; abandoned");
        }
        if tokio::time::timeout(DRAIN, writing_status).await.is_err() {
            warn!("a claim status write was still in flight; abandoned");
        }
        for (name, task) in [("inventory", following), ("ResourceSlice", watching)] {
            if tokio::time::timeout(DRAIN, task).await.is_err() {
                warn!(watch = name, "a watch did not stop in time; abandoned");
            }
        }
    }
}

fn claim_status_settings(resolved: &Resolved) -> claim_status::Settings {
    let status = &resolved.config.claim_status;
    claim_status::Settings {
        context: entries::Context {
            driver: resolved.config.driver_name.clone(),
            node: resolved.node_name.clone(),
            refresh_s: status.refresh_s,
        },
        budget: plan::WriteBudget {
            refresh: status.refresh_s.saturating_mul(1000),
            max_writes_per_minute: status.max_writes_per_minute,
        },
        recheck: status.recheck_s.saturating_mul(1000),
    }
}

async fn kube_client(api: &ApiAccess) -> Result<kube::Client, RunError> {
    let (what, config) = match api {
        ApiAccess::InCluster => (
            "in-cluster service account".to_owned(),
            kube::Config::incluster().map_err(|e| e.to_string()),
        ),
        ApiAccess::Kubeconfig(path) => {
            let what = format!("kubeconfig {}", path.display());
            let config = match Kubeconfig::read_from(path) {
                Ok(file) => {
                    kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
                        .await
                        .map_err(|e| e.to_string())
                }
                Err(e) => Err(e.to_string()),
            };
            (what, config)
        }
    };
    let fail = |message: String| RunError::ApiClient {
        what: what.clone(),
        message,
    };
    let config = config.map_err(fail)?;
    kube::Client::try_from(config).map_err(|e| fail(e.to_string()))
}

type Served = JoinHandle<Result<(), tonic::transport::Error>>;

fn serve(
    name: &'static str,
    router: tonic::transport::server::Router,
    listener: tokio::net::UnixListener,
    mut stopped: watch::Receiver<bool>,
) -> Served {
    tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
            info!(server = name, "closing");
        };
        router
            .serve_with_incoming_shutdown(UnixListenerStream::new(listener), shutdown)
            .await
    })
}

async fn refused(verdicts: &mut watch::Receiver<RegistrationState>) -> String {
    loop {
        if let RegistrationState::Refused(reason) = &*verdicts.borrow_and_update() {
            return reason.clone();
        }
        if verdicts.changed().await.is_err() {
            // The service is gone; the server-ended branch reports why.
            std::future::pending::<()>().await;
        }
    }
}

fn server_ended(
    server: &'static str,
    ended: Result<Result<(), tonic::transport::Error>, tokio::task::JoinError>,
) -> RunError {
    let message = match ended {
        Ok(Ok(())) => "it ended without being asked".to_owned(),
        Ok(Err(err)) => err.to_string(),
        Err(err) => err.to_string(),
    };
    RunError::Server { server, message }
}
