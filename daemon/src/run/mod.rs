//! Start-up, the task set and shutdown of gpusliced.
//!
//! Order: lock the state dir (one gpusliced per state dir, whatever its
//! socket; a second one exits here naming the holder's PID), open the
//! backend (never falling back from NVML to the simulator), read the
//! inventory, find the driver files, set up the sharing tools (MPS
//! supervisor, shm, nvidia-smi), load records and reconcile (stopping MPS
//! daemons of claims that are gone), take back the device faults recorded
//! before a restart, apply MIG, bring back the sharing of prepared claims,
//! start the activity sampler (`[activity]`: a thread of its own, which
//! publishes into the `ActivityHandle` the metrics and the API read),
//! start the metrics exporters `[metrics]` enables (bind the loopback
//! listener, write the textfile once), bind the socket, register the health
//! watcher, and only then tell systemd READY=1. While serving, the health
//! watcher waits on the backend's events on a blocking thread, SIGHUP rescans
//! and repairs CDI specs, the watchdog is fed while the engine answers, and
//! SIGTERM or SIGINT stops accepting, ends the open inventory watches,
//! drains the calls in flight, tells the health watcher to stop (without
//! waiting for it), removes the socket, stops the exporters (the textfile is
//! written a last time) and returns.
//!
//! The steps up to a reconciled engine are in `start`, what systemd is
//! told while serving (the STATUS= line, the watchdog) in `notify`, and
//! SIGHUP in `reload`; this file holds the order and the shutdown.

mod notify;
mod reload;
mod start;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};

use self::notify::{feed_watchdog, follow_status, status_line};
use self::reload::reload;
pub use self::start::open_backend;
use self::start::start_node;
use crate::activity;
use crate::advice::offer::Usable;
use crate::advice::view::AdviceSettings;
use crate::api::{self, PeerPolicy, socket};
use crate::claims::mig_offering::OfferingSwitch;
use crate::claims::mps_daemon::MpsError;
use crate::claims::{ClaimError, Engine};
use crate::config::{BackendKind, Config};
use crate::gpu::GpuError;
use crate::health::Monitor;
use crate::health::watch::{Stop, Watcher};
use crate::limits;
use crate::metrics::{self, Exporters, Metrics, MetricsError, UsageSource};
use crate::node::Node;
use crate::state::{LockError, StateError, StateLock};
use crate::systemd;

/// How long shutdown waits for calls in flight and for clients to close their
/// connections before it closes them itself. Engine calls already running
/// on the blocking pool still finish: the runtime waits for them.
const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// How long start-up waits for the health watcher to register before it
/// serves anyway (the watcher keeps trying; `gpuslicectl health` tells).
const HEALTH_REGISTER_GRACE: Duration = Duration::from_secs(30);

/// Why the daemon stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Another gpusliced holds the state dir, or its lock could not be taken.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The records of ComputeDomain channels could not be read, or what
    /// runs their IMEX daemons could not be reached.
    #[error(transparent)]
    Domains(#[from] crate::compute_domains::DomainError),
    /// This program's own path, the IMEX daemons' launcher, is unknown.
    #[error(
        "cannot find gpusliced's own program (/proc/self/exe), which starts IMEX daemons: {error}"
    )]
    Launcher {
        /// The OS error.
        error: std::io::Error,
    },
    /// The GPU backend could not start.
    #[error("GPU backend {backend}")]
    Backend {
        /// "nvml" or "sim".
        backend: &'static str,
        /// Why.
        #[source]
        source: GpuError,
    },
    /// The claim records could not be opened.
    #[error(transparent)]
    State(#[from] StateError),
    /// The MPS supervisor could not be set up (`[mps] supervisor = "systemd"`
    /// without a reachable system bus).
    #[error("[mps] supervisor")]
    Mps(#[from] MpsError),
    /// Reconcile failed.
    #[error("reconcile at start-up")]
    Reconcile(#[source] ClaimError),
    /// The socket could not be set up.
    #[error(transparent)]
    Socket(#[from] socket::SocketError),
    /// The gRPC server failed.
    #[error("API server")]
    Serve(#[from] tonic::transport::Error),
    /// A signal handler could not be installed.
    #[error("signal handler")]
    Signal(#[source] std::io::Error),
    /// A metrics exporter could not start.
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    /// A blocking start-up task panicked.
    #[error("start-up task")]
    Task(#[from] tokio::task::JoinError),
}

/// `[advice]`, with the sharing tools the node has (their programs exist).
fn advice_settings(config: &Config) -> AdviceSettings {
    let usable = Usable {
        mps: config.mps_control_program().is_file(),
        timeslice: config.nvidia_smi().is_file(),
    };
    AdviceSettings::new(&config.advice, usable)
}

/// Runs the daemon until SIGTERM or SIGINT. On SIGHUP the file at
/// `config_path` (if any) is read again and its `[mig]` section applied.
pub async fn run(config: Config, config_path: Option<PathBuf>) -> Result<(), RunError> {
    let mut signals = Signals::install()?;
    let config = Arc::new(config);
    // Before the backend or a record is touched; held until this returns.
    let state_lock = {
        let dir = config.state_dir.clone();
        tokio::task::spawn_blocking(move || StateLock::acquire(&dir)).await??
    };
    tracing::debug!(lock = %state_lock.path().display(), "state dir locked");
    let offerings = Arc::new(OfferingSwitch::new(config.mig.clone()));
    let (engine, domains) = {
        let (config, offerings) = (config.clone(), offerings.clone());
        tokio::task::spawn_blocking(move || start_node(&config, &offerings)).await??
    };
    let observers = Observers::start(&config, &engine);
    let source: Arc<dyn UsageSource> = engine.clone();
    let exporters = match Exporters::start(&config.metrics, source, observers.metrics.clone()).await
    {
        Ok(exporters) => exporters,
        Err(err) => {
            activity::stop(observers.activity_task).await;
            return Err(err.into());
        }
    };
    let metrics_addr = exporters.listen_addr();
    let (listener, gid) = match bind_socket(&config) {
        Ok(bound) => bound,
        Err(err) => {
            activity::stop(observers.activity_task).await;
            exporters.stop().await;
            return Err(err);
        }
    };
    // Nothing below returns early until the watcher is stopped again.
    let stop_health = Arc::new(Stop::default());
    let health_watcher = start_health_watcher(engine.clone(), stop_health.clone()).await;
    let policy = PeerPolicy {
        own_uid: nix::unistd::geteuid().as_raw(),
        group: gid,
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let node = Node::new(engine.clone(), offerings.clone()).with_domains(domains);
    let service = api::Service::new(node, stop_rx.clone()).with_activity(api::ActivityView {
        handle: observers.activity,
        limits: observers.limits,
        sim_processes_dir: (config.backend.kind == BackendKind::Sim)
            .then(|| config.sim_processes()),
        advice: advice_settings(&config),
    });
    let server = tokio::spawn(api::serve(
        listener,
        service,
        policy,
        observers.metrics,
        stop_rx,
    ));
    // Subscribed before the first line is made: a prepare that lands
    // before the spawned task first runs still moves the line.
    let changes = engine.watch_generation();
    systemd::ready(&status_line(&engine, metrics_addr));
    tracing::info!(
        socket = %config.socket.display(),
        backend = engine.backend_name(),
        gpus = engine.inventory().gpus.len(),
        claims = engine.claim_count(),
        metrics = metrics_addr.map(|a| a.to_string()),
        "serving on {}: ready",
        config.socket.display()
    );
    let status = tokio::spawn(follow_status(engine.clone(), changes, metrics_addr));
    let watchdog = systemd::watchdog_interval()
        .map(|every| tokio::spawn(feed_watchdog(engine.clone(), every)));
    let config = signals
        .serve(
            config,
            config_path.as_deref(),
            &engine,
            &offerings,
            metrics_addr,
        )
        .await;
    systemd::stopping();
    status.abort();
    if let Some(task) = watchdog {
        task.abort();
    }
    stop_tx.send_replace(true);
    stop_health.stop();
    if let Some(thread) = health_watcher.filter(std::thread::JoinHandle::is_finished)
        && thread.join().is_err()
    {
        tracing::error!("health watcher thread panicked");
    }
    let served = drain(server).await;
    socket::remove(&config.socket);
    activity::stop(observers.activity_task).await;
    exporters.stop().await;
    served??;
    tracing::info!("stopped");
    drop(state_lock);
    Ok(())
}

/// The signals the daemon answers: SIGTERM and SIGINT stop it, SIGHUP
/// reloads.
struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

impl Signals {
    /// Installs the three handlers.
    fn install() -> Result<Self, RunError> {
        let install = |kind| signal(kind).map_err(RunError::Signal);
        Ok(Self {
            term: install(SignalKind::terminate())?,
            int: install(SignalKind::interrupt())?,
            hup: install(SignalKind::hangup())?,
        })
    }

    /// Serves until SIGTERM or SIGINT, reloading `config` on each SIGHUP;
    /// answers the config in force at the stop.
    async fn serve(
        &mut self,
        mut config: Arc<Config>,
        config_path: Option<&Path>,
        engine: &Arc<Engine>,
        offerings: &Arc<OfferingSwitch>,
        metrics_addr: Option<SocketAddr>,
    ) -> Arc<Config> {
        loop {
            tokio::select! {
                _ = self.term.recv() => { tracing::info!("SIGTERM: shutting down"); return config; }
                _ = self.int.recv() => { tracing::info!("SIGINT: shutting down"); return config; }
                _ = self.hup.recv() => {
                    config = reload(config, config_path, engine, offerings).await;
                    systemd::ready(&status_line(engine, metrics_addr));
                }
            }
        }
    }
}

/// What watches the claims' use once the engine runs: the sampler (its
/// handle and task), the `[limits]` board it publishes to, and the metrics
/// that read both.
struct Observers {
    activity: activity::ActivityHandle,
    activity_task: Option<activity::ActivityTask>,
    limits: limits::LimitsBoard,
    metrics: Arc<Metrics>,
}

impl Observers {
    /// The sampler publishes each sample: the usage history and `[limits]`
    /// subscribe; the metrics and the API read the activity handle and the
    /// limits board.
    fn start(config: &Config, engine: &Arc<Engine>) -> Self {
        let board = limits::LimitsBoard::load(Some(&config.state_dir));
        let subscriber = limits::LimitsSubscriber::start(
            &config.limits,
            limits::Pidfds::new("/"),
            board.clone(),
            Some(&config.state_dir),
        );
        let (activity, activity_task) = activity::start(
            engine.clone(),
            &config.activity,
            &config.advice,
            &config.state_dir,
            vec![Box::new(subscriber)],
        );
        let metrics = Arc::new(
            Metrics::new(engine.backend_name())
                .with_activity(activity.clone(), config.activity.max_claim_series)
                .with_limits(board.clone())
                .with_advice(advice_settings(config))
                .with_dra(dra_names(config)),
        );
        Self {
            activity,
            activity_task,
            limits: board,
            metrics,
        }
    }
}

/// The pool and driver of the metrics' DRA labels: `[metrics] pool_name`,
/// else env `NODE_NAME`, else the host name in lowercase (the DRA plugin's
/// rule for its pool, the Node's name); empty (the label left out) when none
/// can be read.
fn dra_names(config: &Config) -> metrics::DraNames {
    let pool = config
        .metrics
        .pool_name
        .clone()
        .or_else(|| std::env::var("NODE_NAME").ok().filter(|n| !n.is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_lowercase())
        })
        .unwrap_or_default();
    metrics::DraNames {
        pool,
        driver: config.metrics.driver_name.clone(),
    }
}

/// Waits up to [`DRAIN_GRACE`] for the server to finish the calls in flight
/// and its clients to hang up, then closes what is left.
async fn drain(
    mut server: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
) -> Result<Result<(), tonic::transport::Error>, tokio::task::JoinError> {
    match tokio::time::timeout(DRAIN_GRACE, &mut server).await {
        Ok(joined) => joined,
        Err(_) => {
            tracing::warn!(grace = ?DRAIN_GRACE, "clients kept connections open; closing them");
            server.abort();
            Ok(Ok(()))
        }
    }
}

/// Starts the health watcher on a thread of its own and waits until it has
/// registered (or failed to): events from then on are seen. Runs until
/// `stop`. Its own OS thread, not tokio's blocking pool, because a wait on
/// the backend (NVML's event wait) cannot be interrupted: shutdown signals
/// the thread and leaves it, rather than waiting out the wait, and the
/// process's exit ends it. Nothing it does at that moment can be torn: its
/// only write, the health record, goes through the atomic writer.
async fn start_health_watcher(
    engine: Arc<Engine>,
    stop: Arc<Stop>,
) -> Option<std::thread::JoinHandle<()>> {
    let (registered_tx, registered_rx) = tokio::sync::oneshot::channel::<Monitor>();
    let thread = std::thread::Builder::new()
        .name("health-watch".to_owned())
        .spawn(move || {
            let on_change = || engine.health_changed();
            let watcher = Watcher {
                backend: engine.health_reads(),
                health: engine.health(),
                on_change: &on_change,
            };
            watcher.run(&stop, |monitor| {
                let _ = registered_tx.send(monitor.clone());
            });
        });
    let thread = match thread {
        Ok(thread) => thread,
        Err(err) => {
            tracing::error!(error = %err, "cannot start the health watcher thread; device health is not watched");
            return None;
        }
    };
    match tokio::time::timeout(HEALTH_REGISTER_GRACE, registered_rx).await {
        Ok(Ok(Monitor::Watching { unmonitored })) => {
            for gpu in unmonitored {
                tracing::warn!(gpu = gpu.gpu_index, reason = %gpu.reason, "health events of this GPU are not watched");
            }
        }
        Ok(_) => {}
        Err(_) => {
            tracing::warn!(grace = ?HEALTH_REGISTER_GRACE, "health events not registered yet; serving anyway")
        }
    }
    Some(thread)
}

/// Binds the API socket, owned by `socket_group` when set; returns its gid.
fn bind_socket(config: &Config) -> Result<(tokio::net::UnixListener, Option<u32>), RunError> {
    let gid = config
        .socket_group
        .as_deref()
        .map(socket::group_gid)
        .transpose()?;
    Ok((socket::bind(&config.socket, gid)?, gid))
}
