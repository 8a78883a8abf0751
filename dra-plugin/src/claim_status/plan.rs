//! When to write each claim's status (pure, on a virtual clock).
//!
//! Fed with what every prepared claim's entries should say now
//! ([`Desired`], keyed by the claim's uid, already rendered and quantised by
//! [`super::entries`]) and the time, [`Planner::plan`] answers which claims
//! to write now and why; the writer reports each outcome back
//! ([`Planner::record`]), so the planner knows what the API server holds.
//! It owns no I/O and reads no clock: the task (and the rate bench) drive it.
//!
//! The rules (docs/claim-status.md says them to operators):
//! 1. a claim whose conditions (type, status, reason of any entry) differ
//!    from the last applied is written at once;
//! 2. a claim whose figures alone differ is written at most once per
//!    `refresh`;
//! 3. a claim gone from the desired set (unprepared) gets one apply with an
//!    empty list, which drops our entries;
//! 4. identical desired and applied: nothing, so a quiet node writes nothing;
//! 5. at most `max_writes_per_minute` writes in any 60 s (a sliding window,
//!    stricter than a token bucket of the same rate, which may burst to
//!    twice that in one minute); condition writes and removals are served
//!    before figure writes, claims written longest ago first; a claim denied
//!    a write keeps its latest desired state and is planned again next time.

use std::collections::{BTreeMap, VecDeque};

/// A claim's uid (`metadata.uid`).
pub type ClaimUid = String;

/// Milliseconds on the caller's clock (monotonic; any origin).
pub type Millis = u64;

/// One condition as the plan compares it: a change of any part is written
/// at once. Times and messages belong to the figures.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConditionKey {
    /// The entry's device (`pool/device[/shareID]`).
    pub entry: String,
    /// The condition's type, e.g. "Idle".
    pub type_: String,
    /// "True", "False" or "Unknown".
    pub status: String,
    /// The reason, e.g. "NoGpuActivity".
    pub reason: String,
}

/// What one claim's entries should say now, split the way the plan treats
/// the parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desired {
    /// Every entry's conditions, in entry order.
    pub conditions: Vec<ConditionKey>,
    /// Everything else, rendered and quantised (the entries' JSON text): a
    /// change below the rendering's resolution is no change.
    pub figures: String,
}

/// Why a claim is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reason {
    /// New, or a condition changed (rule 1).
    Conditions,
    /// Unprepared: one apply with an empty list (rule 3).
    Remove,
    /// Figures changed and `refresh` has passed (rule 2).
    Figures,
}

/// One write to make now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    /// The claim.
    pub uid: ClaimUid,
    /// Why.
    pub reason: Reason,
}

/// How a write went, as the writer reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The API server took it: it now holds what was desired when planned.
    Applied,
    /// The claim is gone or is another claim of that name (404, 409, 422):
    /// never written again under this uid.
    Done,
    /// Failed in a way that may pass (transport, 5xx, 429): planned again.
    Failed,
}

/// The write budget of the claim-status writer: how often one claim may be
/// written, and how many writes a minute all claims together may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteBudget {
    /// Least time between two writes of one claim's figures.
    pub refresh: Millis,
    /// Most writes in any 60 s, all claims together (≥ 1).
    pub max_writes_per_minute: u32,
}

/// A minute, the rate window.
pub const MINUTE: Millis = 60_000;

/// What the planner keeps per claim.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Claim {
    /// What the API server holds from us (None: nothing yet).
    applied: Option<Desired>,
    /// When it was last written (any reason), for the refresh rule.
    written_at: Option<Millis>,
    /// Planned and not yet recorded: what it will hold if applied.
    in_flight: Option<Option<Desired>>,
    /// Refused for good under this uid.
    done: bool,
}

/// The planner's memory: what each claim holds and the recent writes.
#[derive(Debug, Clone)]
pub struct Planner {
    budget: WriteBudget,
    claims: BTreeMap<ClaimUid, Claim>,
    /// Times of the writes in the last minute, oldest first.
    recent: VecDeque<Millis>,
}

impl Planner {
    /// A planner that knows of no claim.
    pub fn new(budget: WriteBudget) -> Self {
        Self {
            budget: WriteBudget {
                max_writes_per_minute: budget.max_writes_per_minute.max(1),
                ..budget
            },
            claims: BTreeMap::new(),
            recent: VecDeque::new(),
        }
    }

    /// The writes to make at `now`, given every prepared claim's desired
    /// state. Each planned write must be reported to [`Self::record`]
    /// before the next `plan`; until then that claim is not planned again.
    pub fn plan(&mut self, desired: &BTreeMap<ClaimUid, Desired>, now: Millis) -> Vec<Write> {
        // A claim neither desired nor holding our entries is of no more
        // concern; nor one refused for good that is no longer prepared.
        self.claims.retain(|uid, c| {
            desired.contains_key(uid) || c.in_flight.is_some() || (c.applied.is_some() && !c.done)
        });
        for uid in desired.keys() {
            self.claims.entry(uid.clone()).or_insert(Claim {
                applied: None,
                written_at: None,
                in_flight: None,
                done: false,
            });
        }
        let mut wanted: Vec<(Reason, Option<Millis>, &ClaimUid)> = Vec::new();
        for (uid, claim) in &self.claims {
            if claim.done || claim.in_flight.is_some() {
                continue;
            }
            if let Some(reason) = self.reason(claim, desired.get(uid), now) {
                wanted.push((reason, claim.written_at, uid));
            }
        }
        // Conditions and removals first, then figures; within a kind the
        // claim written longest ago (never written: first).
        wanted.sort_by_key(|(reason, written_at, uid)| {
            (*reason == Reason::Figures, *written_at, (*uid).clone())
        });
        while self
            .recent
            .front()
            .is_some_and(|t| now.saturating_sub(*t) >= MINUTE)
        {
            self.recent.pop_front();
        }
        let room = (self.budget.max_writes_per_minute as usize).saturating_sub(self.recent.len());
        let writes: Vec<Write> = wanted
            .into_iter()
            .take(room)
            .map(|(reason, _, uid)| Write {
                uid: uid.clone(),
                reason,
            })
            .collect();
        for write in &writes {
            self.recent.push_back(now);
            if let Some(claim) = self.claims.get_mut(&write.uid) {
                claim.written_at = Some(now);
                claim.in_flight = Some(desired.get(&write.uid).cloned());
            }
        }
        writes
    }

    /// The outcome of a write planned by [`Self::plan`].
    pub fn record(&mut self, uid: &str, outcome: Outcome) {
        let Some(claim) = self.claims.get_mut(uid) else {
            return;
        };
        let sent = claim.in_flight.take();
        match (outcome, sent) {
            (Outcome::Applied, Some(None)) => {
                self.claims.remove(uid);
            }
            (Outcome::Applied, Some(Some(desired))) => claim.applied = Some(desired),
            (Outcome::Done, _) => claim.done = true,
            (Outcome::Failed, _) | (Outcome::Applied, None) => {}
        }
    }

    /// What the API server holds from us for a claim, as far as we know.
    pub fn applied(&self, uid: &str) -> Option<&Desired> {
        self.claims.get(uid).and_then(|c| c.applied.as_ref())
    }

    fn reason(&self, claim: &Claim, desired: Option<&Desired>, now: Millis) -> Option<Reason> {
        match (desired, &claim.applied) {
            (None, None) => None,
            (None, Some(_)) => Some(Reason::Remove),
            (Some(_), None) => Some(Reason::Conditions),
            (Some(want), Some(have)) if want.conditions != have.conditions => {
                Some(Reason::Conditions)
            }
            (Some(want), Some(have)) if want.figures != have.figures => {
                let due = claim
                    .written_at
                    .is_none_or(|at| now.saturating_sub(at) >= self.budget.refresh);
                due.then_some(Reason::Figures)
            }
            (Some(_), Some(_)) => None,
        }
    }
}

#[cfg(test)]
mod tests;
