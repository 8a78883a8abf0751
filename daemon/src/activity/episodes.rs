//! Episodes, pure: an over-share (claim, device) or an unclaimed process
//! (pid, GPU) opens when a sample first sees it and closes at the first
//! sample that does not. Each opening is returned once (the sampler logs it
//! at warn level) and counted; each closing is returned once (logged at
//! info). The open ones are the warnings `gpuslicectl status` shows.

use std::collections::BTreeMap;

use super::snapshot::{EpisodeCounts, Warning, WarningKind};

/// Which counter an opening adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// An MPS claim over its share.
    OverShareMps,
    /// A time-sliced claim over its share.
    OverShareTimeslicing,
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

/// The open episodes and the openings counted so far.
#[derive(Debug, Clone, Default)]
pub struct Episodes {
    open: BTreeMap<Key, Warning>,
    counts: EpisodeCounts,
}

impl Episodes {
    /// Takes one sample's conditions, seen at `now` (Unix seconds).
    pub fn observe(&mut self, now: i64, conditions: Vec<Condition>) -> Changes {
        let mut changes = Changes::default();
        let mut next = BTreeMap::new();
        for condition in conditions {
            let key = condition.key();
            if next.contains_key(&key) {
                continue;
            }
            let warning = match self.open.remove(&key) {
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
                    warning
                }
            };
            next.insert(key, warning);
        }
        changes.closed = std::mem::replace(&mut self.open, next)
            .into_values()
            .collect();
        changes
    }

    /// The episodes open now, by kind, claim, scope and pid.
    pub fn open(&self) -> Vec<Warning> {
        self.open.values().cloned().collect()
    }

    /// The openings counted so far.
    pub fn counts(&self) -> EpisodeCounts {
        self.counts
    }

    fn count(&mut self, counter: Counter) {
        let slot = match counter {
            Counter::OverShareMps => &mut self.counts.overshare_mps,
            Counter::OverShareTimeslicing => &mut self.counts.overshare_timeslicing,
            Counter::Unclaimed => &mut self.counts.unclaimed,
        };
        *slot = slot.saturating_add(1);
    }
}

#[cfg(test)]
mod tests;
