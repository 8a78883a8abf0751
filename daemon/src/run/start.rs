//! Start-up of gpusliced up to a reconciled engine: the backend the config
//! names (never falling back from NVML to the simulator), the driver files,
//! the sharing tools (MPS supervisor, shm, nvidia-smi), the records,
//! reconcile, the device faults recorded before a restart, MIG, and the
//! sharing of prepared claims.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::RunError;
use crate::claims::compute_policy::NvidiaSmi;
use crate::claims::mig_offering::OfferingSwitch;
use crate::claims::mps_daemon::{
    ChildSupervisor, ControlProgram, MpsManager, MpsSettings, NoShmMount, ShmMounter, Supervisor,
    SystemdSupervisor, TmpfsMounter,
};
use crate::claims::{Engine, EngineSettings, SharingTools};
use crate::compute_domains::nodes::{ChannelNodes, NodeMaker};
use crate::compute_domains::runner::Runner;
use crate::compute_domains::runner::child::ChildRunner;
use crate::compute_domains::runner::unit::UnitRunner;
use crate::compute_domains::{DomainSettings, Domains};
use crate::config::{BackendKind, Config, ShmKind, SupervisorKind};
use crate::driver::{DriverFiles, Roots};
use crate::gpu::GpuBackend;
use crate::gpu::nvml::NvmlBackend;
use crate::gpu::sim::SimBackend;
use crate::health::{Classifier, HealthStore};
use crate::inventory::Inventory;
use crate::state::{BOOT_ID_PATH, Store, read_boot_id};

/// Opens the backend the config names.
pub fn open_backend(config: &Config) -> Result<Arc<dyn GpuBackend>, RunError> {
    match config.backend.kind {
        BackendKind::Sim => SimBackend::open(
            config.backend.sim.models(),
            &config.backend.sim.seed,
            &config.sim_hardware_state(),
        )
        .map(|b| {
            let b = (b.with_health_events(&config.sim_health_events()))
                .with_processes_dir(&config.sim_processes());
            let b = match config.backend.sim.shape() {
                Some(shape) => b.with_instance(shape, &config.backend.sim.fabric()),
                None => b.with_numa_nodes(config.backend.sim.numa_nodes()),
            };
            Arc::new(b) as Arc<dyn GpuBackend>
        })
        .map_err(|source| RunError::Backend {
            backend: "sim",
            source,
        }),
        BackendKind::Nvml => NvmlBackend::open(config.backend.nvml.library.as_deref())
            .map(|b| match &config.backend.nvml.sysfs_root {
                Some(root) => b.with_sysfs_root(root),
                None => b,
            })
            .map(|b| Arc::new(b) as Arc<dyn GpuBackend>)
            .map_err(|source| RunError::Backend {
                backend: "nvml",
                source,
            }),
    }
}

pub(super) fn discover(config: &Config, inventory: &Inventory) -> DriverFiles {
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

/// What runs the IMEX daemons, as `[imex] supervisor` says: under systemd,
/// instances of gpuslice-imex@.service (gpusliced's own sandbox allows its
/// children no network); otherwise children, started through this very
/// binary as their launcher.
fn imex_runner(config: &Config) -> Result<Arc<dyn Runner>, RunError> {
    let child = || -> Result<Arc<dyn Runner>, RunError> {
        let launcher = std::env::current_exe().map_err(|error| RunError::Launcher { error })?;
        Ok(Arc::new(ChildRunner::new(launcher)))
    };
    match config.imex.supervisor {
        SupervisorKind::Systemd => Ok(Arc::new(UnitRunner::connect()?)),
        SupervisorKind::Child => child(),
        SupervisorKind::Auto if started_by_systemd() => match UnitRunner::connect() {
            Ok(runner) => Ok(Arc::new(runner)),
            Err(err) => {
                tracing::warn!(error = %err, "gpusliced runs under systemd but cannot reach it over the system bus; IMEX daemons run as its children, which its sandbox keeps off the network");
                child()
            }
        },
        SupervisorKind::Auto => child(),
    }
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
    let control = Arc::new(ControlProgram::new(&settings.control_program));
    Ok(SharingTools {
        mps: Arc::new(MpsManager::new(settings, supervisor, control, mounter)),
        timeslice: Arc::new(NvidiaSmi::new(&config.nvidia_smi())),
    })
}

/// Builds the engine and reconciles; blocking. `[mig]` goes through
/// `offerings` (the form in force decided there).
pub(super) fn start_engine(
    config: &Config,
    offerings: &OfferingSwitch,
) -> Result<Engine, RunError> {
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
        limits: config.limits.clone(),
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
    let report = engine
        .start_up(|engine| offerings.apply_config(engine, config.mig.clone()))
        .map_err(RunError::Reconcile)?;
    tracing::info!(?report, "reconciled claim records and CDI specs");
    for problem in &report.problems {
        tracing::error!(%problem, "reconcile");
    }
    Ok(engine)
}

/// The claim engine and the engine of ComputeDomains' channels, started
/// up; blocking.
pub(super) fn start_node(
    config: &Config,
    offerings: &OfferingSwitch,
) -> Result<(Arc<Engine>, Arc<Domains>), RunError> {
    let engine = start_engine(config, offerings)?;
    let domains = start_domains(config, &engine.inventory())?;
    Ok((Arc::new(engine), Arc::new(domains)))
}

/// The engine of ComputeDomains' channels, started up: the node's clique
/// from its GPUs' fabric, `[imex]` for the daemons; blocking.
fn start_domains(config: &Config, inventory: &Inventory) -> Result<Domains, RunError> {
    let clique = inventory
        .gpus
        .iter()
        .find_map(|g| g.features.clique.clone());
    let fabric_summary = inventory
        .gpus
        .iter()
        .map(|g| {
            let fabric = g.info.fabric.as_ref().map_or_else(
                || "no NVLink fabric".to_owned(),
                |f| format!("fabric {}", f.state),
            );
            format!("{} {}: {fabric}", g.name, g.info.product_name)
        })
        .collect::<Vec<_>>()
        .join("; ");
    let settings = DomainSettings {
        state_dir: config.state_dir.clone(),
        cdi_dir: config.cdi_dir.clone(),
        nodes: NodeMaker {
            how: match config.backend.kind {
                BackendKind::Sim => ChannelNodes::Simulated,
                BackendKind::Nvml => ChannelNodes::Driver,
            },
            dev_root: config.dev_root().to_path_buf(),
            driver_root: config.driver_root.clone(),
        },
        imex_dir: config.imex.run_dir.join("imex"),
        program: config.imex_program(),
        ctl_program: config.imex_ctl_program(),
        bind_address: config.imex.bind_address,
        rack: config.imex_rack(),
        ready_bound: Duration::from_secs(config.imex.ready_timeout_s),
        clique,
        fabric_summary: if fabric_summary.is_empty() {
            "none".to_owned()
        } else {
            fabric_summary
        },
    };
    let domains = Domains::new(settings, imex_runner(config)?)?;
    for problem in domains.start_up()? {
        tracing::error!(%problem, "ComputeDomain channels");
    }
    Ok(domains)
}
