//! systemd's manager over the system bus (zbus, blocking API): units
//! started (by name, or transient with their properties), stopped,
//! signalled, given runtime properties, listed and read. One reading of a
//! unit is an [`Observed`]; what a supervisor makes of it is its own.
//!
//! The connection subscribes to systemd's signals (`Subscribe`): without a
//! subscriber systemd sends no `PropertiesChanged` for units, and a unit's
//! watcher would only see a change on its periodic re-read.

use zbus::blocking::Connection;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

const DEST: &str = "org.freedesktop.systemd1";
const PATH: &str = "/org/freedesktop/systemd1";
const MANAGER: &str = "org.freedesktop.systemd1.Manager";
const UNIT: &str = "org.freedesktop.systemd1.Unit";
/// The interface of a service unit's properties.
pub const SERVICE: &str = "org.freedesktop.systemd1.Service";

/// A call to systemd that failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {unit} through systemd: {problem}")]
pub struct BusError {
    /// What was tried ("start", "stop", "connect to", ...).
    pub action: &'static str,
    /// The unit (or "the system bus").
    pub unit: String,
    /// What systemd or the bus said.
    pub problem: String,
}

impl BusError {
    fn new(action: &'static str, unit: &str, problem: &dyn std::fmt::Display) -> Self {
        Self {
            action,
            unit: unit.to_owned(),
            problem: problem.to_string(),
        }
    }

    /// Whether systemd answered that the unit is not there.
    pub fn no_such_unit(&self) -> bool {
        self.problem.contains("NoSuchUnit") || self.problem.contains("not loaded")
    }
}

/// A property of a unit in a call (`(name, value)`, D-Bus `(sv)`).
pub type Property<'a> = (&'a str, Value<'a>);

/// A unit's `ActiveState`, or its absence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// Not loaded: never started, or collected after it stopped or failed.
    Gone,
    /// `inactive`.
    Inactive,
    /// `activating`, which includes waiting for an automatic restart.
    Activating,
    /// `active`.
    Active,
    /// `reloading`.
    Reloading,
    /// `deactivating`.
    Deactivating,
    /// `failed`: the restarts ran out (or the start failed).
    Failed,
}

impl Activity {
    /// From systemd's `ActiveState` word.
    pub fn parse(active_state: &str) -> Self {
        match active_state {
            "active" => Self::Active,
            "activating" => Self::Activating,
            "reloading" => Self::Reloading,
            "deactivating" => Self::Deactivating,
            "failed" => Self::Failed,
            _ => Self::Inactive,
        }
    }
}

/// One reading of a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observed {
    /// `ActiveState`.
    pub activity: Activity,
    /// Whether a job (a queued start or stop) is pending.
    pub job_pending: bool,
    /// `MainPID`, 0 when none.
    pub main_pid: u32,
    /// `NRestarts`: automatic restarts of the unit.
    pub restarts: u32,
}

impl Observed {
    /// A unit systemd does not know.
    pub const GONE: Self = Self {
        activity: Activity::Gone,
        job_pending: false,
        main_pid: 0,
        restarts: 0,
    };

    /// Whether the daemon runs or is being (re)started: a just-started unit
    /// is `inactive` until its start job runs.
    pub fn is_alive(&self) -> bool {
        match self.activity {
            Activity::Active | Activity::Activating | Activity::Reloading => true,
            Activity::Inactive => self.job_pending,
            Activity::Gone | Activity::Deactivating | Activity::Failed => false,
        }
    }

    /// Whether `pid` is the unit's running process.
    pub fn runs(&self, pid: u32) -> bool {
        matches!(self.activity, Activity::Active | Activity::Reloading) && self.main_pid == pid
    }

    /// The running process, if any.
    pub fn running_pid(&self) -> Option<u32> {
        (matches!(self.activity, Activity::Active | Activity::Reloading) && self.main_pid != 0)
            .then_some(self.main_pid)
    }
}

/// systemd's manager, over a subscribed connection to the system bus.
#[derive(Debug, Clone)]
pub struct SystemBus {
    bus: Connection,
}

impl SystemBus {
    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured)
    /// and subscribes to systemd's signals.
    pub fn connect() -> Result<Self, BusError> {
        let bus =
            Connection::system().map_err(|e| BusError::new("connect to", "the system bus", &e))?;
        let manager = Self { bus };
        match manager.call("Subscribe", "signals", &()) {
            Ok(_) => {}
            Err(e) if e.problem.contains("AlreadySubscribed") => {}
            Err(e) => return Err(e),
        }
        Ok(manager)
    }

    /// Whether this process runs as a systemd service: systemd sets
    /// `INVOCATION_ID` for one (a `NOTIFY_SOCKET` alone, as the tests'
    /// harness sets, is not enough: units of the host's systemd are not a
    /// test's to touch).
    pub fn runs_as_service() -> bool {
        std::env::var_os("INVOCATION_ID").is_some_and(|v| !v.is_empty())
    }

    /// The connection (for signal streams).
    pub fn connection(&self) -> &Connection {
        &self.bus
    }

    fn call<B>(&self, method: &str, unit: &str, body: &B) -> Result<zbus::Message, BusError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        self.bus
            .call_method(Some(DEST), PATH, Some(MANAGER), method, body)
            .map_err(|e| BusError::new(action_of(method), unit, &e))
    }

    /// Starts `unit` (a unit file's, or a template's instance).
    pub fn start(&self, unit: &str) -> Result<(), BusError> {
        self.call("StartUnit", unit, &(unit, "replace")).map(|_| ())
    }

    /// Starts a transient `unit` with `properties`.
    pub fn start_transient(
        &self,
        unit: &str,
        properties: Vec<Property<'_>>,
    ) -> Result<(), BusError> {
        let aux: Vec<(&str, Vec<Property<'_>>)> = Vec::new();
        self.call(
            "StartTransientUnit",
            unit,
            &(unit, "replace", properties, aux),
        )
        .map(|_| ())
    }

    /// Stops `unit` (queued: read it to see it gone); a unit systemd does
    /// not know is stopped.
    pub fn stop(&self, unit: &str) -> Result<(), BusError> {
        match self.call("StopUnit", unit, &(unit, "replace")) {
            Err(e) if !e.no_such_unit() => Err(e),
            _ => Ok(()),
        }
    }

    /// Sends `signal` to `unit`'s main process.
    pub fn kill_main(&self, unit: &str, signal: i32) -> Result<(), BusError> {
        self.call("KillUnit", unit, &(unit, "main", signal))
            .map(|_| ())
    }

    /// Sets `properties` on `unit` until the next boot (a runtime drop-in),
    /// as `systemctl set-property --runtime` does.
    pub fn set_runtime_properties(
        &self,
        unit: &str,
        properties: Vec<Property<'_>>,
    ) -> Result<(), BusError> {
        self.call("SetUnitProperties", unit, &(unit, true, properties))
            .map(|_| ())
    }

    /// Drops what [`Self::set_runtime_properties`] set on `unit` (and its
    /// other drop-ins of /run and /etc), as `systemctl revert` does.
    pub fn revert(&self, unit: &str) -> Result<(), BusError> {
        match self.call("RevertUnitFiles", unit, &(vec![unit],)) {
            Err(e) if !e.no_such_unit() => Err(e),
            _ => Ok(()),
        }
    }

    /// The names of the loaded units matching `pattern` (a glob), with
    /// their object paths.
    pub fn list(&self, pattern: &str) -> Result<Vec<(String, OwnedObjectPath)>, BusError> {
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
        let states: Vec<&str> = Vec::new();
        let reply = self.call("ListUnitsByPatterns", pattern, &(states, vec![pattern]))?;
        let rows: Vec<UnitRow> = reply
            .body()
            .deserialize()
            .map_err(|e| BusError::new("read the list of", pattern, &e))?;
        Ok(rows.into_iter().map(|row| (row.0, row.6)).collect())
    }

    fn unit_path(&self, unit: &str) -> Result<Option<OwnedObjectPath>, BusError> {
        match self
            .bus
            .call_method(Some(DEST), PATH, Some(MANAGER), "GetUnit", &(unit,))
        {
            Ok(reply) => reply
                .body()
                .deserialize::<OwnedObjectPath>()
                .map(Some)
                .map_err(|e| BusError::new("read GetUnit of", unit, &e)),
            Err(zbus::Error::MethodError(name, _, _)) if name.as_str().ends_with("NoSuchUnit") => {
                Ok(None)
            }
            Err(e) => Err(BusError::new("find", unit, &e)),
        }
    }

    /// A property of the unit at `path`.
    pub fn property(
        &self,
        path: &OwnedObjectPath,
        interface: &str,
        name: &str,
    ) -> Option<OwnedValue> {
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

    /// A service property of `unit`, when it is loaded.
    pub fn service_property(&self, unit: &str, name: &str) -> Option<OwnedValue> {
        let path = self.unit_path(unit).ok()??;
        self.property(&path, SERVICE, name)
    }

    /// One reading of `unit`; a unit that cannot be read counts as gone.
    pub fn observe(&self, unit: &str) -> Observed {
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
    pub fn changes_of(unit: &str) -> zbus::Result<zbus::MatchRule<'static>> {
        let path = format!("{PATH}/unit/{}", escape_path(unit));
        Ok(zbus::MatchRule::builder()
            .msg_type(zbus::message::Type::Signal)
            .interface("org.freedesktop.DBus.Properties")?
            .member("PropertiesChanged")?
            .path(path)?
            .build())
    }
}

/// systemd's object path escaping (`sd_bus_path_encode`): every byte but
/// ASCII letters and digits becomes `_xx`, lowercase hex.
pub fn escape_path(name: &str) -> String {
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

fn action_of(method: &str) -> &'static str {
    match method {
        "StartUnit" | "StartTransientUnit" => "start",
        "StopUnit" => "stop",
        "KillUnit" => "signal",
        "SetUnitProperties" => "set properties of",
        "RevertUnitFiles" => "revert",
        "Subscribe" => "subscribe to",
        "ListUnitsByPatterns" => "list",
        _ => "call",
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
        assert_eq!(
            escape_path("gpuslice-imex@5b9c.service"),
            "gpuslice_2dimex_405b9c_2eservice"
        );
    }
}
