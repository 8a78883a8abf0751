//! What the MIG kind keeps besides the claim table (which holds the slices
//! claims take): the `[mig]` in force, the lock that makes rescans one at a
//! time, and the problems the last set-up found. Each is locked on its own,
//! never two at once, and never across hardware calls except `rescanning`
//! (held by a rescan from its snapshot of the holdings to installing what it
//! read).

use std::sync::{Mutex, RwLock};

use crate::config::MigConfig;

/// The MIG kind's own state.
#[derive(Debug, Default)]
pub(super) struct MigBooks {
    /// The `[mig]` in force (set by the set-up).
    pub(super) config: RwLock<MigConfig>,
    /// Held by a rescan from its snapshot of the holdings to installing what
    /// it read (see `setup`).
    pub(super) rescanning: Mutex<()>,
    /// What the last set-up found, for status.
    pub(super) problems: Mutex<Vec<String>>,
}
