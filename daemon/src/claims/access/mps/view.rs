//! What is reported of MPS: each claim's daemons that do not run as they
//! should, the node's daemons that failed, restarted or stopped, every
//! daemon as GetSharing shows it and its state for the metrics, and a device
//! under MPS in words.

use super::held::{MpsUse, mps_uses};
use crate::claims::access::Cx;
use crate::claims::mps_daemon::{DaemonState, MpsDaemon, MpsLimits};
use gpuslice_quantity::show::gib;

use crate::state::{ClaimRecord, MpsSharing};

/// One MPS control daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaemonView {
    /// The GPU or MIG UUIDs it covers.
    pub uuids: Vec<String>,
    /// Its process, when known.
    pub pid: Option<u32>,
    /// "child" or "systemd".
    pub supervisor: &'static str,
    /// The transient unit, under systemd.
    pub unit: Option<String>,
    /// Running, restarting, failed or stopped.
    pub state: DaemonState,
    /// Restarts since this gpusliced started or adopted it.
    pub restarts: u32,
    /// `CUDA_MPS_PIPE_DIRECTORY`.
    pub pipe_dir: String,
    /// The claims on it.
    pub claims: Vec<String>,
    /// Its limits.
    pub limits: MpsLimits,
}

/// Every MPS control daemon of the node, as GetSharing shows it.
pub(super) fn daemon_views(cx: &Cx<'_>) -> Vec<DaemonView> {
    let supervisor = (cx.shared.tools.as_ref()).map_or("none", |t| t.mps.supervisor_name());
    (cx.shared.daemons().into_iter())
        .map(|daemon| DaemonView {
            uuids: daemon.key.uuids().to_vec(),
            pid: daemon.status.pid,
            supervisor,
            unit: daemon.status.unit.clone(),
            state: daemon.status.state,
            restarts: daemon.status.restarts,
            pipe_dir: daemon.pipe_dir().display().to_string(),
            claims: daemon.claims,
            limits: daemon.limits,
        })
        .collect()
}

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

/// `device` under `sharing` in the words a refusal uses: "gpu-3 shared by MPS
/// (active threads 50%, memory share 20.0 GiB)".
pub(in crate::claims) fn words(device: &str, sharing: &MpsSharing) -> String {
    let mut details = Vec::new();
    if let Some(atp) = sharing.active_thread_percentage {
        details.push(format!("active threads {atp}%"));
    }
    if let Some(share) = sharing.memory_share {
        details.push(format!("memory share {}", gib(share)));
    }
    if let Some(limit) = sharing.pinned_memory_limits.get(device) {
        details.push(format!("pinned memory limit {}", gib(*limit)));
    }
    if details.is_empty() {
        format!("{device} shared by MPS")
    } else {
        format!("{device} shared by MPS ({})", details.join(", "))
    }
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
