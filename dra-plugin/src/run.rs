//! Start-up, serving and shutdown, as named tasks under one `select!`.
//!
//! Order: API-server and gpusliced clients; the GPU driver served
//! ([`crate::driver`]: its DRA socket, v1 and v1beta1 and the device-health
//! watch in v1 and v1alpha1, before its registration socket appears, so the
//! kubelet never dials an endpoint that is not there); then the publisher and
//! what wakes it: the follower of gpusliced's inventory and the watch of our
//! slices; then the claim-status writer (with its own API-server identity
//! when `[claim_status] kubeconfig` is set), or, with `[claim_status] mode =
//! "off"`, only what tells gpusliced that it is off; and the ComputeDomain
//! driver ([`crate::compute_domains`]), which registers and publishes by
//! itself once gpusliced says the node serves it. The process ends on
//! SIGTERM or SIGINT (success), when the kubelet refuses a driver's
//! registration or a server fails (errors). Either way every socket is
//! closed and removed.

use std::sync::Arc;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tonic::transport::Server;
use tracing::{info, warn};

use crate::claim_status::{entries, plan, task as claim_status, tell};
use crate::compute_domains;
use crate::config::{ApiAccess, ClaimStatusMode, Resolved};
use crate::dra::{DraCore, Forward, v1::V1Service, v1beta1::V1beta1Service};
use crate::driver::{DRAIN, DriverError, DriverSockets, ServedDriver};
use crate::health::{HealthCore, v1::V1HealthService, v1alpha1::V1alpha1HealthService};
use crate::publisher::{Publisher, Triggers};
use crate::slices::PoolTarget;
use crate::{gpusliced, gpusliced_watch, slice_watch};

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
    /// Signal handlers could not be installed.
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    /// A driver's sockets or servers failed, or the kubelet refused it.
    #[error(transparent)]
    Driver(#[from] DriverError),
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
    let domains_kube = match &config.compute_domains.kubeconfig {
        Some(path) => kube_client(&ApiAccess::Kubeconfig(path.clone())).await?,
        None => kube.clone(),
    };
    let gpusliced = gpusliced::connect_lazy(config.gpusliced_socket.clone());
    let mut sigterm = signal(SignalKind::terminate()).map_err(RunError::Signals)?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(RunError::Signals)?;
    let (stop, stopped) = watch::channel(false);

    let core = Arc::new(DraCore::new(
        config.driver_name.clone(),
        Forward::Gpus,
        kube.clone(),
        gpusliced.clone(),
    ));
    let health = HealthCore::new(
        gpusliced.clone(),
        resolved.node_name.clone(),
        Duration::from_secs(config.health_seconds),
        stopped.clone(),
    );
    let router = Server::builder()
        .add_service(V1Service::server(Arc::clone(&core)))
        .add_service(V1beta1Service::server(core))
        .add_service(V1HealthService::server(health.clone()))
        .add_service(V1alpha1HealthService::server(health));
    let sockets = DriverSockets {
        dra: config.dra_socket(),
        registration: config.registration_socket(),
    };
    let mut gpus = ServedDriver::start(&config.driver_name, router, &sockets, &stopped)?;
    info!(driver = %config.driver_name, node = %resolved.node_name, "GPU driver up");

    let (channels_failed, mut channel_failure) = oneshot::channel();
    let channels = tokio::spawn(compute_domains::run(
        channel_setup(&resolved, &kube, domains_kube, &gpusliced),
        stopped.clone(),
        channels_failed,
    ));
    let tasks = Tasks::spawn(&resolved, kube, gpusliced, status_kube, stopped);

    let outcome = tokio::select! {
        _ = sigterm.recv() => { info!("SIGTERM: stopping"); Ok(()) }
        _ = sigint.recv() => { info!("SIGINT: stopping"); Ok(()) }
        failed = gpus.failed() => Err(failed.into()),
        Ok(failed) = &mut channel_failure => Err(failed.into()),
    };
    stop.send_replace(true);
    gpus.close().await;
    tasks.drain().await;
    if tokio::time::timeout(DRAIN * 2, channels).await.is_err() {
        warn!(
            driver = compute_domains::DRIVER,
            "did not stop in time; abandoned"
        );
    }
    outcome
}

/// What the ComputeDomain driver takes from the config.
fn channel_setup(
    resolved: &Resolved,
    kube: &kube::Client,
    domains_kube: kube::Client,
    gpusliced: &gpusliced::GpuSlice,
) -> compute_domains::Setup {
    let config = &resolved.config;
    compute_domains::Setup {
        mode: config.compute_domains.enabled,
        kube: kube.clone(),
        domains_kube,
        gpusliced: gpusliced.clone(),
        node_name: resolved.node_name.clone(),
        lease_namespace: config.compute_domains.lease_namespace.clone(),
        sockets: DriverSockets {
            dra: config.dra_socket_of(compute_domains::DRIVER),
            registration: config.registration_socket_of(compute_domains::DRIVER),
        },
        resync: Duration::from_secs(config.resync_seconds),
    }
}

/// The GPU driver's tasks beside its two gRPC servers: the ResourceSlice
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
