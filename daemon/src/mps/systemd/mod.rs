//! The systemd supervisor of MPS control daemons. This module owns the
//! transient units over D-Bus (this file), one unit as a supervised daemon
//! ([`unit`]) and the pure reading of a unit's properties ([`unit_state`]).
//! It must not decide which daemons should run (that is the
//! [`crate::mps::MpsManager`]'s) nor touch the GPU backend.
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

use zbus::blocking::Connection;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

use super::MpsError;
use super::folders::DaemonFolders;
use super::supervisor::{DaemonSpec, RestartHook, Supervised, Supervisor, unit_name};
use unit::{UnitDaemon, wait_until_dead};
use unit_state::{Activity, Observed};

const DEST: &str = "org.freedesktop.systemd1";
const PATH: &str = "/org/freedesktop/systemd1";
const MANAGER: &str = "org.freedesktop.systemd1.Manager";
const UNIT: &str = "org.freedesktop.systemd1.Unit";
const SERVICE: &str = "org.freedesktop.systemd1.Service";
/// Every daemon's unit name starts so.
pub(super) const UNIT_PREFIX: &str = "gpuslice-mps-";
/// How long a unit found stale at start-up gets to go away.
const STALE_STOP_BOUND: Duration = Duration::from_secs(100);

/// Supervises control daemons as transient systemd units.
#[derive(Debug, Clone)]
pub struct SystemdSupervisor {
    bus: Connection,
}

type Property<'a> = (&'a str, Value<'a>);

impl SystemdSupervisor {
    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured)
    /// and subscribes to systemd's signals.
    pub fn connect() -> Result<Self, MpsError> {
        let bus = Connection::system().map_err(|e| sd_err("connect to", "the system bus", &e))?;
        let supervisor = Self { bus };
        match supervisor.manager_call("Subscribe", "signals", &()) {
            Ok(_) => {}
            Err(MpsError::Systemd { problem, .. }) if problem.contains("AlreadySubscribed") => {}
            Err(e) => return Err(e),
        }
        Ok(supervisor)
    }

    /// The supervisor `[mps] supervisor = "auto"` picks when gpusliced runs
    /// as a systemd service: systemd sets `INVOCATION_ID` for a service (a
    /// `NOTIFY_SOCKET` alone, as the tests' harness sets, is not enough:
    /// units of the host's systemd are not a test's to touch); the bus is
    /// then tried. `None` (with a warning when the bus is what failed):
    /// daemons run as children.
    pub fn for_this_service() -> Option<Self> {
        if std::env::var_os("INVOCATION_ID").is_none_or(|v| v.is_empty()) {
            return None;
        }
        Self::connect()
            .inspect_err(|err| {
                tracing::warn!(error = %err, "gpusliced runs under systemd but cannot reach it over the system bus; MPS control daemons run as its children");
            })
            .ok()
    }

    pub(super) fn bus(&self) -> &Connection {
        &self.bus
    }

    fn manager_call<B>(&self, method: &str, unit: &str, body: &B) -> Result<zbus::Message, MpsError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        self.bus
            .call_method(Some(DEST), PATH, Some(MANAGER), method, body)
            .map_err(|e| sd_err(method_action(method), unit, &e))
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
            ("Restart", Value::from("on-failure")),
            ("CollectMode", Value::from("inactive-or-failed")),
        ];
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

    fn unit_path(&self, unit: &str) -> Result<Option<OwnedObjectPath>, MpsError> {
        match self
            .bus
            .call_method(Some(DEST), PATH, Some(MANAGER), "GetUnit", &(unit,))
        {
            Ok(reply) => reply
                .body()
                .deserialize::<OwnedObjectPath>()
                .map(Some)
                .map_err(|e| sd_err("read GetUnit of", unit, &e)),
            Err(zbus::Error::MethodError(name, _, _)) if name.as_str().ends_with("NoSuchUnit") => {
                Ok(None)
            }
            Err(e) => Err(sd_err("GetUnit", unit, &e)),
        }
    }

    fn property(&self, path: &OwnedObjectPath, interface: &str, name: &str) -> Option<OwnedValue> {
        let reply = self
            .bus
            .call_method(
                Some(DEST),
                path.as_str(),
                Some("org.freedesktop.DBus.Properties"),
                "Get",
                &(interface, name),
            )
            .ok()?;
        reply.body().deserialize::<OwnedValue>().ok()
    }

    /// One reading of `unit`; a unit that cannot be read counts as gone.
    pub(super) fn observe(&self, unit: &str) -> Observed {
        let Ok(Some(path)) = self.unit_path(unit) else {
            return Observed::GONE;
        };
        let u32_of = |interface, name| {
            self.property(&path, interface, name)
                .and_then(|v| u32::try_from(v).ok())
                .unwrap_or(0)
        };
        let activity = self
            .property(&path, UNIT, "ActiveState")
            .and_then(|v| String::try_from(v).ok())
            .map_or(Activity::Gone, |s| Activity::parse(&s));
        let job_pending = self
            .property(&path, UNIT, "Job")
            .and_then(|v| <(u32, OwnedObjectPath)>::try_from(v).ok())
            .is_some_and(|(id, _)| id != 0);
        Observed {
            activity,
            job_pending,
            main_pid: u32_of(SERVICE, "MainPID"),
            restarts: u32_of(SERVICE, "NRestarts"),
        }
    }

    /// The match rule for `unit`'s property changes.
    pub(super) fn changes_of(unit: &str) -> zbus::Result<zbus::MatchRule<'static>> {
        let path = format!("{PATH}/unit/{}", escape_path(unit));
        Ok(zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface("org.freedesktop.DBus.Properties")?
            .member("PropertiesChanged")?
            .path(path)?
            .build())
    }

    pub(super) fn stop_unit(&self, unit: &str) -> Result<(), MpsError> {
        match self.manager_call("StopUnit", unit, &(unit, "replace")) {
            Ok(_) => Ok(()),
            Err(MpsError::Systemd { problem, .. })
                if problem.contains("NoSuchUnit") || problem.contains("not loaded") =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
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

/// systemd's object path escaping (`sd_bus_path_encode`): every byte but
/// ASCII letters and digits becomes `_xx`, lowercase hex.
fn escape_path(name: &str) -> String {
    name.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                char::from(b).to_string()
            } else {
                format!("_{b:02x}")
            }
        })
        .collect()
}

fn method_action(method: &str) -> &'static str {
    match method {
        "StartTransientUnit" => "start",
        "StopUnit" => "stop",
        "Subscribe" => "subscribe to",
        "ListUnitsByPatterns" => "list",
        _ => "call",
    }
}

fn sd_err(action: &'static str, unit: &str, e: &dyn std::fmt::Display) -> MpsError {
    MpsError::Systemd {
        action,
        unit: unit.to_owned(),
        problem: e.to_string(),
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
        let aux: Vec<(&str, Vec<Property<'_>>)> = Vec::new();
        self.manager_call(
            "StartTransientUnit",
            &unit,
            &(unit.as_str(), "replace", Self::properties(spec), aux),
        )?;
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
        let states: Vec<&str> = Vec::new();
        let reply = self.manager_call(
            "ListUnitsByPatterns",
            &pattern,
            &(states, vec![pattern.as_str()]),
        )?;
        type UnitRow = (
            String,
            String,
            String,
            String,
            String,
            String,
            OwnedObjectPath,
            u32,
            String,
            OwnedObjectPath,
        );
        let rows: Vec<UnitRow> = reply
            .body()
            .deserialize()
            .map_err(|e| sd_err("read ListUnitsByPatterns of", &pattern, &e))?;
        // Only this gpusliced's units: another instance on the host (another
        // run dir) owns its own, even under the same unit names' prefix.
        let ours = format!("CUDA_MPS_PIPE_DIRECTORY={}/", mps_dir.display());
        Ok(rows
            .into_iter()
            .filter_map(|row| {
                let hash = row
                    .0
                    .strip_prefix(UNIT_PREFIX)
                    .and_then(|r| r.strip_suffix(".service"))?
                    .to_owned();
                let env = self.property(&row.6, SERVICE, "Environment")?;
                let env = Vec::<String>::try_from(env).ok()?;
                env.iter().any(|e| e.starts_with(&ours)).then_some(hash)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_paths_are_escaped_as_systemd_does() {
        assert_eq!(
            escape_path("gpuslice-mps-0123abcd.service"),
            "gpuslice_2dmps_2d0123abcd_2eservice"
        );
    }
}
