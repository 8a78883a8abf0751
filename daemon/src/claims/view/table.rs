//! What the claim table holds: every claim, their count, and whether its
//! lock can be taken (the watchdog).

use super::super::{Engine, lock};
use crate::state::ClaimRecord;

impl Engine {
    /// Every claim, sorted by uid.
    pub fn claims(&self) -> Vec<ClaimRecord> {
        lock(&self.table).records()
    }

    /// How many claims there are, without copying them.
    pub fn claim_count(&self) -> usize {
        lock(&self.table).count()
    }

    /// True if the table lock can be taken: the watchdog pings only then.
    pub(crate) fn responsive(&self) -> bool {
        drop(lock(&self.table));
        true
    }
}
