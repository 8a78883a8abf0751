//! The usage history while the daemon runs: loaded from
//! `<state_dir>/usage-history.json` at start-up, fed by the activity sampler
//! after each sample, saved when the set of claims changes, else at most
//! every [`SAVE_EVERY_S`], and at shutdown ([`HistoryKeeper::flush`]).
//!
//! The sampler's thread owns the keeper; readers (the API, the metrics)
//! hold a [`SharedHistory`] and lock it briefly. A claim that left the claim
//! set (unprepared, also while the daemon was down) loses its history at the
//! next sample; a claim evicted to stay within `[advice] max_claims` is
//! named in one INFO line. A file that cannot be used is named in one WARN
//! line and the history starts empty (see [`super::history::file`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::history::file;
use super::history::{ClaimFigures, History, HistorySettings};

/// Seconds between two saves while the claim set stays the same.
pub const SAVE_EVERY_S: i64 = 300;

/// The history, shared between the sampler and its readers, and the size
/// of its file at the last save. Cheap to clone.
#[derive(Debug, Clone)]
pub struct SharedHistory {
    history: Arc<Mutex<History>>,
    saved_bytes: Arc<AtomicU64>,
}

impl SharedHistory {
    /// A shared `history`.
    pub fn new(history: History) -> Self {
        Self {
            history: Arc::new(Mutex::new(history)),
            saved_bytes: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The history, locked (a reader keeps the lock briefly: the sampler
    /// waits for it).
    pub fn lock(&self) -> MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Bytes of the file at its last save; 0 before the first.
    pub fn saved_bytes(&self) -> u64 {
        self.saved_bytes.load(Ordering::Relaxed)
    }
}

/// The sampler's side of the history.
#[derive(Debug)]
pub struct HistoryKeeper {
    history: SharedHistory,
    state_dir: Option<PathBuf>,
    /// When last saved, Unix seconds; `None`: not yet.
    saved_at: Option<i64>,
    /// The claims of the last sample.
    claims: BTreeSet<String>,
    /// Samples taken since the last save.
    unsaved: bool,
}

impl HistoryKeeper {
    /// The history kept in `state_dir` (none: kept in memory only), a
    /// file that cannot be used logged once and replaced at the next save.
    pub fn load(state_dir: Option<&Path>, settings: HistorySettings) -> Self {
        let history = match state_dir {
            Some(dir) => {
                let (history, warning) = file::load(dir, settings);
                if let Some(warning) = warning {
                    tracing::warn!("{warning}");
                }
                history
            }
            None => History::new(settings),
        };
        Self {
            history: SharedHistory::new(history),
            state_dir: state_dir.map(Path::to_path_buf),
            saved_at: None,
            claims: BTreeSet::new(),
            unsaved: false,
        }
    }

    /// The history readers see.
    pub fn shared(&self) -> SharedHistory {
        self.history.clone()
    }

    /// Takes one sample of every prepared claim at `now` (Unix seconds):
    /// drops the history of claims no longer prepared, adds the sample, and
    /// saves when the claim set changed or the last save is old enough.
    pub fn record(&mut self, now: i64, claims: &[ClaimFigures]) {
        let prepared: BTreeSet<String> = claims.iter().map(|c| c.uid.clone()).collect();
        let changed = prepared != self.claims;
        let shared = self.history.clone();
        let mut history = shared.lock();
        let gone: Vec<String> = history
            .claims()
            .keys()
            .filter(|uid| !prepared.contains(*uid))
            .cloned()
            .collect();
        for uid in &gone {
            history.forget(uid);
        }
        let evicted = history.observe(now, claims);
        if !evicted.is_empty() {
            let max_claims = history.settings().max_claims;
            tracing::info!(
                evicted = evicted.len(),
                max_claims,
                "usage history full ([advice] max_claims = {max_claims}): dropped the history of {} least recently seen claim(s), first {}",
                evicted.len(),
                evicted.first().map_or("", String::as_str)
            );
        }
        self.claims = prepared;
        self.unsaved = true;
        let due = self.saved_at.is_none_or(|at| now - at >= SAVE_EVERY_S);
        if changed || !gone.is_empty() || due {
            self.save(now, &history);
        }
    }

    /// Saves what was sampled since the last save (at shutdown).
    pub fn flush(&mut self, now: i64) {
        if self.unsaved {
            let shared = self.history.clone();
            let history = shared.lock();
            self.save(now, &history);
        }
    }

    /// Writes the file (when there is a state dir); a failure is logged
    /// and tried again at the next save.
    fn save(&mut self, now: i64, history: &History) {
        let Some(dir) = self.state_dir.as_deref() else {
            return;
        };
        // A failed save is tried again a save interval later, not each sample.
        self.saved_at = Some(now);
        match file::save(dir, history) {
            Ok(bytes) => {
                self.unsaved = false;
                let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
                self.history.saved_bytes.store(bytes, Ordering::Relaxed);
            }
            Err(err) => {
                tracing::warn!(error = %err, "usage history not saved; a restart would lose the samples since the last save");
            }
        }
    }
}
