//! One round of the writer: the planner's writes for the claims' desired
//! entries, each applied, behind the access probe. The task calls
//! [`Writer::round`] on each trigger (an activity message, an inventory
//! change, a refresh deadline) with every prepared claim's rendered
//! entries; it owns the planner and the access state across rounds.
//!
//! Until access is Enabled, each write is preceded by its dry run
//! ([`crate::probe::claim_status`]); while Forbidden or FieldDropped
//! nothing is planned or sent until `recheck_s` has passed. A real write
//! answered 401/403 or without our entries moves the access state as a dry
//! run would; one that decides nothing (408, 409, 429, 5xx, no answer) is
//! planned again and moves nothing. Each change of state is logged once
//! ([`super::access::log`]).

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::AllocatedDeviceStatus;

use super::access::{self, Access, State};
use super::entries::desired;
use super::plan::{ClaimUid, Millis, Outcome, Planner, WriteBudget};
use super::write::{self, ClaimRef};
use crate::probe::{self, Finding, Verdict};

/// A prepared claim's entries, as they should be now.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimEntries {
    /// The claim.
    pub claim: ClaimRef,
    /// Our entries, one per device.
    pub entries: Vec<AllocatedDeviceStatus>,
}

/// What a round did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundReport {
    /// Applies sent (dry runs included).
    pub requests: usize,
    /// Claims whose entries the API server now holds (or dropped, for
    /// removals).
    pub applied: usize,
    /// A change of access state in this round, as logged.
    pub access_changed: Option<String>,
}

/// The writer's memory across rounds.
#[derive(Debug)]
pub struct Writer {
    planner: Planner,
    access: Access,
    /// Every claim we may still hold entries of (for the removal apply).
    known: BTreeMap<ClaimUid, ClaimRef>,
}

impl Writer {
    /// A writer that has written nothing; `recheck` as in [`Access::new`].
    pub fn new(limits: WriteBudget, recheck: Millis) -> Self {
        Self {
            planner: Planner::new(limits),
            access: Access::new(recheck),
            known: BTreeMap::new(),
        }
    }

    /// The access state.
    pub fn access(&self) -> &State {
        self.access.state()
    }

    /// Plans and makes the writes due at `now`.
    pub async fn round(
        &mut self,
        kube: &kube::Client,
        claims: &BTreeMap<ClaimUid, ClaimEntries>,
        now: Millis,
    ) -> RoundReport {
        let mut report = RoundReport::default();
        if self.blocked(now) {
            return report;
        }
        for (uid, c) in claims {
            self.known.insert(uid.clone(), c.claim.clone());
        }
        let want = claims
            .iter()
            .map(|(uid, c)| (uid.clone(), desired(&c.entries)))
            .collect();
        for planned in self.planner.plan(&want, now) {
            // Refused or dropped earlier in this round: the rest wait for
            // the recheck.
            if self.blocked(now) {
                self.planner.record(&planned.uid, Outcome::Failed);
                continue;
            }
            let (claim, entries) = match (claims.get(&planned.uid), self.known.get(&planned.uid)) {
                (Some(c), _) => (c.claim.clone(), c.entries.as_slice()),
                (None, Some(claim)) => (claim.clone(), &[][..]),
                (None, None) => {
                    self.planner.record(&planned.uid, Outcome::Done);
                    continue;
                }
            };
            let outcome = self.write(kube, &claim, entries, now, &mut report).await;
            if matches!(outcome, Outcome::Applied) {
                report.applied += 1;
            }
            if !claims.contains_key(&planned.uid) && outcome != Outcome::Failed {
                self.known.remove(&planned.uid);
            }
            self.planner.record(&planned.uid, outcome);
        }
        let planner = &self.planner;
        self.known
            .retain(|uid, _| claims.contains_key(uid) || planner.applied(uid).is_some());
        report
    }

    /// Refused or dropped, and not yet time to check again.
    fn blocked(&self, now: Millis) -> bool {
        matches!(
            self.access.state(),
            State::Forbidden(_) | State::FieldDropped
        ) && !self.access.needs_probe(now)
    }

    async fn write(
        &mut self,
        kube: &kube::Client,
        claim: &ClaimRef,
        entries: &[AllocatedDeviceStatus],
        now: Millis,
        report: &mut RoundReport,
    ) -> Outcome {
        if self.access.needs_probe(now) {
            report.requests += 1;
            let probed = probe::claim_status(kube, claim, entries).await.ok();
            if let Some(outcome) = self.take(kube, probed.as_ref(), now, report).await
                && outcome != Outcome::Applied
            {
                return outcome;
            }
            if *self.access.state() != State::Enabled {
                return Outcome::Failed;
            }
        }
        report.requests += 1;
        let written = write::apply(kube, claim, entries).await;
        self.take(kube, write::finding(&written).as_ref(), now, report)
            .await
            .unwrap_or(Outcome::Failed)
    }

    /// Moves the access state by an apply's finding (None: it decided
    /// nothing); the planner's outcome for the claim (None: the access
    /// says no).
    async fn take(
        &mut self,
        kube: &kube::Client,
        finding: Option<&Finding>,
        now: Millis,
        report: &mut RoundReport,
    ) -> Option<Outcome> {
        let Some(finding) = finding else {
            return Some(Outcome::Failed);
        };
        let forbidden = matches!(finding, Finding::Refused(r) if r.verdict == Verdict::Forbidden);
        let identity = if forbidden {
            access::identity(kube).await
        } else {
            None
        };
        if let Some(state) = self.access.observe(finding, identity.as_deref(), now) {
            access::log(state);
            report.access_changed = Some(access::describe(state));
        }
        match finding {
            Finding::Kept => Some(Outcome::Applied),
            Finding::Dropped => None,
            Finding::Refused(_) if forbidden => None,
            // The claim is gone, replaced, or its entries will never be
            // taken: done with this uid.
            Finding::Refused(_) => Some(Outcome::Done),
        }
    }
}
