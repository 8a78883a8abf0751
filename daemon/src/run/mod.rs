//! Start-up, the task set and shutdown of gpusliced.
//!
//! Order: lock the state dir (one gpusliced per state dir, whatever its
//! socket; a second one exits here naming the holder's PID), open the backend (never falling back from NVML to the simulator),
//! read the inventory, find the driver files, set up the sharing tools (MPS
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

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};

use crate::activity;
use crate::advertise::Advertiser;
use crate::api::{self, PeerPolicy, socket};
use crate::claims::{ClaimError, Engine, EngineSettings, SharingTools};
use crate::config::{BackendKind, Config, ShmKind, SupervisorKind};
use crate::driver::{DriverFiles, Roots};
use crate::gpu::nvml::NvmlBackend;
use crate::gpu::sim::SimBackend;
use crate::gpu::{GpuBackend, GpuError};
use crate::health::watch::{Stop, Watcher};
use crate::health::{Classifier, HealthStore, Monitor};
use crate::inventory::Inventory;
use crate::metrics::{Exporters, Metrics, MetricsError, UsageSource};
use crate::mps::{
    ChildSupervisor, MpsError, MpsManager, MpsSettings, NoShmMount, ShmMounter, Supervisor,
    SystemdSupervisor, TmpfsMounter,
};
use crate::state::{BOOT_ID_PATH, LockError, StateError, StateLock, Store, read_boot_id};
use crate::systemd;
use crate::timeslice::NvidiaSmi;

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

/// Opens the backend the config names.
pub fn open_backend(config: &Config) -> Result<Arc<dyn GpuBackend>, RunError> {
    match config.backend.kind {
        BackendKind::Sim => SimBackend::open(
            config.backend.sim.gpus.clone(),
            &config.backend.sim.seed,
            &config.sim_hardware_state(),
        )
        .map(|b| {
            let b = (b.with_health_events(&config.sim_health_events()))
                .with_processes_dir(&config.sim_processes());
            Arc::new(b) as Arc<dyn GpuBackend>
        })
        .map_err(|source| RunError::Backend {
            backend: "sim",
            source,
        }),
        BackendKind::Nvml => NvmlBackend::open(config.backend.nvml.library.as_deref())
            .map(|b| Arc::new(b) as Arc<dyn GpuBackend>)
            .map_err(|source| RunError::Backend {
                backend: "nvml",
                source,
            }),
    }
}

fn discover(config: &Config, inventory: &Inventory) -> DriverFiles {
    let roots = Roots {
        driver_root: &config.driver_root,
        dev_root: config.dev_root(),
    };
    DriverFiles::discover(roots, &inventory.driver.driver_version)
}

/// Whether systemd started this process (a service sets INVOCATION_ID):
/// its sandbox then forbids mounts and new mount namespaces.
fn started_by_systemd() -> bool {
    std::env::var_os("INVOCATION_ID").is_some_and(|v| !v.is_empty())
}

/// The MPS manager and nvidia-smi as `[mps]` and `[timeslice]` say.
fn sharing_tools(config: &Config) -> Result<SharingTools, RunError> {
    let root = nix::unistd::geteuid().is_root();
    let supervisor: Arc<dyn Supervisor> = match config.mps.supervisor {
        SupervisorKind::Systemd => Arc::new(SystemdSupervisor::connect()?),
        SupervisorKind::Child => Arc::new(ChildSupervisor::default()),
        SupervisorKind::Auto => match SystemdSupervisor::for_this_service() {
            Some(systemd) => Arc::new(systemd),
            None => Arc::new(ChildSupervisor::default()),
        },
    };
    let tmpfs = match config.mps.shm {
        ShmKind::Tmpfs => true,
        ShmKind::Folder => false,
        ShmKind::Auto => root && !started_by_systemd(),
    };
    let mounter: Arc<dyn ShmMounter> = if tmpfs {
        Arc::new(TmpfsMounter {
            size: config.mps.shm_size.clone(),
        })
    } else {
        Arc::new(NoShmMount)
    };
    // The daemon sees its shm at /dev/shm through the unit's BindPaths=, or,
    // as a child, in a mount namespace of its own, which needs root outside
    // systemd's sandbox. Otherwise daemon and clients keep the host's.
    let bind_shm = match supervisor.name() {
        "systemd" => true,
        _ => root && !started_by_systemd(),
    };
    let settings = MpsSettings {
        control_program: config.mps_control_program(),
        mps_dir: config.mps.run_dir.join("mps"),
        ready_bound: Duration::from_secs(config.mps.ready_timeout_s),
        bind_shm,
    };
    tracing::info!(
        supervisor = supervisor.name(),
        shm = if tmpfs { "tmpfs" } else { "folder" },
        bind_shm,
        control_program = %settings.control_program.display(),
        run_dir = %settings.mps_dir.display(),
        nvidia_smi = %config.nvidia_smi().display(),
        "sharing tools"
    );
    Ok(SharingTools {
        mps: Arc::new(MpsManager::new(settings, supervisor, mounter)),
        nvidia_smi: NvidiaSmi::new(&config.nvidia_smi()),
    })
}

/// Builds the engine and reconciles; blocking. `[mig]` goes through
/// `advertiser` (the form in force decided there).
fn start_engine(config: &Config, advertiser: &Advertiser) -> Result<Engine, RunError> {
    let backend = open_backend(config)?;
    let name = backend.name();
    let inventory = Inventory::from_backend(backend.as_ref(), &config.mig, &|_, _| {
        crate::mig::Ownership::Foreign
    })
    .map_err(|source| RunError::Backend {
        backend: name,
        source,
    })?;
    tracing::info!(backend = name, gpus = inventory.gpus.len(), driver = %inventory.driver.driver_version, "GPUs found");
    for gpu in &inventory.unreadable {
        tracing::error!(gpu = %gpu.label(), what = gpu.what, error = %gpu.error, "GPU cannot be read; left out of the offer");
    }
    let driver = discover(config, &inventory);
    for problem in &driver.problems {
        tracing::warn!(%problem, "driver files");
    }
    let settings = EngineSettings {
        cdi_dir: config.cdi_dir.clone(),
        dev_root: config.dev_root().to_path_buf(),
        cdi_hook: config.cdi_hook.clone(),
        boot_id: read_boot_id(Path::new(BOOT_ID_PATH)),
    };
    let store = Store::open(&config.state_dir)?;
    let health_store = HealthStore::new(&config.state_dir, &settings.boot_id);
    let engine = Engine::new(backend, inventory, driver, store, settings)
        .with_sharing(sharing_tools(config)?);
    engine
        .health()
        .set_classifier(Classifier::new(&config.health.ignore_xids));
    match engine.health().restore(health_store) {
        Ok(0) => {}
        Ok(gpus) => {
            tracing::warn!(
                gpus,
                "GPUs unhealthy before the restart are still unhealthy; `gpuslicectl health`"
            );
        }
        Err(err) => tracing::error!(error = %err, "device health not restored"),
    }
    let report = engine.reconcile().map_err(RunError::Reconcile)?;
    tracing::info!(?report, "reconciled claim records and CDI specs");
    advertiser
        .apply_config(&engine, config.mig.clone())
        .map_err(RunError::Reconcile)?;
    engine.restore_sharing();
    for problem in &report.problems {
        tracing::error!(%problem, "reconcile");
    }
    Ok(engine)
}

/// The systemd status line, e.g. "serving 8 GPUs (nvml), 3 claims, 1 unhealthy
/// (gpuslicectl health); metrics on http://127.0.0.1:9464/metrics".
fn status_line(engine: &Engine, metrics: Option<std::net::SocketAddr>) -> String {
    let mut line = format!(
        "serving {} GPUs ({}), {} claims",
        engine.inventory().gpus.len(),
        engine.backend_name(),
        engine.claim_count()
    );
    match engine.fault_count() {
        0 => {}
        faults => line.push_str(&format!(", {faults} unhealthy (gpuslicectl health)")),
    }
    match engine.inventory().unreadable.len() {
        0 => {}
        gpus => line.push_str(&format!(", {gpus} unreadable (gpuslicectl status)")),
    }
    if let Some(addr) = metrics {
        line.push_str(&format!("; metrics on http://{addr}/metrics"));
    }
    line
}

/// Runs the daemon until SIGTERM or SIGINT. On SIGHUP the file at
/// `config_path` (if any) is read again and its `[mig]` section applied.
pub async fn run(config: Config, config_path: Option<PathBuf>) -> Result<(), RunError> {
    let mut sigterm = signal(SignalKind::terminate()).map_err(RunError::Signal)?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(RunError::Signal)?;
    let mut sighup = signal(SignalKind::hangup()).map_err(RunError::Signal)?;
    let mut config = Arc::new(config);
    // Before the backend or a record is touched; held until this returns.
    let state_lock = {
        let dir = config.state_dir.clone();
        tokio::task::spawn_blocking(move || StateLock::acquire(&dir)).await??
    };
    tracing::debug!(lock = %state_lock.path().display(), "state dir locked");
    let advertiser = Arc::new(Advertiser::new(config.mig.clone()));
    let engine = {
        let (config, advertiser) = (config.clone(), advertiser.clone());
        Arc::new(tokio::task::spawn_blocking(move || start_engine(&config, &advertiser)).await??)
    };
    // The handle is what the metrics and the API read the samples from.
    let (activity_handle, activity_task) =
        activity::start(engine.clone(), &config.activity, &config.state_dir);
    let metrics = Arc::new(
        Metrics::new(engine.backend_name())
            .with_activity(activity_handle.clone(), config.activity.max_claim_series),
    );
    let source: Arc<dyn UsageSource> = engine.clone();
    let exporters = match Exporters::start(&config.metrics, source, metrics.clone()).await {
        Ok(exporters) => exporters,
        Err(err) => {
            activity::stop(activity_task).await;
            return Err(err.into());
        }
    };
    let metrics_addr = exporters.listen_addr();
    let (listener, gid) = match bind_socket(&config) {
        Ok(bound) => bound,
        Err(err) => {
            activity::stop(activity_task).await;
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
    let service = api::Service::new(engine.clone(), advertiser.clone(), stop_rx.clone())
        .with_activity(api::ActivityView {
            handle: activity_handle,
            sim_processes_dir: (config.backend.kind == BackendKind::Sim)
                .then(|| config.sim_processes()),
        });
    let server = tokio::spawn(api::serve(listener, service, policy, metrics, stop_rx));
    tracing::info!(socket = %config.socket.display(), "serving");
    // Subscribed before the first line is made: a prepare that lands
    // before the spawned task first runs still moves the line.
    let changes = engine.watch_generation();
    systemd::ready(&status_line(&engine, metrics_addr));
    let status = tokio::spawn(follow_status(engine.clone(), changes, metrics_addr));
    let watchdog = systemd::watchdog_interval()
        .map(|every| tokio::spawn(feed_watchdog(engine.clone(), every)));
    loop {
        tokio::select! {
            _ = sigterm.recv() => { tracing::info!("SIGTERM: shutting down"); break; }
            _ = sigint.recv() => { tracing::info!("SIGINT: shutting down"); break; }
            _ = sighup.recv() => {
                config = reload(config, config_path.as_deref(), &engine, &advertiser).await;
                systemd::ready(&status_line(&engine, metrics_addr));
            }
        }
    }
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
    let mut server = server;
    let served = match tokio::time::timeout(DRAIN_GRACE, &mut server).await {
        Ok(joined) => joined,
        Err(_) => {
            tracing::warn!(grace = ?DRAIN_GRACE, "clients kept connections open; closing them");
            server.abort();
            Ok(Ok(()))
        }
    };
    socket::remove(&config.socket);
    activity::stop(activity_task).await;
    exporters.stop().await;
    served??;
    tracing::info!("stopped");
    drop(state_lock);
    Ok(())
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
                backend: engine.backend(),
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

/// SIGHUP: read the config again (its `[mig]` section takes effect; other
/// changes need a restart and are logged), rescan GPUs and driver files,
/// apply MIG layouts, repair CDI specs. Returns the config now in force.
async fn reload(
    config: Arc<Config>,
    path: Option<&Path>,
    engine: &Arc<Engine>,
    advertiser: &Arc<Advertiser>,
) -> Arc<Config> {
    systemd::reloading();
    let config = match path.map(Config::load) {
        Some(Ok(new)) => Arc::new(adopt_reloaded(&config, new)),
        Some(Err(err)) => {
            tracing::error!(error = %err, "config not reloaded; keeping the one in force");
            config
        }
        None => config,
    };
    let (in_force, engine2, advertiser) = (config.clone(), engine.clone(), advertiser.clone());
    let result = tokio::task::spawn_blocking(move || {
        let before = engine2.generation();
        advertiser
            .apply_config(&engine2, in_force.mig.clone())
            .map_err(|e| e.to_string())?;
        let inventory = engine2.inventory();
        let driver = discover(&in_force, &inventory);
        engine2.set_driver_files(driver);
        let changed = engine2.generation() != before;
        engine2
            .refresh()
            .map(|report| (changed, report))
            .map_err(|e| e.to_string())
    })
    .await;
    match result {
        Ok(Ok((changed, report))) => {
            tracing::info!(inventory_changed = changed, ?report, "reloaded");
        }
        Ok(Err(err)) => tracing::error!(error = %err, "reload failed; keeping the previous state"),
        Err(err) => tracing::error!(error = %err, "reload task failed"),
    }
    config
}

/// The config in force after a reload: the new `[mig]`, everything else as
/// it was (sockets, folders and the backend are fixed for the process's life).
fn adopt_reloaded(current: &Config, new: Config) -> Config {
    let mut next = current.clone();
    next.mig = new.mig.clone();
    let mut fixed = new;
    fixed.mig = current.mig.clone();
    if fixed != *current {
        tracing::warn!("config changes outside [mig] take effect at the next restart");
    }
    next
}

/// Keeps systemd's STATUS= line current (claims, unhealthy and unreadable
/// GPUs): it is sent again after every inventory change, which every
/// prepare, unprepare, health change and rescan makes. Changes that come
/// while a line is being made are folded into the next one. A line that
/// finds the notify queue full is never waited for: the newest line is
/// sent again at the next change or after [`STATUS_RETRY`]. `changes` is
/// subscribed by the caller before it sends the first line, so no change
/// falls between that line and this task's start.
async fn follow_status(
    engine: Arc<Engine>,
    mut changes: tokio::sync::watch::Receiver<u64>,
    metrics: Option<std::net::SocketAddr>,
) {
    let mut pending = false;
    loop {
        if pending {
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(STATUS_RETRY) => {}
            }
        } else if changes.changed().await.is_err() {
            return;
        }
        let engine = engine.clone();
        match tokio::task::spawn_blocking(move || status_line(&engine, metrics)).await {
            Ok(line) => pending = systemd::status(&line) == systemd::Delivery::Full,
            Err(err) => tracing::warn!(error = %err, "status line not updated"),
        }
    }
}

/// How soon a STATUS= line that found the notify queue full is sent again.
const STATUS_RETRY: std::time::Duration = std::time::Duration::from_secs(1);

/// Pings the watchdog while the engine answers; a wedged engine stops the
/// pings and systemd restarts the daemon.
async fn feed_watchdog(engine: Arc<Engine>, every: std::time::Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let engine = engine.clone();
        let alive = tokio::time::timeout(
            every,
            tokio::task::spawn_blocking(move || engine.responsive()),
        )
        .await;
        if matches!(alive, Ok(Ok(true))) {
            systemd::watchdog();
        } else {
            tracing::error!(
                "engine did not answer within the watchdog interval; not feeding the watchdog"
            );
        }
    }
}
