//! A process as gpusliced knows it across its own restarts: its pid and its
//! start time (`/proc/<pid>/stat`, clock ticks since boot), so a pid the
//! kernel gave to another process since is never taken for it, and nothing
//! a process can write into its own environment makes it one of ours.
//! Kept in a file of the daemon's own folder ([`ProcessId::keep`],
//! [`ProcessId::kept`]), the one way a restarted gpusliced finds a child
//! daemon again. Signals, and the boot clock the start times are read on.

use std::path::Path;
use std::time::Duration;

use gpuslice_cdi::atomic::{AtomicError, read_regular, write_atomic};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// A process: its pid and when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[derive(serde::Deserialize)]
pub struct ProcessId {
    /// Its pid.
    pub pid: u32,
    /// When it started, in clock ticks since boot (`/proc/<pid>/stat` field
    /// 22).
    pub start_ticks: u64,
}

impl ProcessId {
    /// The process `pid` is now, if it exists and is not a zombie.
    pub fn of(pid: u32) -> Option<Self> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        // After the name: state is field 3, starttime field 22.
        if fields.first().is_none_or(|state| *state == "Z") {
            return None;
        }
        let start_ticks = fields.get(19)?.parse().ok()?;
        Some(Self { pid, start_ticks })
    }

    /// Whether this very process still runs (same pid, same start).
    pub fn alive(&self) -> bool {
        Self::of(self.pid) == Some(*self)
    }

    /// When it started, on the boot clock.
    pub fn started(&self) -> Duration {
        let hz = clock_ticks_per_second();
        Duration::from_micros(self.start_ticks.saturating_mul(1_000_000) / hz)
    }

    /// Sends `signal`; false when the process is gone (or not this one).
    pub fn signal(&self, signal: Signal) -> bool {
        self.alive() && send(self.pid, Some(signal))
    }

    /// Writes this process to `dir/name` (root's alone, replaced whole), for
    /// a later gpusliced to find it by.
    pub fn keep(&self, dir: &Path, name: &str) -> Result<(), AtomicError> {
        let text = format!(
            "{{\"pid\":{},\"start_ticks\":{}}}",
            self.pid, self.start_ticks
        );
        write_atomic(dir, name, text.as_bytes(), 0o600)
    }

    /// The process `dir/name` names, when that very process still runs.
    #[must_use]
    pub fn kept(dir: &Path, name: &str) -> Option<Self> {
        let bytes = read_regular(dir, name, 4096).ok()??;
        let process: Self = serde_json::from_slice(&bytes).ok()?;
        process.alive().then_some(process)
    }
}

/// Whether `pid` lives in gpusliced's own pid namespace. A process found by
/// anything it could have set itself (a variable in its environment) must
/// pass this: a container's processes live in namespaces of their own.
pub fn in_own_pid_namespace(pid: u32) -> bool {
    let ns = |of: &str| std::fs::read_link(format!("/proc/{of}/ns/pid")).ok();
    ns("self").is_some_and(|own| ns(&pid.to_string()) == Some(own))
}

/// The kernel's clock ticks per second for /proc times (USER_HZ).
fn clock_ticks_per_second() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|hz| u64::try_from(hz).ok())
        .filter(|hz| *hz > 0)
        .unwrap_or(100)
}

/// Time since boot (CLOCK_BOOTTIME: it counts suspend, as /proc start times
/// do).
pub fn since_boot() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME)
        .map(|t| {
            Duration::new(
                u64::try_from(t.tv_sec()).unwrap_or(0),
                u32::try_from(t.tv_nsec()).unwrap_or(0),
            )
        })
        .unwrap_or_default()
}

/// Whether `pid` exists and is not a zombie (an exited process whose parent
/// has not reaped it is gone for our purposes).
pub fn pid_alive(pid: u32) -> bool {
    send(pid, None) && ProcessId::of(pid).is_some()
}

/// SIGKILL.
pub fn kill_pid(pid: u32) {
    send(pid, Some(Signal::SIGKILL));
}

/// Sends `signal` (None: only checks the pid exists); whether it was taken.
pub fn send(pid: u32, signal: Option<Signal>) -> bool {
    i32::try_from(pid).is_ok_and(|p| kill(Pid::from_raw(p), signal).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_known_by_pid_and_start() {
        let me = ProcessId::of(std::process::id()).expect("this process");
        assert!(me.alive());
        assert!(me.started() <= since_boot(), "started before now");
        let other = ProcessId {
            start_ticks: me.start_ticks + 1,
            ..me
        };
        assert!(
            !other.alive(),
            "a pid with another start is another process"
        );
        assert!(!other.signal(Signal::SIGCONT));
        assert_eq!(ProcessId::of(u32::MAX), None);
    }

    #[test]
    fn a_kept_process_is_found_again_only_while_it_is_that_process() {
        let dir = tempfile::tempdir().expect("a temp dir");
        let me = ProcessId::of(std::process::id()).expect("this process");
        me.keep(dir.path(), "daemon.pid").expect("kept");
        assert_eq!(ProcessId::kept(dir.path(), "daemon.pid"), Some(me));
        let reused = ProcessId {
            start_ticks: me.start_ticks + 1,
            ..me
        };
        reused.keep(dir.path(), "daemon.pid").expect("kept");
        assert_eq!(
            ProcessId::kept(dir.path(), "daemon.pid"),
            None,
            "a pid reused"
        );
        assert_eq!(ProcessId::kept(dir.path(), "missing.pid"), None);
        assert!(in_own_pid_namespace(std::process::id()));
        assert!(!in_own_pid_namespace(u32::MAX));
    }
}
