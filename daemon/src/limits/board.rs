//! [`LimitsBoard`]: where `[limits]` publishes what it did, for the API,
//! the metrics and the claim status: the enforcer's ledger (written by its
//! thread as each action ends), with the claims' last actions from before a
//! restart beside it ([`super::saved`]), each shown until this process acts
//! on the same claim and device or the claim goes. Cheap to clone; a reader
//! never waits on the enforcer.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use super::enforce::Ledger;
use super::report::{LimitAction, LimitsReport};
use super::saved;
use crate::activity::held::HeldClaim;

/// What `[limits]` did: shared, read at any time.
#[derive(Debug, Clone, Default)]
pub struct LimitsBoard {
    ledger: Ledger,
    restored: Arc<Mutex<BTreeMap<(String, String), LimitAction>>>,
}

impl LimitsBoard {
    /// A board holding the last actions kept in `state_dir` (none without
    /// one).
    pub fn load(state_dir: Option<&Path>) -> Self {
        Self::with_restored(state_dir.map(saved::load).unwrap_or_default())
    }

    /// A board holding `actions` from before a restart.
    pub fn with_restored(actions: Vec<LimitAction>) -> Self {
        let restored = actions
            .into_iter()
            .map(|a| ((a.claim_uid.clone(), a.device.clone()), a))
            .collect();
        Self {
            ledger: Ledger::default(),
            restored: Arc::new(Mutex::new(restored)),
        }
    }

    /// The ledger the enforcer's thread writes into.
    pub fn ledger(&self) -> Ledger {
        self.ledger.clone()
    }

    /// What was done: this process's actions, and the restored ones where
    /// this process has not acted on the same claim and device.
    pub fn report(&self) -> LimitsReport {
        let mut report = self.ledger.report();
        let restored = self.restored.lock().unwrap_or_else(PoisonError::into_inner);
        for (key, action) in restored.iter() {
            report
                .last
                .entry(key.clone())
                .or_insert_with(|| action.clone());
        }
        report
    }

    /// Forgets the restored actions of claims no longer `held`.
    pub(super) fn keep_claims(&self, held: &[HeldClaim]) {
        self.restored
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(uid, _), _| held.binary_search_by(|c| c.uid.as_str().cmp(uid)).is_ok());
    }
}
