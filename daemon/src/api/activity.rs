//! GetActivity, WatchActivity's messages, and the activity lines of
//! GetStatus: an [`ActivitySnapshot`] as proto messages. Pure conversions:
//! the service reads the snapshot from the [`ActivityHandle`] (the latest,
//! or a fresh one when asked) and brings it up to the claim table
//! (`crate::activity::current`) first.

use std::path::PathBuf;

use gpuslice_proto::gpuslice::v1 as pb;

use crate::activity::handle::Sampled;
use crate::activity::{
    ActivityHandle, ActivitySnapshot, ClaimActivity, DeviceActivity, DeviceSummary,
    ProcessActivity, UnclaimedProcess, Warning,
};
use crate::limits::{LimitAction, LimitsBoard, LimitsReport};
use crate::state::AccessKind;

/// What the API shows of per-claim GPU use: the sampler's latest snapshot
/// and its usage history, the simulated backend's process folder (for
/// `gpuslicectl sim exec`), and the advice's settings.
#[derive(Debug, Clone, Default)]
pub struct ActivityView {
    /// Where the sampler publishes.
    pub handle: ActivityHandle,
    /// Where `[limits]` publishes what it did.
    pub limits: LimitsBoard,
    /// `[backend.sim] processes` when the backend is the simulator.
    pub sim_processes_dir: Option<PathBuf>,
    /// `[advice]` and the sharing tools found (GetAdvice).
    pub advice: crate::advice::view::AdviceSettings,
}

/// The reply to GetActivity, with each device's last `[limits]` action from
/// `limits` and idle times counted at `now` (Unix seconds).
pub fn activity_response(
    snapshot: &ActivitySnapshot,
    limits: &LimitsReport,
    now: i64,
) -> pb::GetActivityResponse {
    pb::GetActivityResponse {
        enabled: snapshot.enabled,
        interval_ms: snapshot.interval_ms,
        sampled_at_ms: snapshot.sampled_at_ms,
        sample_cpu_us: snapshot.sample_cpu_us,
        claims: snapshot
            .claims
            .iter()
            .map(|c| claim(c, limits, now))
            .collect(),
        unclaimed: snapshot.unclaimed.iter().map(unclaimed).collect(),
        warnings: snapshot.warnings.iter().map(warning).collect(),
        episodes: Some(pb::EpisodeCounts {
            overshare_mps: snapshot.episodes.overshare(AccessKind::Mps),
            overshare_timeslicing: snapshot.episodes.overshare(AccessKind::TimeSlicing),
            unclaimed: snapshot.episodes.unclaimed,
        }),
        now,
        conditions_generation: snapshot.conditions_generation,
    }
}

/// A WatchActivity message.
pub fn sampled(s: &Sampled) -> pb::ActivitySampled {
    pb::ActivitySampled {
        sampled_at_ms: s.sampled_at_ms,
        conditions_generation: s.conditions_generation,
    }
}

/// Unix seconds now (0 if the clock is before 1970).
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The open warnings, one line each, as GetStatus lists them.
pub fn warning_lines(snapshot: &ActivitySnapshot) -> Vec<String> {
    snapshot
        .warnings
        .iter()
        .map(|w| w.message.clone())
        .collect()
}

fn claim(c: &ClaimActivity, limits: &LimitsReport, now: i64) -> pb::ClaimActivity {
    pb::ClaimActivity {
        claim: Some(pb::ClaimRef {
            uid: c.uid.clone(),
            namespace: c.namespace.clone(),
            name: c.name.clone(),
        }),
        kind: c.kind.to_string(),
        prepared_at: c.prepared_at,
        last_active: c.last_active,
        idle_seconds: c.idle_for(now),
        devices: c
            .devices
            .iter()
            .map(|d| {
                let last = limits.last.get(&(c.uid.clone(), d.device.clone()));
                device(d, last)
            })
            .collect(),
        not_sampled_yet: !c.sampled,
    }
}

fn device(d: &DeviceActivity, last_action: Option<&LimitAction>) -> pb::DeviceActivity {
    pb::DeviceActivity {
        device: d.device.clone(),
        gpu: d.gpu.clone(),
        uuid: d.uuid.clone(),
        sharing: d.sharing.to_string(),
        memory_used_bytes: d.memory_used,
        memory_share_bytes: d.memory_share,
        memory_total_bytes: d.memory_total,
        device_memory_used_bytes: d.device_memory_used,
        sm_percent: d.sm_percent,
        processes: d.processes.iter().map(process).collect(),
        pool: d.pool.clone(),
        share_id: d.share_id.clone(),
        summary: d.summary.as_ref().map(summary),
        last_action: last_action.map(limit_action),
    }
}

fn summary(s: &DeviceSummary) -> pb::DeviceUsageSummary {
    pb::DeviceUsageSummary {
        window_seconds: u32::try_from(s.window_s).unwrap_or(u32::MAX),
        memory_peak_bytes: s.memory_peak,
        sm_mean_percent: s.sm_mean,
        sm_peak_percent: s.sm_peak,
        idle_since: s.idle_since,
        overshare_since: s.overshare_since,
        process_count: s.process_count,
        active_since: s.active_since,
        within_share_since: s.within_share_since,
    }
}

fn limit_action(a: &LimitAction) -> pb::LimitAction {
    pb::LimitAction {
        kind: a.kind.to_string(),
        mode: a.mode.to_owned(),
        outcome: a.outcome.to_owned(),
        pid: a.pid,
        comm: a.comm.clone(),
        memory_used_bytes: a.memory_used,
        over_for_s: a.over_for_s,
        at_ms: a.at_ms,
    }
}

fn process(p: &ProcessActivity) -> pb::ProcessActivity {
    pb::ProcessActivity {
        pid: p.pid,
        name: p.name.clone(),
        memory_used_bytes: p.memory_used,
        sm_percent: p.sm_percent,
        mps_client: p.mps_client,
    }
}

fn unclaimed(u: &UnclaimedProcess) -> pb::UnclaimedProcess {
    pb::UnclaimedProcess {
        gpu: u.gpu.clone(),
        device: u.device.clone(),
        process: Some(process(&u.process)),
        reason: u.reason.clone(),
    }
}

fn warning(w: &Warning) -> pb::ActivityWarning {
    pb::ActivityWarning {
        kind: w.kind.to_string(),
        since: w.since,
        claim_uid: w.claim_uid.clone(),
        device: w.device.clone(),
        pid: w.pid,
        message: w.message.clone(),
    }
}

#[cfg(test)]
mod tests;
