//! The ledger: every claim uid of the run and where it stands as its client
//! knows it. Claim uids are never reused, so a claim's life only moves
//! forward: preparing, prepared, unpreparing, gone (or preparing, gone when
//! refused).
//!
//! Checks that race with the load take a snapshot before they look at the
//! node and one after, and reason over the window between them (see
//! [`Window`]): what they saw existed at some instant inside it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::workload::Plan;

/// Where a claim stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Life {
    /// Its prepare is in flight.
    Preparing,
    /// Its prepare succeeded; no unprepare sent yet.
    Prepared,
    /// Its unprepare is in flight (or failed: it stays here).
    Unpreparing,
    /// Refused, or unprepared: nothing of it may exist any more.
    Gone,
}

/// One claim.
#[derive(Debug, Clone)]
pub struct Entry {
    pub life: Life,
    /// Bumped at every change of life.
    pub version: u64,
    pub plan: Arc<Plan>,
    /// The CDI ids its prepare returned.
    pub ids: Vec<String>,
}

/// Every claim of the run.
#[derive(Debug, Default)]
pub struct Ledger {
    claims: Mutex<HashMap<String, Entry>>,
}

impl Ledger {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A prepare of a new claim is about to be sent.
    pub fn preparing(&self, plan: &Arc<Plan>) {
        let entry = Entry {
            life: Life::Preparing,
            version: 0,
            plan: Arc::clone(plan),
            ids: Vec::new(),
        };
        let old = self.lock().insert(plan.uid.clone(), entry);
        assert!(old.is_none(), "claim uid {} used twice", plan.uid);
    }

    /// Moves `uid` to `life` (with the CDI ids when prepared).
    pub fn set(&self, uid: &str, life: Life, ids: Option<Vec<String>>) {
        let mut claims = self.lock();
        let entry = claims.get_mut(uid).expect("a claim of the ledger");
        entry.life = life;
        entry.version += 1;
        if let Some(ids) = ids {
            entry.ids = ids;
        }
    }

    /// Every claim now.
    pub fn snapshot(&self) -> HashMap<String, Entry> {
        self.lock().clone()
    }
}

/// Two snapshots around a look at the node.
#[derive(Debug)]
pub struct Window {
    pub before: HashMap<String, Entry>,
    pub after: HashMap<String, Entry>,
}

impl Window {
    /// Whether something of `uid` may exist at an instant of the window: it
    /// was made by then (in `after`) and was not gone at its start.
    pub fn may_exist(&self, uid: &str) -> bool {
        self.after.contains_key(uid) && self.before.get(uid).is_none_or(|e| e.life != Life::Gone)
    }

    /// The claim's plan, if it may exist.
    pub fn plan(&self, uid: &str) -> Option<&Arc<Plan>> {
        self.may_exist(uid)
            .then(|| self.after.get(uid).map(|e| &e.plan))
            .flatten()
    }

    /// Claims that may exist in the window.
    pub fn live(&self) -> impl Iterator<Item = &Entry> {
        self.after.values().filter(|e| self.may_exist(&e.plan.uid))
    }

    /// Claims prepared through the whole window (same version at both
    /// ends): their spec and record must exist throughout.
    pub fn steady(&self) -> impl Iterator<Item = &Entry> {
        self.after.values().filter(|e| {
            e.life == Life::Prepared
                && self
                    .before
                    .get(&e.plan.uid)
                    .is_some_and(|b| b.version == e.version)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::workload::{Expect, Sharing};
    use super::*;

    fn plan(uid: &str) -> Arc<Plan> {
        Arc::new(Plan {
            uid: uid.to_owned(),
            devices: vec!["gpu-0".to_owned()],
            sharing: Sharing::Alone,
            on_slices: false,
            expect: Expect::MayPrepare,
        })
    }

    #[test]
    fn a_window_blames_only_what_was_gone_before_it_began() {
        let ledger = Ledger::default();
        for uid in ["steady", "leaving", "gone", "refused"] {
            ledger.preparing(&plan(uid));
        }
        ledger.set("steady", Life::Prepared, Some(vec![]));
        ledger.set("leaving", Life::Prepared, Some(vec![]));
        ledger.set("gone", Life::Gone, None);
        let before = ledger.snapshot();
        ledger.preparing(&plan("new"));
        ledger.set("leaving", Life::Unpreparing, None);
        ledger.set("leaving", Life::Gone, None);
        ledger.set("refused", Life::Gone, None);
        let w = Window {
            before,
            after: ledger.snapshot(),
        };
        for uid in ["steady", "leaving", "refused", "new"] {
            assert!(w.may_exist(uid), "{uid}");
        }
        assert!(!w.may_exist("gone"));
        assert!(!w.may_exist("never made"));
        let steady: Vec<&str> = w.steady().map(|e| e.plan.uid.as_str()).collect();
        assert_eq!(steady, ["steady"]);
    }
}
