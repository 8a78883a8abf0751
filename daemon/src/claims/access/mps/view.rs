//! What is reported of MPS: each claim's daemons that do not run as they
//! should, the node's daemons that failed, restarted or stopped, and every
//! daemon's state for the metrics.

use super::held::{MpsUse, mps_uses};
use crate::claims::access::Cx;
use crate::claims::mps_daemon::{DaemonState, MpsDaemon};
use crate::state::ClaimRecord;

/// The state of every MPS control daemon of the node, for the metrics.
pub(super) fn daemon_states(cx: &Cx<'_>) -> Vec<DaemonState> {
    cx.shared.daemons().iter().map(|d| d.status.state).collect()
}

/// The pids of the MPS control daemons that run now: the sampler knows
/// them, and the servers they start, by these, never by their environment.
pub(super) fn daemon_pids(cx: &Cx<'_>) -> Vec<u32> {
    (cx.shared.daemons().iter())
        .filter(|d| d.status.state != DaemonState::Stopped)
        .filter_map(|d| d.status.pid)
        .collect()
}

/// Each MPS daemon of the claim that is not running as it should.
pub(super) fn claim_problems(cx: &Cx<'_>, records: &[ClaimRecord]) -> Vec<Vec<String>> {
    let daemons = cx.shared.daemons();
    let problem = |one: MpsUse| {
        let daemon = daemons.iter().find(|d| d.key == one.key);
        daemon_problem(&one.key.to_string(), daemon)
    };
    (records.iter())
        .map(|record| mps_uses(record).into_iter().filter_map(problem).collect())
        .collect()
}

/// The daemons that failed, restarted or stopped.
pub(super) fn node_problems(cx: &Cx<'_>) -> Vec<String> {
    (cx.shared.daemons().iter())
        .filter(|d| d.status.state != DaemonState::Running)
        .filter_map(|d| daemon_problem(&d.key.to_string(), Some(d)))
        .collect()
}

/// What is wrong with the daemon of `key`, if anything.
fn daemon_problem(key: &str, daemon: Option<&MpsDaemon>) -> Option<String> {
    let Some(daemon) = daemon else {
        return Some(format!("the MPS control daemon of {key} is not running"));
    };
    let s = &daemon.status;
    let pid = s.pid.map_or_else(|| "?".to_owned(), |p| p.to_string());
    match s.state {
        DaemonState::Running if s.restarts == 0 => None,
        DaemonState::Running => Some(format!(
            "the MPS control daemon of {key} died and was restarted {} time(s); it runs again \
             (pid {pid}), its clients had to reconnect",
            s.restarts
        )),
        DaemonState::Restarting => Some(format!(
            "the MPS control daemon of {key} died and is being restarted ({} restart(s) so far)",
            s.restarts
        )),
        DaemonState::Failed => Some(format!(
            "the MPS control daemon of {key} died and could not be brought back (pid {pid}, {} \
             restart(s)); its clients run without MPS: unprepare and prepare the claims again, \
             or restart gpusliced",
            s.restarts
        )),
        DaemonState::Stopped => Some(format!("the MPS control daemon of {key} has stopped")),
    }
}
