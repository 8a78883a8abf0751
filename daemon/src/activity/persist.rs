//! `<state_dir>/activity.json`: the last time each claim was active, so
//! `gpuslicectl claims --idle` survives a restart.
//!
//! Advisory, not durable: written through a temp file and a rename (a
//! reader never sees half a file) but never fsynced; a crash loses at most
//! the last minute, which makes a claim look idle a little longer. Written
//! when the set of claims changes, else at most once a minute, and when
//! sampling stops. Claims gone are dropped by the caller before a write. A
//! file that cannot be read or parsed is logged and ignored: the claims
//! count as never active since their prepare.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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
pub fn load(state_dir: &Path) -> BTreeMap<String, i64> {
    let path = state_dir.join(FILE_NAME);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return BTreeMap::new(),
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "claim activity times not read; claims count as idle since their prepare");
            return BTreeMap::new();
        }
    };
    match serde_json::from_slice::<File>(&bytes) {
        Ok(file) if file.version == VERSION => file.last_active,
        Ok(file) => {
            tracing::warn!(path = %path.display(), version = file.version, "claim activity times of an unknown format version ignored");
            BTreeMap::new()
        }
        Err(err) => {
            tracing::warn!(path = %path.display(), error = %err, "claim activity times not parsed; ignored");
            BTreeMap::new()
        }
    }
}

/// When to write, and the writing.
#[derive(Debug)]
pub struct Persister {
    dir: PathBuf,
    written_at: Option<i64>,
    written: BTreeMap<String, i64>,
}

impl Persister {
    /// Writes into `state_dir`; `on_disk` is what [`load`] found there.
    pub fn new(state_dir: &Path, on_disk: BTreeMap<String, i64>) -> Self {
        Self {
            dir: state_dir.to_path_buf(),
            written_at: None,
            written: on_disk,
        }
    }

    /// Whether `last_active` should be written at `now`: the claims
    /// differ from the file's, or times changed and a minute has passed.
    pub fn due(&self, now: i64, last_active: &BTreeMap<String, i64>) -> bool {
        if last_active == &self.written {
            return false;
        }
        let same_claims = last_active.keys().eq(self.written.keys());
        !same_claims || self.written_at.is_none_or(|at| now - at >= WRITE_EVERY_S)
    }

    /// Writes `last_active` when [`Persister::due`] (or `force` and it
    /// changed); true when it wrote.
    pub fn save(
        &mut self,
        now: i64,
        last_active: &BTreeMap<String, i64>,
        force: bool,
    ) -> Result<bool, PersistError> {
        let changed = last_active != &self.written;
        if !(self.due(now, last_active) || force && changed) {
            return Ok(false);
        }
        write(&self.dir, last_active)?;
        self.written_at = Some(now);
        self.written = last_active.clone();
        Ok(true)
    }
}

fn write(dir: &Path, last_active: &BTreeMap<String, i64>) -> Result<(), PersistError> {
    let target = dir.join(FILE_NAME);
    let tmp = dir.join(format!(".{FILE_NAME}.tmp-{}", std::process::id()));
    let file = File {
        version: VERSION,
        last_active: last_active.clone(),
    };
    let mut bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
    bytes.push(b'\n');
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| PersistError { path, source }
    };
    // Advisory (module doc): no fsync, so not the durable writer.
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(&tmp)
        .map_err(err(&tmp))?;
    let written = out.write_all(&bytes).map_err(err(&tmp));
    drop(out);
    if let Err(e) = written.and_then(|()| std::fs::rename(&tmp, &target).map_err(err(&target))) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    Ok(())
}

#[cfg(test)]
mod tests;
