//! The task that keeps every prepared claim's status entries true: on each
//! activity sample gpusliced announces (WatchActivity), each inventory
//! change (a prepare or unprepare) and a tick, it reads gpusliced's
//! GetActivity and GetAdvice, renders the entries ([`super::feed`]) and
//! runs one round of the [`Writer`], which decides what to write. After
//! each round it tells gpusliced the access state ([`super::tell`]).
//!
//! gpusliced may restart: the activity follower reconnects with backoff,
//! and a round is skipped while GetActivity cannot be read (never taken for
//! "no claims", which would remove every entry). A claim gpusliced holds
//! but has not sampled yet (just prepared, or gpusliced just restarted)
//! keeps the entries last rendered for it. Ends at shutdown; a round in
//! flight is abandoned by the caller after its drain time.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gpuslice_proto::gpuslice::v1 as pb;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;
use tracing::{debug, warn};

use super::entries::Context;
use super::feed::feed;
use super::plan::{ClaimUid, Millis, WriteBudget};
use super::round::{ClaimEntries, Writer};
use super::tell;
use crate::gpusliced::GpuSlice;
use crate::gpusliced_watch;

/// A round at least this often, announced or not (retries, rechecks).
pub const TICK: Duration = Duration::from_secs(5);

/// What the task is given.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The driver, node and refresh the entries are rendered with.
    pub context: Context,
    /// `[claim_status] refresh_s` and `max_writes_per_minute`.
    pub budget: WriteBudget,
    /// `[claim_status] recheck_s`, in milliseconds.
    pub recheck: Millis,
}

/// Writes claim status until `shutdown` turns true.
pub async fn run(
    gpusliced: GpuSlice,
    kube: kube::Client,
    settings: Settings,
    mut inventory: watch::Receiver<u64>,
    mut shutdown: watch::Receiver<bool>,
) {
    let (announce, mut samples) = watch::channel(0u64);
    let following = tokio::spawn(gpusliced_watch::activity(
        gpusliced.clone(),
        announce,
        shutdown.clone(),
    ));
    let mut state = TaskState {
        gpusliced,
        writer: Writer::new(settings.budget, settings.recheck),
        settings,
        last: BTreeMap::new(),
        advice: None,
        said: BTreeSet::new(),
    };
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.wait_for(|stop| *stop) => break,
            changed = samples.changed() => if changed.is_err() { break },
            changed = inventory.changed() => if changed.is_err() { break },
            _ = tick.tick() => {}
        }
        state.round(&kube).await;
        let said = tell::state_of(state.writer.access());
        tell::tell(&mut state.gpusliced, said).await;
    }
    let _ = following.await;
}

/// What the task keeps between rounds.
struct TaskState {
    gpusliced: GpuSlice,
    writer: Writer,
    settings: Settings,
    /// Each claim's entries as last rendered.
    last: BTreeMap<ClaimUid, ClaimEntries>,
    /// GetAdvice's last answer, and the sample (`sampled_at_ms`) it was
    /// asked after: the advice moves with samples only, so it is asked
    /// once per sample, and a failed ask keeps the last answer (its
    /// entries do not flicker).
    advice: Option<(i64, pb::GetAdviceResponse)>,
    /// Skipped-device lines already logged.
    said: BTreeSet<String>,
}

impl TaskState {
    async fn round(&mut self, kube: &kube::Client) {
        let Some(claims) = self.read().await else {
            return;
        };
        let report = self.writer.round(kube, &claims, now_ms()).await;
        if report.requests > 0 {
            debug!(
                requests = report.requests,
                applied = report.applied,
                "claim status round"
            );
        }
        self.last = claims;
    }

    /// Every prepared claim's entries now; None when gpusliced cannot say.
    async fn read(&mut self) -> Option<BTreeMap<ClaimUid, ClaimEntries>> {
        let activity = match self
            .gpusliced
            .get_activity(pb::GetActivityRequest::default())
            .await
        {
            Ok(answer) => answer.into_inner(),
            Err(status) => {
                debug!(code = ?status.code(), error = %status.message(),
                       "cannot read gpusliced's activity; claim status waits");
                return None;
            }
        };
        let sample = activity.sampled_at_ms;
        if self
            .advice
            .as_ref()
            .is_none_or(|(after, _)| *after != sample)
        {
            match self.gpusliced.get_advice(pb::GetAdviceRequest {}).await {
                Ok(answer) => self.advice = Some((sample, answer.into_inner())),
                Err(status) => {
                    debug!(code = ?status.code(), "no new advice from gpusliced; the last kept")
                }
            }
        }
        let advice = self.advice.as_ref().map(|(_, answer)| answer);
        let mut fed = feed(&self.settings.context, &activity, advice);
        for line in fed.skipped {
            if self.said.insert(line.clone()) {
                warn!(device = %line, "a device left out of its claim's status");
            }
        }
        for uid in fed.unread {
            if let Some(kept) = self.last.get(&uid) {
                fed.claims.insert(uid, kept.clone());
            }
        }
        Some(fed.claims)
    }
}

fn now_ms() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
