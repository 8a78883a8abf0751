//! When a domain's IMEX daemon is told that its members changed: the
//! SIGUSR1 that makes it re-resolve its members' names and reconnect,
//! without a restart (a restart ends what other nodes imported from it).
//!
//! IMEX handles SIGUSR1 at most once every 5 seconds and ignores the others
//! (NVIDIA's IMEX guide, "Signal handling"), so a signal sent too soon
//! would be lost and the daemon would keep an old mapping. Hence:
//!
//! - a process that started after the mapping was last written read it
//!   whole and needs no signal (NVIDIA's daemon skips "fresh" processes
//!   too);
//! - otherwise one signal goes [`DEBOUNCE`] after the last write (members
//!   that join together cost one), and never sooner than [`SPACING`] after
//!   the previous one to the same process;
//! - a process found again after a restart of gpusliced knows the mapping
//!   if it started, or was told (the folder's `told` file), after the last
//!   write; the spacing counts from that signal (from the restart, when none
//!   is known: one may just have gone);
//! - a process that knows the mapping but is still not connected to every
//!   member [`RETRY`] after it was signalled (a peer that was not listening
//!   yet) is signalled again;
//! - a process younger than [`SETTLE`] is never signalled: until it has set
//!   its handler, SIGUSR1's default action would end it.
//!
//! Pure: times are on the boot clock (`/proc` start times are), given by
//! the caller.

use std::time::Duration;

use crate::supervise::process::ProcessId;

/// The quiet after a write before the signal goes.
pub const DEBOUNCE: Duration = Duration::from_millis(300);
/// The least time between two signals to one process: IMEX's 5 s, and a
/// margin for the two clocks.
pub const SPACING: Duration = Duration::from_millis(5_500);
/// How long a process that knows the mapping may stay unconnected before it
/// is signalled again.
pub const RETRY: Duration = Duration::from_secs(20);
/// How old a process must be before it is signalled.
pub const SETTLE: Duration = Duration::from_secs(2);
/// A process that started within this of a write may not have read it
/// (start times are in clock ticks).
const START_MARGIN: Duration = Duration::from_millis(50);

/// What is known of one domain's daemon and its mapping.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reload {
    /// When the mapping was last written.
    written: Option<Duration>,
    /// The daemon's process now.
    process: Option<ProcessId>,
    /// When that process was last signalled, or found again (it may have
    /// been signalled just before): the spacing counts from it.
    last_sent: Option<Duration>,
    /// Whether that process knows the mapping last written.
    knows: bool,
}

/// Whether a process that started at `started` read a mapping written at
/// `written`.
fn read_it(started: Duration, written: Option<Duration>) -> bool {
    written.is_none_or(|w| started > w + START_MARGIN)
}

impl Reload {
    /// A daemon found running after a restart of gpusliced, at `now`: its
    /// mapping last written at `written`, the daemon last told at `told`
    /// (the files' times, on the boot clock). It knows the mapping if it
    /// started or was told after the write; the spacing counts from the
    /// last signal (from `now` when none is known: one may just have gone).
    pub fn adopted(
        process: Option<ProcessId>,
        written: Option<Duration>,
        told: Option<Duration>,
        now: Duration,
    ) -> Self {
        let told_after = told.is_some_and(|t| written.is_none_or(|w| t >= w));
        Self {
            written,
            knows: told_after || process.is_some_and(|p| read_it(p.started(), written)),
            process,
            last_sent: Some(told.unwrap_or(now)),
        }
    }

    /// The mapping was rewritten at `now`.
    pub fn written(&mut self, now: Duration) {
        self.written = Some(now);
        self.knows = false;
    }

    /// The daemon's process now (a new one after a restart of it, or none).
    pub fn seen(&mut self, process: Option<ProcessId>) {
        if process == self.process {
            return;
        }
        self.process = process;
        self.last_sent = None;
        self.knows = process.is_some_and(|p| read_it(p.started(), self.written));
    }

    /// Whether the process now knows the mapping last written.
    pub fn knows(&self) -> bool {
        self.process.is_some() && self.knows
    }

    /// When the next signal is due, if one is: `connected` says whether the
    /// process is connected to every member now.
    pub fn due(&self, connected: bool) -> Option<Duration> {
        let process = self.process?;
        let spaced = self
            .last_sent
            .map_or(Duration::ZERO, |t| t + SPACING)
            .max(process.started() + SETTLE);
        if !self.knows {
            let quiet = self.written.map_or(Duration::ZERO, |w| w + DEBOUNCE);
            return Some(quiet.max(spaced));
        }
        if connected {
            return None;
        }
        let since = self.last_sent.unwrap_or_else(|| process.started());
        Some((since + RETRY).max(spaced))
    }

    /// The signal went to the process at `now`.
    pub fn sent(&mut self, now: Duration) {
        self.last_sent = Some(now);
        self.knows = true;
    }

    /// The process the signal is for.
    pub fn process(&self) -> Option<ProcessId> {
        self.process
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    /// A process started at `secs` on the boot clock.
    fn started_at(pid: u32, secs: u64) -> ProcessId {
        let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
            .ok()
            .flatten()
            .and_then(|hz| u64::try_from(hz).ok())
            .unwrap_or(100);
        ProcessId {
            pid,
            start_ticks: secs * hz,
        }
    }

    #[test]
    fn a_process_started_after_the_write_needs_no_signal() {
        let mut reload = Reload::default();
        reload.written(10 * S);
        reload.seen(Some(started_at(7, 11)));
        assert!(reload.knows());
        assert_eq!(reload.due(true), None);
    }

    #[test]
    fn a_write_is_told_once_after_the_quiet_and_spaced_from_the_last() {
        let mut reload = Reload::default();
        reload.seen(Some(started_at(7, 1)));
        assert!(reload.knows(), "nothing written yet");
        reload.written(2 * S);
        assert_eq!(
            reload.due(true),
            Some(3 * S),
            "not before the process settled"
        );
        reload.written(10 * S);
        reload.written(10 * S + DEBOUNCE / 2);
        assert!(!reload.knows());
        assert_eq!(reload.due(true), Some(10 * S + DEBOUNCE / 2 + DEBOUNCE));
        reload.sent(11 * S);
        assert!(reload.knows());
        assert_eq!(reload.due(true), None);
        reload.written(12 * S);
        assert_eq!(
            reload.due(true),
            Some(11 * S + SPACING),
            "IMEX would ignore a sooner one"
        );
    }

    #[test]
    fn a_new_process_is_judged_by_its_start() {
        let mut reload = Reload::default();
        reload.seen(Some(started_at(7, 1)));
        reload.written(20 * S);
        reload.sent(20 * S);
        reload.written(21 * S);
        reload.seen(Some(started_at(8, 21)));
        assert!(!reload.knows(), "started within the margin of the write");
        assert_eq!(
            reload.due(true),
            Some(21 * S + SETTLE),
            "a new process: no spacing, but it settles first"
        );
        reload.seen(None);
        assert!(!reload.knows());
        assert_eq!(reload.due(false), None, "nothing to signal");
    }

    #[test]
    fn a_daemon_found_again_waits_the_spacing_and_is_retried_when_unconnected() {
        let reload = Reload::adopted(Some(started_at(7, 5)), Some(3 * S), None, 100 * S);
        assert!(reload.knows());
        assert_eq!(reload.due(true), None);
        assert_eq!(reload.due(false), Some(100 * S + RETRY));
        let stale = Reload::adopted(Some(started_at(7, 5)), Some(50 * S), None, 100 * S);
        assert!(!stale.knows());
        assert_eq!(stale.due(true), Some(100 * S + SPACING));
        let told = Reload::adopted(Some(started_at(7, 5)), Some(50 * S), Some(51 * S), 100 * S);
        assert!(
            told.knows(),
            "told after the last write, by the gpusliced before"
        );
        assert_eq!(told.due(false), Some(51 * S + RETRY));
        let told_before =
            Reload::adopted(Some(started_at(7, 5)), Some(50 * S), Some(40 * S), 100 * S);
        assert!(!told_before.knows());
        assert_eq!(
            told_before.due(true),
            Some(40 * S + SPACING).max(Some(50 * S + DEBOUNCE))
        );
    }
}
