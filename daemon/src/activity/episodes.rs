//! Episodes, pure: an over-share (claim, device) or an unclaimed process
//! (pid, GPU) opens when a sample first sees it and closes at the first
//! sample that does not. Each opening is returned once (the sampler logs it
//! at warn level) and counted; each closing is returned once (logged at
//! info). The open ones are the warnings `gpuslicectl status` shows. A GPU
//! the sample could not read ([`Unread`]) neither closes nor reopens its
//! episodes: they stay as they were until a sample reads it again. The open
//! episodes are kept across a restart ([`SavedEpisode`], in
//! `activity.json`), so one that lasts through it is not warned of again.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::snapshot::{EpisodeCounts, Warning, WarningKind};
use crate::state::AccessKind;

/// Which counter an opening adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// A claim over its share of a device it shares under this kind of
    /// access.
    OverShare(AccessKind),
    /// A process that maps to no claim.
    Unclaimed,
}

/// A condition seen in one sample.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// The kind of episode.
    pub kind: WarningKind,
    /// What it counts as.
    pub counter: Counter,
    /// The claim (over-share) or "" (unclaimed).
    pub claim_uid: String,
    /// What the episode is keyed on besides the claim and pid: the device
    /// (over-share) or the GPU (unclaimed).
    pub scope: String,
    /// The device shown.
    pub device: String,
    /// The (parent) GPU it was seen on, "gpu-0".
    pub gpu: String,
    /// The process (unclaimed) or 0.
    pub pid: u32,
    /// The line logged when it opens; what to do.
    pub message: String,
}

type Key = (WarningKind, String, String, u32);

impl Condition {
    fn key(&self) -> Key {
        (
            self.kind,
            self.claim_uid.clone(),
            self.scope.clone(),
            self.pid,
        )
    }
}

/// What one sample changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Episodes that began in this sample.
    pub opened: Vec<Warning>,
    /// Episodes that ended (not seen in this sample).
    pub closed: Vec<Warning>,
}

/// What a sample did not see: the GPUs whose processes it could not read,
/// and the claims held when it was taken.
#[derive(Debug, Clone, Default)]
pub struct Unread {
    /// GPUs (inventory names) left out of the sample.
    pub gpus: BTreeSet<String>,
    /// Claims held (uids).
    pub held: BTreeSet<String>,
}

impl Unread {
    /// Whether an open episode not seen in the sample stays open: its GPU
    /// was not read, and its claim (over-share) is still held.
    fn keeps(&self, gpu: &str, claim_uid: &str) -> bool {
        self.gpus.contains(gpu) && (claim_uid.is_empty() || self.held.contains(claim_uid))
    }
}

/// An open episode as `activity.json` keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedEpisode {
    /// The kind.
    pub kind: WarningKind,
    /// The claim (over-share) or "".
    pub claim_uid: String,
    /// The device (over-share) or GPU (unclaimed) it is keyed on.
    pub scope: String,
    /// The device shown.
    pub device: String,
    /// The GPU it was seen on.
    pub gpu: String,
    /// The process (unclaimed) or 0.
    pub pid: u32,
    /// Unix seconds it began.
    pub since: i64,
    /// The line logged when it began.
    pub message: String,
}

/// An open episode and the GPU it is on.
#[derive(Debug, Clone)]
struct Open {
    gpu: String,
    warning: Warning,
}

/// The open episodes and the openings counted so far.
#[derive(Debug, Clone, Default)]
pub struct Episodes {
    open: BTreeMap<Key, Open>,
    counts: EpisodeCounts,
}

impl Episodes {
    /// The episodes saved open before a restart, open again (not counted:
    /// the counters are this process's).
    pub fn restore(saved: Vec<SavedEpisode>) -> Self {
        let open = saved
            .into_iter()
            .map(|e| {
                let key = (e.kind, e.claim_uid.clone(), e.scope, e.pid);
                let warning = Warning {
                    kind: e.kind,
                    since: e.since,
                    claim_uid: e.claim_uid,
                    device: e.device,
                    pid: e.pid,
                    message: e.message,
                };
                (
                    key,
                    Open {
                        gpu: e.gpu,
                        warning,
                    },
                )
            })
            .collect();
        Self {
            open,
            counts: EpisodeCounts::default(),
        }
    }

    /// The open episodes, to save.
    pub fn saved(&self) -> Vec<SavedEpisode> {
        self.open
            .iter()
            .map(|((kind, claim_uid, scope, pid), o)| SavedEpisode {
                kind: *kind,
                claim_uid: claim_uid.clone(),
                scope: scope.clone(),
                device: o.warning.device.clone(),
                gpu: o.gpu.clone(),
                pid: *pid,
                since: o.warning.since,
                message: o.warning.message.clone(),
            })
            .collect()
    }

    /// Takes one sample's conditions, seen at `now` (Unix seconds), every
    /// GPU read.
    pub fn observe(&mut self, now: i64, conditions: Vec<Condition>) -> Changes {
        self.observe_partial(now, conditions, &Unread::default())
    }

    /// Takes one sample's conditions, seen at `now` (Unix seconds), which
    /// did not read `unread`.
    pub fn observe_partial(
        &mut self,
        now: i64,
        conditions: Vec<Condition>,
        unread: &Unread,
    ) -> Changes {
        let mut changes = Changes::default();
        let mut next = BTreeMap::new();
        for condition in conditions {
            let key = condition.key();
            if next.contains_key(&key) {
                continue;
            }
            let open = match self.open.remove(&key) {
                Some(open) => open,
                None => {
                    self.count(condition.counter);
                    let warning = Warning {
                        kind: condition.kind,
                        since: now,
                        claim_uid: condition.claim_uid,
                        device: condition.device,
                        pid: condition.pid,
                        message: condition.message,
                    };
                    changes.opened.push(warning.clone());
                    Open {
                        gpu: condition.gpu,
                        warning,
                    }
                }
            };
            next.insert(key, open);
        }
        for (key, open) in std::mem::take(&mut self.open) {
            if unread.keeps(&open.gpu, &open.warning.claim_uid) {
                next.insert(key, open);
            } else {
                changes.closed.push(open.warning);
            }
        }
        self.open = next;
        changes
    }

    /// The episodes open now, by kind, claim, scope and pid.
    pub fn open(&self) -> Vec<Warning> {
        self.open.values().map(|o| o.warning.clone()).collect()
    }

    /// The openings counted so far.
    pub fn counts(&self) -> EpisodeCounts {
        self.counts.clone()
    }

    fn count(&mut self, counter: Counter) {
        let slot = match counter {
            Counter::OverShare(kind) => self.counts.overshare.entry(kind).or_default(),
            Counter::Unclaimed => &mut self.counts.unclaimed,
        };
        *slot = slot.saturating_add(1);
    }
}

#[cfg(test)]
mod tests;
