//! The folder of claim records: save, remove, load all.

use std::path::{Path, PathBuf};

use gpuslice_cdi::atomic::{
    AtomicError, AtomicStep, is_temp_name, read_regular, remove_durable_observed,
    write_atomic_observed,
};

use crate::crash::crash_point;

use super::record::{ClaimRecord, RECORD_VERSION};

/// Mode of record files: only root reads claim records.
const RECORD_MODE: u32 = 0o600;
/// The largest record read (a record is under 1 KB): a bigger file is set
/// aside as unreadable, never read whole.
const MAX_RECORD_BYTES: u64 = 1 << 20;

/// A record that could not be stored or loaded.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The records folder could not be created or listed.
    #[error("claim records folder {path}: {error}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A durable write or removal failed.
    #[error("claim record of {uid}: {error}")]
    Write {
        /// The claim.
        uid: String,
        /// What failed.
        error: AtomicError,
    },
    /// A record could not be encoded (never expected: records are plain data).
    #[error("claim record of {uid} cannot be encoded: {reason}")]
    Encode {
        /// The claim.
        uid: String,
        /// serde's message.
        reason: String,
    },
    /// A record was written by a newer gpuslice.
    #[error(
        "claim record {path} has format version {found}, newer than this build's \
         {RECORD_VERSION}: run the newer gpuslice, or remove the record once its claim is gone"
    )]
    NewerVersion {
        /// The record file.
        path: PathBuf,
        /// Its version.
        found: u32,
    },
}

/// Records loaded at start-up, and the files that could not be read.
#[derive(Debug, Default)]
pub struct LoadedRecords {
    /// Whole records.
    pub records: Vec<ClaimRecord>,
    /// Files that are not records, with why; moved aside as `.corrupt-*`.
    pub unreadable: Vec<String>,
}

/// The records folder.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// Opens (creating if needed, mode 0700) `<state_dir>/claims`.
    pub fn open(state_dir: &Path) -> Result<Self, StateError> {
        let dir = state_dir.join("claims");
        std::fs::DirBuilder::new()
            .recursive(true)
            .create(&dir)
            .map_err(|error| StateError::Folder {
                path: dir.clone(),
                error,
            })?;
        Ok(Self { dir })
    }

    /// The records folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file_name(uid: &str) -> String {
        format!("{uid}.json")
    }

    /// Writes `record` durably, replacing any earlier one.
    pub fn save(&self, record: &ClaimRecord) -> Result<(), StateError> {
        let mut bytes = serde_json::to_vec_pretty(record).map_err(|e| StateError::Encode {
            uid: record.uid.clone(),
            reason: e.to_string(),
        })?;
        bytes.push(b'\n');
        write_atomic_observed(
            &self.dir,
            &Self::file_name(&record.uid),
            &bytes,
            RECORD_MODE,
            &record_steps,
        )
        .map_err(|error| StateError::Write {
            uid: record.uid.clone(),
            error,
        })
    }

    /// Removes the record of `uid` durably; false when there was none.
    pub fn remove(&self, uid: &str) -> Result<bool, StateError> {
        remove_durable_observed(&self.dir, &Self::file_name(uid), &record_steps).map_err(|error| {
            StateError::Write {
                uid: uid.to_owned(),
                error,
            }
        })
    }

    /// Loads every record; removes temp files a crash left behind.
    pub fn load_all(&self) -> Result<LoadedRecords, StateError> {
        let folder_err = |error| StateError::Folder {
            path: self.dir.clone(),
            error,
        };
        let mut loaded = LoadedRecords::default();
        for entry in std::fs::read_dir(&self.dir).map_err(folder_err)? {
            let entry = entry.map_err(folder_err)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if is_temp_name(&name) {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            match self.load_one(&name) {
                Ok(record) => loaded.records.push(record),
                Err(LoadError::Newer(found)) => {
                    return Err(StateError::NewerVersion { path, found });
                }
                Err(LoadError::Bad(why)) => {
                    self.set_aside(&path, &name);
                    loaded.unreadable.push(format!("{}: {why}", path.display()));
                }
            }
        }
        loaded.records.sort_by(|a, b| a.uid.cmp(&b.uid));
        Ok(loaded)
    }

    fn load_one(&self, name: &str) -> Result<ClaimRecord, LoadError> {
        let text = read_regular(&self.dir, name, MAX_RECORD_BYTES)
            .map_err(|e| LoadError::Bad(e.to_string()))?
            .ok_or_else(|| LoadError::Bad("vanished while being read".to_owned()))?;
        let value: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| LoadError::Bad(e.to_string()))?;
        let version = value.get("version").and_then(serde_json::Value::as_u64);
        match version.map(u32::try_from) {
            Some(Ok(v)) if v > RECORD_VERSION => return Err(LoadError::Newer(v)),
            Some(Ok(_)) => {}
            _ => return Err(LoadError::Bad("no valid \"version\" field".to_owned())),
        }
        let record: ClaimRecord =
            serde_json::from_value(value).map_err(|e| LoadError::Bad(e.to_string()))?;
        if Self::file_name(&record.uid) != name {
            return Err(LoadError::Bad(format!(
                "holds claim {} but is named {name}",
                record.uid
            )));
        }
        Ok(record)
    }

    fn set_aside(&self, path: &Path, name: &str) {
        let aside = self.dir.join(format!(".{name}.corrupt"));
        let _ = std::fs::rename(path, aside);
    }
}

/// The crash points of a record's durable steps.
fn record_steps(step: AtomicStep) {
    match step {
        AtomicStep::TempSynced => crash_point("record.after_temp_synced"),
        AtomicStep::Renamed => crash_point("record.after_rename"),
        AtomicStep::Unlinked => crash_point("record.after_unlink"),
    }
}

enum LoadError {
    Newer(u32),
    Bad(String),
}

#[cfg(test)]
mod tests;
