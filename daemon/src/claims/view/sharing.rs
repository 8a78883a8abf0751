//! What an operator sees of sharing: per GPU (mode, interval, the MPS
//! daemons covering it, the claims, memory promised), per claim (health of
//! its daemons and GPUs), and the problems `GetStatus` lists. Read-only.

use std::collections::BTreeMap;

use crate::claims::access::mps::mps_uses;
use crate::claims::access::shared_gpu::TimeSliceOutcome;
use crate::claims::access::timeslice::timeslices;
use crate::claims::{Engine, lock};
use crate::gpu::ComputeMode;
use crate::mps::{DaemonState, MpsDaemon, MpsLimits};
use crate::sharing::TimeSliceInterval;
use crate::state::ClaimRecord;

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

/// How one whole GPU is shared now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuSharingView {
    /// Inventory name.
    pub device: String,
    /// GPU UUID.
    pub uuid: String,
    /// "none", "mps" or "timeslicing".
    pub mode: &'static str,
    /// The compute mode, when it could be read.
    pub compute_mode: Option<ComputeMode>,
    /// The time-slice asked for, when time-sliced.
    pub interval: Option<TimeSliceInterval>,
    /// "applied", or "not supported: …" (a warning).
    pub interval_state: String,
    /// The MPS daemons covering the GPU or its MIG slices.
    pub daemons: Vec<DaemonView>,
    /// The claims sharing it (or running MPS on its slices).
    pub claims: Vec<String>,
    /// Its memory.
    pub memory_total: u64,
    /// Memory promised to claims through memory shares.
    pub memory_promised: u64,
    /// Why it is degraded, if it is.
    pub problems: Vec<String>,
}

impl Engine {
    /// Every MPS control daemon, with its state and claims.
    pub(in crate::claims) fn daemons(&self) -> Vec<MpsDaemon> {
        self.kinds
            .shared
            .tools
            .as_ref()
            .map(|t| t.mps.daemons())
            .unwrap_or_default()
    }

    fn daemon_view(&self, daemon: MpsDaemon) -> DaemonView {
        DaemonView {
            uuids: daemon.key.uuids().to_vec(),
            pid: daemon.status.pid,
            supervisor: self
                .kinds
                .shared
                .tools
                .as_ref()
                .map_or("none", |t| t.mps.supervisor_name()),
            unit: daemon.status.unit.clone(),
            state: daemon.status.state,
            restarts: daemon.status.restarts,
            pipe_dir: daemon.pipe_dir().display().to_string(),
            claims: daemon.claims,
            limits: daemon.limits,
        }
    }

    /// Every whole GPU's sharing, in inventory order.
    pub fn sharing_view(&self) -> Vec<GpuSharingView> {
        let inventory = self.inventory();
        let daemons: Vec<DaemonView> = self
            .daemons()
            .into_iter()
            .map(|d| self.daemon_view(d))
            .collect();
        // MIG UUID → parent GPU UUID, from the claims that hold the slices.
        let parent_of: BTreeMap<String, String> = self
            .claims()
            .iter()
            .flat_map(|r| &r.devices)
            .filter_map(|d| Some((d.mig.as_ref()?.mig_uuid.clone()?, d.uuid.clone())))
            .collect();
        let state = lock(&self.kinds.shared.books);
        inventory
            .gpus
            .iter()
            .map(|gpu| {
                let uuid = &gpu.info.uuid;
                let covers = |u: &String| u == uuid || parent_of.get(u) == Some(uuid);
                let on_gpu: Vec<DaemonView> = daemons
                    .iter()
                    .filter(|d| d.uuids.iter().any(covers))
                    .cloned()
                    .collect();
                let interval = state.policy.interval(uuid);
                let mut claims = state.policy.claims(uuid);
                for d in &on_gpu {
                    claims.extend(d.claims.iter().cloned());
                }
                claims.sort();
                claims.dedup();
                let mode = match (interval, on_gpu.is_empty()) {
                    (Some(_), _) => "timeslicing",
                    (None, false) => "mps",
                    (None, true) => "none",
                };
                GpuSharingView {
                    device: gpu.name.clone(),
                    uuid: uuid.clone(),
                    mode,
                    compute_mode: self.env.backend.compute_mode(gpu.info.index).ok(),
                    interval,
                    interval_state: interval_words(state.timeslice.get(uuid)),
                    daemons: on_gpu,
                    claims,
                    memory_total: gpu.info.memory_bytes,
                    memory_promised: state.promised_on(uuid),
                    problems: state.degraded.get(uuid).cloned().into_iter().collect(),
                }
            })
            .collect()
    }

    /// Problems with `record`'s sharing daemons and shared GPUs; empty when
    /// healthy.
    pub fn claim_health(&self, record: &ClaimRecord) -> Vec<String> {
        self.health_with(record, &self.daemons())
    }

    /// [`Engine::claim_health`] of many claims, asking each daemon's state
    /// once (under systemd that is a few D-Bus calls a daemon).
    pub fn claims_health(&self, records: &[ClaimRecord]) -> Vec<Vec<String>> {
        let daemons = self.daemons();
        records
            .iter()
            .map(|r| self.health_with(r, &daemons))
            .collect()
    }

    fn health_with(&self, record: &ClaimRecord, daemons: &[MpsDaemon]) -> Vec<String> {
        let mut problems = Vec::new();
        for one in mps_uses(record) {
            let daemon = daemons.iter().find(|d| d.key == one.key);
            problems.extend(daemon_problem(&one.key.to_string(), daemon));
        }
        let state = lock(&self.kinds.shared.books);
        for (gpu, interval) in timeslices(record) {
            if let Some(TimeSliceOutcome::NotSupported { message, .. }) = state.timeslice.get(&gpu)
            {
                problems.push(format!(
                    "time-slice {interval} not applied on {gpu}: the GPU does not support it \
                     ({message})"
                ));
            }
        }
        for d in &record.devices {
            if let Some(why) = state.degraded.get(&d.uuid) {
                problems.push(format!("{} ({}) is degraded: {why}", d.device, d.uuid));
            }
        }
        problems.dedup();
        problems
    }

    /// Sharing problems for `GetStatus`: daemons that failed or restarted,
    /// degraded GPUs, time-slices not supported, what start-up could not
    /// bring back.
    pub(in crate::claims) fn sharing_problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = self
            .daemons()
            .iter()
            .filter(|d| d.status.state != DaemonState::Running)
            .filter_map(|d| daemon_problem(&d.key.to_string(), Some(d)))
            .collect();
        let state = lock(&self.kinds.shared.books);
        for (gpu, why) in &state.degraded {
            problems.push(format!("GPU {gpu} is degraded: {why}"));
        }
        for (gpu, outcome) in &state.timeslice {
            if let TimeSliceOutcome::NotSupported { interval, message } = outcome {
                problems.push(format!(
                    "GPU {gpu} does not support time-slice settings; {interval} was not applied \
                     ({message}); its claims share it at the driver's default"
                ));
            }
        }
        problems.extend(state.problems.iter().cloned());
        problems
    }
}

fn interval_words(outcome: Option<&TimeSliceOutcome>) -> String {
    match outcome {
        None => String::new(),
        Some(TimeSliceOutcome::Applied(_)) => "applied".to_owned(),
        Some(TimeSliceOutcome::NotSupported { message, .. }) => {
            format!("not supported: {message}")
        }
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
