//! `<state_dir>/activity.json`: the last time each claim was active, so
//! `gpuslicectl claims --idle` survives a restart, and the open warning
//! episodes, so one that lasts through a restart is not warned of again.
//! (`[limits]` keeps its last actions in a file of its own,
//! [`crate::limits::saved`]; a file written before that may still hold
//! them, and `limits` reads them from here once.)
//!
//! Advisory, not durable: written through a temp file and a rename (a
//! reader never sees half a file) but never fsynced; a crash loses at most
//! the last minute, which makes a claim look idle a little longer, or an
//! episode's last change, which logs its warning (or its end) once more.
//! Written when the set of claims or the open episodes change, else at
//! most once a minute, and when sampling stops. Claims gone are dropped by
//! the caller before a write. A file that cannot be read or parsed is
//! logged and ignored: the claims count as never active since their
//! prepare. A file from before episodes were kept loads with none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::episodes::SavedEpisode;
use crate::state::SaveError;

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
}

/// What the file keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Saved {
    /// Claim uid → Unix seconds it was last active.
    pub last_active: BTreeMap<String, i64>,
    /// The episodes open.
    pub episodes: Vec<SavedEpisode>,
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
}

impl Persister {
    /// Writes into `state_dir`; `on_disk` is what [`load`] found there.
    pub fn new(state_dir: &Path, on_disk: Saved) -> Self {
        Self {
            dir: state_dir.to_path_buf(),
            written_at: None,
            written: on_disk,
        }
    }

    fn changed(&self, last_active: &BTreeMap<String, i64>, episodes: &[SavedEpisode]) -> bool {
        last_active != &self.written.last_active || episodes != self.written.episodes.as_slice()
    }

    /// Whether to write at `now`: the claims or the open episodes differ
    /// from the file's, or times changed and a minute has passed.
    pub fn due(
        &self,
        now: i64,
        last_active: &BTreeMap<String, i64>,
        episodes: &[SavedEpisode],
    ) -> bool {
        let same_claims = last_active.keys().eq(self.written.last_active.keys());
        if !same_claims || episodes != self.written.episodes.as_slice() {
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
    ) -> Result<bool, SaveError> {
        let wanted =
            self.due(now, last_active, episodes) || force && self.changed(last_active, episodes);
        if !wanted {
            return Ok(false);
        }
        write(&self.dir, last_active, episodes)?;
        self.written_at = Some(now);
        self.written = Saved {
            last_active: last_active.clone(),
            episodes: episodes.to_vec(),
        };
        Ok(true)
    }
}

fn write(
    dir: &Path,
    last_active: &BTreeMap<String, i64>,
    episodes: &[SavedEpisode],
) -> Result<(), SaveError> {
    let file = File {
        version: VERSION,
        last_active: last_active.clone(),
        open_episodes: episodes.to_vec(),
    };
    let mut bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
    bytes.push(b'\n');
    // Advisory (module doc): no fsync, so not the durable writer.
    crate::state::write_advisory(dir, FILE_NAME, &bytes)
}

#[cfg(test)]
mod tests;
