//! The IMEX daemon under systemd: an instance of the shipped template unit
//! `gpuslice-imex@<domain uid>.service` (systemd/gpuslice-imex@.service),
//! started and stopped over the system bus. Its sandbox is the template's:
//! AF_INET/AF_INET6 with every address denied but the rack network (and the
//! loopback address unheld indices' names point to), which gpusliced sets
//! on the instance before it starts (a runtime property, dropped again when
//! it stops); the domain's `hosts` bound over its
//! /etc/hosts; its output in the journal. systemd restarts it when it dies
//! and keeps it when gpusliced restarts: the next gpusliced finds it by its
//! name.
//!
//! The unit runs the program its `ExecStart=` names; a start checks that it
//! is `[imex] program`, so the two cannot drift apart silently.

use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use gpuslice_imex::names::UNUSED;
use gpuslice_imex::network::RackNetwork;
use zbus::zvariant::{OwnedObjectPath, OwnedValue, Value};

use super::{Daemon, ImexSpec, ImexStatus, Runner, STOP_BOUND};
use crate::compute_domains::DomainError;
use crate::supervise::DaemonState;
use crate::supervise::bus::{Activity, BusError, Observed, SERVICE, SystemBus};
use crate::supervise::process::ProcessId;

/// The template's name, without the instance.
pub const TEMPLATE: &str = "gpuslice-imex@.service";
/// What every instance's name starts with.
const PREFIX: &str = "gpuslice-imex@";
/// How often a stopping unit is read.
const PROBE: Duration = Duration::from_millis(100);
/// systemd's manager on the bus.
const DEST: &str = "org.freedesktop.systemd1";
const PATH: &str = "/org/freedesktop/systemd1";
const MANAGER: &str = "org.freedesktop.systemd1.Manager";

/// The instance of `domain`.
pub fn unit_name(domain: &str) -> String {
    format!("{PREFIX}{domain}.service")
}

/// Runs daemons as instances of the template unit.
#[derive(Debug, Clone)]
pub struct UnitRunner {
    bus: SystemBus,
}

fn bus_error(err: BusError) -> DomainError {
    DomainError::Systemd(err)
}

impl UnitRunner {
    /// Over the system bus.
    pub fn connect() -> Result<Self, DomainError> {
        Ok(Self {
            bus: SystemBus::connect().map_err(bus_error)?,
        })
    }

    /// The program the unit's `ExecStart=` runs, when it can be read. The
    /// instance is loaded first (`LoadUnit`): one that never ran is not
    /// loaded, and `GetUnit` answers "Unit ... not loaded." for it.
    fn unit_program(&self, unit: &str) -> Option<String> {
        type ExecRow = (String, Vec<String>, bool, u64, u64, u64, u64, u32, i32, i32);
        let path: OwnedObjectPath = self
            .bus
            .connection()
            .call_method(Some(DEST), PATH, Some(MANAGER), "LoadUnit", &(unit,))
            .inspect_err(
                |err| tracing::warn!(%unit, error = %err, "systemd cannot load the IMEX unit"),
            )
            .ok()?
            .body()
            .deserialize()
            .ok()?;
        let value: OwnedValue = self.bus.property(&path, SERVICE, "ExecStart")?;
        let rows = Vec::<ExecRow>::try_from(value).ok()?;
        rows.into_iter().next().map(|row| row.0)
    }

    /// `IPAddressAllow=` of `rack`: D-Bus `a(iayu)`, family, address bytes
    /// and prefix. With the rack, the address the names of unheld indices
    /// point to ([`UNUSED`], a loopback address): denied, a connection to it
    /// would hang until the daemon's timeout (systemd's firewall drops the
    /// SYN) instead of being refused at once, as the mapping means it to.
    fn allow(rack: &RackNetwork) -> Value<'static> {
        let row = |address: IpAddr, prefix: u8| match address {
            IpAddr::V4(a) => (libc::AF_INET, a.octets().to_vec(), u32::from(prefix)),
            IpAddr::V6(a) => (libc::AF_INET6, a.octets().to_vec(), u32::from(prefix)),
        };
        let rows: Vec<(i32, Vec<u8>, u32)> = rack
            .networks()
            .iter()
            .map(|n| {
                let (address, prefix) = n.parts();
                row(address, prefix)
            })
            .chain(std::iter::once(row(UNUSED, 32)))
            .collect();
        Value::from(rows)
    }
}

impl UnitRunner {
    /// Sets the unit's `IPAddressAllow=` to `rack` (a runtime property;
    /// at once on a running instance, as when gpusliced finds one again
    /// after `[imex] rack_network` changed). systemd adds the addresses of a
    /// set IPAddressAllow= to the list the unit has (one an earlier runtime
    /// drop-in left, say); only an empty list resets it. So the empty list
    /// first: the rack network replaces that list instead of widening it.
    fn allow_rack(&self, unit: &str, rack: &RackNetwork) -> Result<(), DomainError> {
        let none: Vec<(i32, Vec<u8>, u32)> = Vec::new();
        self.bus
            .set_runtime_properties(
                unit,
                vec![
                    ("IPAddressAllow", Value::from(none)),
                    ("IPAddressAllow", Self::allow(rack)),
                ],
            )
            .map_err(bus_error)
    }
}

impl Runner for UnitRunner {
    fn name(&self) -> &'static str {
        "systemd"
    }

    fn start(&self, spec: &ImexSpec) -> Result<Box<dyn Daemon>, DomainError> {
        let unit = unit_name(spec.folder.domain());
        let want = spec.program.display().to_string();
        let runs = self.unit_program(&unit);
        if runs.as_deref() != Some(want.as_str()) {
            return Err(DomainError::UnitProgram {
                unit,
                runs: runs.unwrap_or_else(|| "nothing gpusliced can read".to_owned()),
                program: want,
            });
        }
        self.allow_rack(&unit, &spec.rack)?;
        self.bus.start(&unit).map_err(bus_error)?;
        super::passed_start();
        Ok(Box::new(UnitDaemon {
            bus: self.bus.clone(),
            unit,
            stopping: std::sync::atomic::AtomicBool::new(false),
        }))
    }

    fn adopt(&self, spec: &ImexSpec) -> Result<Option<Box<dyn Daemon>>, DomainError> {
        let unit = unit_name(spec.folder.domain());
        if !self.bus.observe(&unit).is_alive() {
            return Ok(None);
        }
        self.allow_rack(&unit, &spec.rack)?;
        Ok(Some(Box::new(UnitDaemon {
            bus: self.bus.clone(),
            unit,
            stopping: std::sync::atomic::AtomicBool::new(false),
        })))
    }

    fn stop_stale(&self, spec: &ImexSpec) {
        let daemon = UnitDaemon {
            bus: self.bus.clone(),
            unit: unit_name(spec.folder.domain()),
            stopping: std::sync::atomic::AtomicBool::new(false),
        };
        daemon.stop();
    }

    fn running(&self, _imex_dir: &Path) -> Vec<String> {
        let units = match self.bus.list(&format!("{PREFIX}*.service")) {
            Ok(units) => units,
            Err(err) => {
                tracing::warn!(error = %err, "cannot list the IMEX daemons' units");
                return Vec::new();
            }
        };
        units
            .into_iter()
            .filter(|(name, _)| self.bus.observe(name).is_alive())
            .filter_map(|(name, _)| {
                let uid = name.strip_prefix(PREFIX)?.strip_suffix(".service")?;
                Some(uid.to_owned())
            })
            .collect()
    }
}

/// One instance of the template unit.
#[derive(Debug)]
pub struct UnitDaemon {
    bus: SystemBus,
    unit: String,
    stopping: std::sync::atomic::AtomicBool,
}

impl UnitDaemon {
    fn observe(&self) -> Observed {
        self.bus.observe(&self.unit)
    }
}

/// The state a reading of the unit says.
fn state_of(observed: &Observed, stopping: bool) -> DaemonState {
    match observed.activity {
        Activity::Active | Activity::Reloading => DaemonState::Running,
        Activity::Activating => DaemonState::Restarting,
        Activity::Inactive if observed.job_pending => DaemonState::Restarting,
        _ if stopping => DaemonState::Stopped,
        _ => DaemonState::Failed,
    }
}

impl Daemon for UnitDaemon {
    fn status(&self) -> ImexStatus {
        let observed = self.observe();
        ImexStatus {
            pid: observed.running_pid(),
            state: state_of(
                &observed,
                self.stopping.load(std::sync::atomic::Ordering::Relaxed),
            ),
            restarts: observed.restarts,
            unit: Some(self.unit.clone()),
        }
    }

    fn process(&self) -> Option<ProcessId> {
        self.observe().running_pid().and_then(ProcessId::of)
    }

    fn problem(&self) -> Option<String> {
        let observed = self.observe();
        (state_of(&observed, false) == DaemonState::Failed).then(|| {
            format!(
                "its unit {} is {:?} after {} restarts (journalctl -u {})",
                self.unit, observed.activity, observed.restarts, self.unit
            )
        })
    }

    fn wait_for_change(&self, bound: Duration) {
        // systemd's signals are not followed here: a bounded pause, then the
        // caller reads the unit again.
        let (gate, pause) = (std::sync::Mutex::new(()), std::sync::Condvar::new());
        let guard = gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        drop(pause.wait_timeout(guard, bound));
    }

    fn reload(&self) -> bool {
        self.bus
            .kill_main(&self.unit, libc::SIGUSR1)
            .inspect_err(|err| tracing::warn!(error = %err, "IMEX daemon not signalled"))
            .is_ok()
    }

    fn stop(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if let Err(err) = self.bus.stop(&self.unit) {
            tracing::warn!(error = %err, "IMEX daemon's unit not stopped");
            return;
        }
        let deadline = Instant::now() + STOP_BOUND * 10;
        while self.observe().is_alive() && Instant::now() < deadline {
            self.wait_for_change(PROBE);
        }
        if let Err(err) = self.bus.revert(&self.unit) {
            tracing::warn!(error = %err, "the IMEX unit's runtime properties stay until the next boot");
        }
        super::passed_stop();
    }

    fn let_go(&self) {
        // systemd keeps the unit; nothing of it lives in gpusliced.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_s_reading_is_a_daemon_state() {
        let seen = |activity, job_pending| Observed {
            activity,
            job_pending,
            main_pid: 7,
            restarts: 0,
        };
        assert_eq!(
            state_of(&seen(Activity::Active, false), false),
            DaemonState::Running
        );
        assert_eq!(
            state_of(&seen(Activity::Activating, false), false),
            DaemonState::Restarting,
            "waiting for its automatic restart"
        );
        assert_eq!(
            state_of(&seen(Activity::Inactive, true), false),
            DaemonState::Restarting,
            "its start job is queued"
        );
        assert_eq!(
            state_of(&seen(Activity::Failed, false), false),
            DaemonState::Failed
        );
        assert_eq!(state_of(&Observed::GONE, true), DaemonState::Stopped);
        assert_eq!(state_of(&Observed::GONE, false), DaemonState::Failed);
        assert_eq!(unit_name("5b9c"), "gpuslice-imex@5b9c.service");
    }
}
