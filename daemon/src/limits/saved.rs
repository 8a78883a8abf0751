//! `<state_dir>/limits.json`: the last `[limits]` action per claim and
//! device, so a claim's `last_action` (and its status's ProcessEnded)
//! survives a restart. Only claims' actions: an unclaimed process's has no
//! claim whose status would show it.
//!
//! Advisory, like `activity.json`: written through a temp file and a rename
//! (a reader never sees half a file), never fsynced, and only when the
//! actions kept change. A file that cannot be read or parsed is logged and
//! ignored. Where there is no `limits.json` yet, the actions are read once
//! from `activity.json`'s `last_actions`, where releases before this file
//! kept them; the next write puts them here. An action whose mode or
//! outcome this version does not know is dropped on load.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::report::LimitAction;
use crate::activity::WarningKind;
use crate::state::SaveError;

/// The file's name in the state dir.
pub const FILE_NAME: &str = "limits.json";

/// Where releases before [`FILE_NAME`] kept the actions.
const OLD_FILE_NAME: &str = "activity.json";

/// The format version.
const VERSION: u32 = 1;

/// The modes and outcomes an action may have (the file holds text; the
/// report the same text, static). `enforce`'s tests keep these the texts of
/// its outcomes and of the acting modes.
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

#[derive(Debug, Serialize, Deserialize)]
struct File {
    version: u32,
    /// The last action per claim and device.
    #[serde(default)]
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

/// The actions kept in `state_dir`: `limits.json`, or where it is absent,
/// `activity.json`'s; none when neither has any or cannot be read.
pub fn load(state_dir: &Path) -> Vec<LimitAction> {
    let saved = read(&state_dir.join(FILE_NAME))
        .or_else(|| read(&state_dir.join(OLD_FILE_NAME)))
        .unwrap_or_default();
    saved.iter().filter_map(SavedAction::action).collect()
}

/// The actions of the file at `path`; `None` when it does not exist.
fn read(path: &Path) -> Option<Vec<SavedAction>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "the last [limits] actions not read; claims show none");
            return Some(Vec::new());
        }
    };
    match serde_json::from_slice::<File>(&bytes) {
        Ok(file) if file.version == VERSION => Some(file.last_actions),
        Ok(file) => {
            tracing::warn!(path = %path.display(), version = file.version, "the last [limits] actions of an unknown format version ignored");
            Some(Vec::new())
        }
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "the last [limits] actions not parsed; ignored");
            Some(Vec::new())
        }
    }
}

/// Writes the actions when they change.
#[derive(Debug)]
pub struct ActionsFile {
    dir: PathBuf,
    /// What the file holds, as far as this process knows; `None` before the
    /// first write (so the first set of actions is written, moving any that
    /// were read from `activity.json` here).
    written: Option<Vec<SavedAction>>,
}

impl ActionsFile {
    /// The file in `state_dir`.
    pub fn new(state_dir: &Path) -> Self {
        Self {
            dir: state_dir.to_path_buf(),
            written: None,
        }
    }

    /// Writes `actions` (claims' only) unless the file already holds them;
    /// true when it wrote.
    pub fn save<'a>(
        &mut self,
        actions: impl Iterator<Item = &'a LimitAction>,
    ) -> Result<bool, SaveError> {
        let saved: Vec<SavedAction> = actions
            .filter(|a| !a.claim_uid.is_empty())
            .map(SavedAction::of)
            .collect();
        if self.written.as_ref() == Some(&saved) || self.written.is_none() && saved.is_empty() {
            return Ok(false);
        }
        let file = File {
            version: VERSION,
            last_actions: saved.clone(),
        };
        let mut bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
        bytes.push(b'\n');
        crate::state::write_advisory(&self.dir, FILE_NAME, &bytes)?;
        self.written = Some(saved);
        Ok(true)
    }
}

#[cfg(test)]
mod tests;
