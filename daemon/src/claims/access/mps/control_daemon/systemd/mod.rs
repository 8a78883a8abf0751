//! The systemd supervisor of MPS control daemons. This module owns the
//! transient units over D-Bus (this file), one unit as a supervised daemon
//! ([`unit`]) and the pure reading of a unit's properties ([`unit_state`]).
//! It must not decide which daemons should run (that is the
//! [`crate::claims::mps_daemon::MpsManager`]'s) nor touch the GPU backend.
//!
//! [`SystemdSupervisor`]: each control daemon is a transient unit
//! `gpuslice-mps-<hash>.service` started over the system bus (zbus, blocking
//! API) with `StartTransientUnit`, so systemd owns its cgroup, its restarts
//! (`Restart=on-failure`) and its logs (the journal). The unit outlives
//! gpusliced: a restart of gpusliced adopts it by name. [`unit`]
//! supervises one unit; this file starts, finds and stops them.
//!
//! The connection subscribes to systemd's signals (`Subscribe`): without a
//! subscriber systemd sends no `PropertiesChanged` for units, and the unit
//! watcher would only see a restart on its periodic re-read.

pub mod unit;
pub mod unit_state;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use zbus::zvariant::Value;

use super::MpsError;
use super::folders::DaemonFolders;
use super::supervisor::{DaemonSpec, RestartHook, Supervised, Supervisor, unit_name};
use crate::supervise::bus::{BusError, Observed, Property, SERVICE, SystemBus};
use crate::supervise::restart::DAEMON_RESTARTS;
use unit::{UnitDaemon, wait_until_dead};

/// Every daemon's unit name starts so.
pub(super) const UNIT_PREFIX: &str = "gpuslice-mps-";
/// How long a unit found stale at start-up gets to go away.
const STALE_STOP_BOUND: Duration = Duration::from_secs(100);

impl From<BusError> for MpsError {
    fn from(e: BusError) -> Self {
        Self::Systemd {
            action: e.action,
            unit: e.unit,
            problem: e.problem,
        }
    }
}

/// Supervises control daemons as transient systemd units.
#[derive(Debug, Clone)]
pub struct SystemdSupervisor {
    bus: SystemBus,
}

impl SystemdSupervisor {
    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured)
    /// and subscribes to systemd's signals.
    pub fn connect() -> Result<Self, MpsError> {
        Ok(Self {
            bus: SystemBus::connect()?,
        })
    }

    /// The supervisor `[mps] supervisor = "auto"` picks when gpusliced runs
    /// as a systemd service ([`SystemBus::runs_as_service`]); the bus is
    /// then tried. `None` (with a warning when the bus is what failed):
    /// daemons run as children.
    pub fn for_this_service() -> Option<Self> {
        if !SystemBus::runs_as_service() {
            return None;
        }
        Self::connect()
            .inspect_err(|err| {
                tracing::warn!(error = %err, "gpusliced runs under systemd but cannot reach it over the system bus; MPS control daemons run as its children");
            })
            .ok()
    }

    pub(super) fn bus(&self) -> &SystemBus {
        &self.bus
    }

    /// The properties of the transient unit for `spec`. `Type=exec`: the
    /// start job fails when the control program cannot be run.
    fn properties(spec: &DaemonSpec) -> Vec<Property<'static>> {
        let program = spec.program.display().to_string();
        let exec = vec![(program.clone(), vec![program, "-f".to_owned()], false)];
        let env: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut props: Vec<Property<'static>> = vec![
            (
                "Description",
                Value::from(format!("gpuslice MPS control daemon for {}", spec.key)),
            ),
            ("Type", Value::from("exec")),
            ("ExecStart", Value::from(exec)),
            ("Environment", Value::from(env)),
            ("CollectMode", Value::from("inactive-or-failed")),
        ];
        props.extend(DAEMON_RESTARTS.unit_properties());
        if spec.bind_shm {
            let bind = vec![(
                spec.folders.shm_dir().display().to_string(),
                "/dev/shm".to_owned(),
                false,
                0u64,
            )];
            props.push(("BindPaths", Value::from(bind)));
        }
        props
    }

    /// One reading of `unit`; a unit that cannot be read counts as gone.
    pub(super) fn observe(&self, unit: &str) -> Observed {
        self.bus.observe(unit)
    }

    pub(super) fn stop_unit(&self, unit: &str) -> Result<(), MpsError> {
        Ok(self.bus.stop(unit)?)
    }

    /// Waits (bounded) until `unit` no longer runs; false when it still does.
    pub(super) fn wait_gone(
        &self,
        unit: &str,
        pipe_dir: &Path,
        bound: Duration,
    ) -> Result<bool, MpsError> {
        wait_until_dead(pipe_dir, bound, &|| self.observe(unit).is_alive())
    }
}

impl Supervisor for SystemdSupervisor {
    fn name(&self) -> &'static str {
        "systemd"
    }

    fn start(
        &self,
        spec: &DaemonSpec,
        on_restart: RestartHook,
    ) -> Result<Arc<dyn Supervised>, MpsError> {
        let unit = spec.unit_name();
        self.bus.start_transient(&unit, Self::properties(spec))?;
        Ok(UnitDaemon::watch(
            self,
            unit,
            spec.folders.pipe_dir(),
            on_restart,
        )?)
    }

    fn adopt(
        &self,
        spec: &DaemonSpec,
        on_restart: RestartHook,
    ) -> Result<Option<Arc<dyn Supervised>>, MpsError> {
        let unit = spec.unit_name();
        if !self.observe(&unit).is_alive() {
            return Ok(None);
        }
        Ok(Some(UnitDaemon::watch(
            self,
            unit,
            spec.folders.pipe_dir(),
            on_restart,
        )?))
    }

    fn stop_stale(
        &self,
        hash: &str,
        folders: &DaemonFolders,
        quit: &dyn Fn(),
    ) -> Result<(), MpsError> {
        let unit = unit_name(hash);
        quit();
        self.stop_unit(&unit)?;
        if !self.wait_gone(&unit, &folders.pipe_dir(), STALE_STOP_BOUND)? {
            tracing::warn!(%unit, "MPS control daemon unit still active after stop");
        }
        Ok(())
    }

    fn running_hashes(&self, mps_dir: &Path) -> Result<Vec<String>, MpsError> {
        let pattern = format!("{UNIT_PREFIX}*.service");
        let units = self.bus.list(&pattern)?;
        // Only this gpusliced's units: another instance on the host (another
        // run dir) owns its own, even under the same unit names' prefix.
        let ours = format!("CUDA_MPS_PIPE_DIRECTORY={}/", mps_dir.display());
        Ok(units
            .into_iter()
            .filter_map(|(name, path)| {
                let hash = name
                    .strip_prefix(UNIT_PREFIX)
                    .and_then(|r| r.strip_suffix(".service"))?
                    .to_owned();
                let env = self.bus.property(&path, SERVICE, "Environment")?;
                let env = Vec::<String>::try_from(env).ok()?;
                env.iter().any(|e| e.starts_with(&ours)).then_some(hash)
            })
            .collect())
    }
}
