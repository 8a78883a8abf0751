//! [`SystemdSupervisor`]: each control daemon is a transient unit
//! `gpuslice-mps-<hash>.service` started over the system bus (zbus, blocking
//! API) with `StartTransientUnit`, so systemd owns its cgroup, its restarts
//! (`Restart=on-failure`) and its logs. Its state is read back from the
//! unit's D-Bus properties; `StopUnit` ends it.

use std::path::Path;
use std::sync::Arc;

use zbus::blocking::Connection;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

use super::MpsError;
use super::control::wait_on_dir;
use super::layout::DaemonLayout;
use super::supervisor::{
    DaemonSpec, DaemonState, DaemonStatus, RestartHook, Supervised, Supervisor, unit_name,
};

const DEST: &str = "org.freedesktop.systemd1";
const PATH: &str = "/org/freedesktop/systemd1";
const MANAGER: &str = "org.freedesktop.systemd1.Manager";
const UNIT_PREFIX: &str = "gpuslice-mps-";
/// How long a stopped unit gets to go inactive (systemd's own stop timeout
/// kills it before that).
const STOP_BOUND: std::time::Duration = std::time::Duration::from_secs(100);

/// Supervises control daemons as transient systemd units.
#[derive(Debug, Clone)]
pub struct SystemdSupervisor {
    bus: Connection,
}

type Property<'a> = (&'a str, Value<'a>);

impl SystemdSupervisor {
    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured).
    pub fn connect() -> Result<Self, MpsError> {
        let bus = Connection::system().map_err(|e| sd_err("connect to", "the system bus", &e))?;
        Ok(Self { bus })
    }

    fn manager_call<B>(&self, method: &str, unit: &str, body: &B) -> Result<zbus::Message, MpsError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        self.bus
            .call_method(Some(DEST), PATH, Some(MANAGER), method, body)
            .map_err(|e| sd_err("call", unit, &e).with_action(method_action(method)))
    }

    /// The properties of the transient unit for `spec`.
    fn properties(spec: &DaemonSpec) -> Vec<Property<'static>> {
        let program = spec.program.display().to_string();
        let exec = vec![(program.clone(), vec![program, "-f".to_owned()], false)];
        let env: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut props: Vec<Property<'static>> = vec![
            (
                "Description",
                Value::from(format!("gpuslice MPS control daemon for {}", spec.key)),
            ),
            ("Type", Value::from("simple")),
            ("ExecStart", Value::from(exec)),
            ("Environment", Value::from(env)),
            ("Restart", Value::from("on-failure")),
            ("CollectMode", Value::from("inactive-or-failed")),
        ];
        if spec.bind_shm {
            let bind = vec![(
                spec.layout.shm_dir().display().to_string(),
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

    fn stop_unit(&self, unit: &str) -> Result<(), MpsError> {
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
}

fn method_action(method: &str) -> &'static str {
    match method {
        "StartTransientUnit" => "start",
        "StopUnit" => "stop",
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

impl MpsError {
    fn with_action(self, action: &'static str) -> Self {
        match self {
            Self::Systemd { unit, problem, .. } => Self::Systemd {
                action,
                unit,
                problem,
            },
            other => other,
        }
    }
}

impl Supervisor for SystemdSupervisor {
    fn name(&self) -> &'static str {
        "systemd"
    }

    fn start(
        &self,
        spec: &DaemonSpec,
        _on_restart: RestartHook,
    ) -> Result<Arc<dyn Supervised>, MpsError> {
        let unit = spec.unit_name();
        let aux: Vec<(&str, Vec<Property<'_>>)> = Vec::new();
        self.manager_call(
            "StartTransientUnit",
            &unit,
            &(unit.as_str(), "replace", Self::properties(spec), aux),
        )?;
        Ok(Arc::new(UnitDaemon {
            supervisor: self.clone(),
            unit,
            pipe_dir: spec.layout.pipe_dir(),
        }))
    }

    fn adopt(&self, spec: &DaemonSpec) -> Result<Option<Arc<dyn Supervised>>, MpsError> {
        let unit = spec.unit_name();
        let daemon = UnitDaemon {
            supervisor: self.clone(),
            unit,
            pipe_dir: spec.layout.pipe_dir(),
        };
        Ok(daemon
            .is_alive()
            .then(|| Arc::new(daemon) as Arc<dyn Supervised>))
    }

    fn stop_stale(
        &self,
        hash: &str,
        _layout: &DaemonLayout,
        quit: &dyn Fn(),
    ) -> Result<(), MpsError> {
        quit();
        self.stop_unit(&unit_name(hash))
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
                let unit = UnitDaemon {
                    supervisor: self.clone(),
                    unit: row.0.clone(),
                    pipe_dir: mps_dir.join(&hash).join("pipe"),
                };
                let env = unit.property("org.freedesktop.systemd1.Service", "Environment")?;
                let env = Vec::<String>::try_from(env).ok()?;
                env.iter().any(|e| e.starts_with(&ours)).then_some(hash)
            })
            .collect())
    }
}

/// One transient unit.
#[derive(Debug)]
struct UnitDaemon {
    supervisor: SystemdSupervisor,
    unit: String,
    /// Watched while the unit stops.
    pipe_dir: std::path::PathBuf,
}

impl UnitDaemon {
    fn property(&self, interface: &str, name: &str) -> Option<OwnedValue> {
        let path = self.supervisor.unit_path(&self.unit).ok()??;
        let reply = self
            .supervisor
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

    fn active_state(&self) -> Option<String> {
        let value = self.property("org.freedesktop.systemd1.Unit", "ActiveState")?;
        String::try_from(value).ok()
    }

    fn service_u32(&self, name: &str) -> Option<u32> {
        let value = self.property("org.freedesktop.systemd1.Service", name)?;
        u32::try_from(value).ok()
    }
}

impl Supervised for UnitDaemon {
    fn is_alive(&self) -> bool {
        matches!(
            self.active_state().as_deref(),
            Some("active" | "activating" | "reloading")
        )
    }

    fn status(&self) -> DaemonStatus {
        let state = match self.active_state().as_deref() {
            Some("active") => DaemonState::Running,
            Some("activating" | "reloading") => DaemonState::Restarting,
            Some("failed") => DaemonState::Failed,
            _ => DaemonState::Stopped,
        };
        DaemonStatus {
            pid: self.service_u32("MainPID").filter(|p| *p != 0),
            unit: Some(self.unit.clone()),
            state,
            restarts: self.service_u32("NRestarts").unwrap_or(0),
        }
    }

    fn stop(&self, quit: &dyn Fn()) -> Result<(), MpsError> {
        quit();
        self.supervisor.stop_unit(&self.unit)?;
        // StopUnit only queues the job: wait (bounded) until the daemon is
        // gone, so the GPU's compute mode is reset after it, not under it.
        let dir = if self.pipe_dir.is_dir() {
            self.pipe_dir.as_path()
        } else {
            Path::new("/")
        };
        if !wait_on_dir(dir, STOP_BOUND, &|| Ok(!self.is_alive()))? {
            tracing::warn!(unit = %self.unit, "MPS control daemon unit still active after stop");
        }
        Ok(())
    }
}
