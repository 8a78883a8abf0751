//! `<state_dir>/activity.json`: the last time each claim was active, so
//! `gpuslicectl claims --idle` survives a restart, the open warning
//! episodes, so one that lasts through a restart is not warned of again,
//! and the last `[limits]` action per claim and device, so a claim's
//! `last_action` (and its status's ProcessEnded) survives it too.
//!
//! Advisory, not durable: written through a temp file and a rename (a
//! reader never sees half a file) but never fsynced; a crash loses at most
//! the last minute, which makes a claim look idle a little longer, or an
//! episode's last change, which logs its warning (or its end) once more.
//! Written when the set of claims or the open episodes change, else at
//! most once a minute, and when sampling stops. Claims gone are dropped by
//! the caller before a write. A file that cannot be read or parsed is
//! logged and ignored: the claims count as never active since their
//! prepare. A file from before episodes (or actions) were kept loads with
//! none; an older gpusliced reading a newer file ignores the actions.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::episodes::SavedEpisode;
use super::snapshot::{LimitAction, WarningKind};

/// The file's name in the state dir.
pub const FILE_NAME: &str = "activity.json";

/// The format version.
const VERSION: u32 = 1;

/// Seconds between two writes while the claim set stays the same.
pub const WRITE_EVERY_S: i64 = 60;

#[derive(Debug, Serialize, Deserialize)]
struct File {
    version: u32,
    /// Claim uid → Unix seconds it was last active.
    last_active: BTreeMap<String, i64>,
    /// The episodes open when written.
    #[serde(default)]
    open_episodes: Vec<SavedEpisode>,
    /// The last limit action per claim and device; left out when none, so
    /// a file without actions stays byte for byte what it was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    last_actions: Vec<SavedAction>,
}

/// A [`LimitAction`] as the file holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedAction {
    kind: WarningKind,
    mode: String,
    outcome: String,
    claim_uid: String,
    device: String,
    pid: u32,
    comm: String,
    memory_used: u64,
    over_for_s: i64,
    at_ms: i64,
}

/// The modes and outcomes an action may have (the file holds text; the
/// snapshot the same text, static). `limits::enforce`'s tests keep these
/// the texts of its outcomes and of the acting modes.
pub(crate) const MODES: &[&str] = &["dry-run", "end"];
pub(crate) const OUTCOMES: &[&str] = &[
    "terminated",
    "killed",
    "would-end",
    "gone",
    "pid-reused",
    "not-permitted",
    "failed",
];

impl SavedAction {
    /// `action` as saved.
    pub fn of(action: &LimitAction) -> Self {
        Self {
            kind: action.kind,
            mode: action.mode.to_owned(),
            outcome: action.outcome.to_owned(),
            claim_uid: action.claim_uid.clone(),
            device: action.device.clone(),
            pid: action.pid,
            comm: action.comm.clone(),
            memory_used: action.memory_used,
            over_for_s: action.over_for_s,
            at_ms: action.at_ms,
        }
    }

    /// The action; `None` for a mode or outcome this version does not know.
    pub fn action(&self) -> Option<LimitAction> {
        let known = |list: &[&'static str], text: &str| list.iter().copied().find(|k| *k == text);
        Some(LimitAction {
            kind: self.kind,
            mode: known(MODES, &self.mode)?,
            outcome: known(OUTCOMES, &self.outcome)?,
            claim_uid: self.claim_uid.clone(),
            device: self.device.clone(),
            pid: self.pid,
            comm: self.comm.clone(),
            memory_used: self.memory_used,
            over_for_s: self.over_for_s,
            at_ms: self.at_ms,
        })
    }
}

/// What the file keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Saved {
    /// Claim uid → Unix seconds it was last active.
    pub last_active: BTreeMap<String, i64>,
    /// The episodes open.
    pub episodes: Vec<SavedEpisode>,
    /// The last limit actions.
    pub actions: Vec<SavedAction>,
}

/// A failed write of the file.
#[derive(Debug, thiserror::Error)]
#[error("writing {path}")]
pub struct PersistError {
    /// The file (or its temp file).
    pub path: PathBuf,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

/// Reads the file in `state_dir`; empty when absent or unreadable.
pub fn load(state_dir: &Path) -> Saved {
    let path = state_dir.join(FILE_NAME);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Saved::default(),
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "claim activity times not read; claims count as idle since their prepare");
            return Saved::default();
        }
    };
    match serde_json::from_slice::<File>(&bytes) {
        Ok(file) if file.version == VERSION => Saved {
            last_active: file.last_active,
            episodes: file.open_episodes,
            actions: file.last_actions,
        },
        Ok(file) => {
            tracing::warn!(path = %path.display(), version = file.version, "claim activity times of an unknown format version ignored");
            Saved::default()
        }
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "claim activity times not parsed; ignored");
            Saved::default()
        }
    }
}

/// When to write, and the writing.
#[derive(Debug)]
pub struct Persister {
    dir: PathBuf,
    written_at: Option<i64>,
    written: Saved,
    /// The actions the next write holds ([`Persister::keep_actions`]).
    actions: Vec<SavedAction>,
}

impl Persister {
    /// Writes into `state_dir`; `on_disk` is what [`load`] found there.
    pub fn new(state_dir: &Path, on_disk: Saved) -> Self {
        Self {
            dir: state_dir.to_path_buf(),
            written_at: None,
            actions: on_disk.actions.clone(),
            written: on_disk,
        }
    }

    /// The last actions to keep from now on: written with the next save,
    /// which a change of them makes due.
    pub fn keep_actions(&mut self, actions: Vec<SavedAction>) {
        self.actions = actions;
    }

    fn changed(&self, last_active: &BTreeMap<String, i64>, episodes: &[SavedEpisode]) -> bool {
        last_active != &self.written.last_active
            || episodes != self.written.episodes.as_slice()
            || self.actions != self.written.actions
    }

    /// Whether to write at `now`: the claims, the open episodes or the
    /// actions differ from the file's, or times changed and a minute has
    /// passed.
    pub fn due(
        &self,
        now: i64,
        last_active: &BTreeMap<String, i64>,
        episodes: &[SavedEpisode],
    ) -> bool {
        let same_claims = last_active.keys().eq(self.written.last_active.keys());
        if !same_claims
            || episodes != self.written.episodes.as_slice()
            || self.actions != self.written.actions
        {
            return true;
        }
        last_active != &self.written.last_active
            && self.written_at.is_none_or(|at| now - at >= WRITE_EVERY_S)
    }

    /// Writes when [`Persister::due`] (or `force` and something changed);
    /// true when it wrote.
    pub fn save(
        &mut self,
        now: i64,
        last_active: &BTreeMap<String, i64>,
        episodes: &[SavedEpisode],
        force: bool,
    ) -> Result<bool, PersistError> {
        let wanted =
            self.due(now, last_active, episodes) || force && self.changed(last_active, episodes);
        if !wanted {
            return Ok(false);
        }
        write(&self.dir, last_active, episodes, &self.actions)?;
        self.written_at = Some(now);
        self.written = Saved {
            last_active: last_active.clone(),
            episodes: episodes.to_vec(),
            actions: self.actions.clone(),
        };
        Ok(true)
    }
}

fn write(
    dir: &Path,
    last_active: &BTreeMap<String, i64>,
    episodes: &[SavedEpisode],
    actions: &[SavedAction],
) -> Result<(), PersistError> {
    let file = File {
        version: VERSION,
        last_active: last_active.clone(),
        open_episodes: episodes.to_vec(),
        last_actions: actions.to_vec(),
    };
    let mut bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
    bytes.push(b'\n');
    // Advisory (module doc): no fsync, so not the durable writer.
    crate::state::write_advisory(dir, FILE_NAME, &bytes)
        .map_err(|(path, source)| PersistError { path, source })?;
    Ok(())
}

#[cfg(test)]
mod tests;
