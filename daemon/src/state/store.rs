//! A folder of durable records, one file per claim named by its uid: save,
//! remove, load all. The claim engine's records (`<state_dir>/claims`,
//! [`Store`]) and the ComputeDomain channels' (`<state_dir>/compute-domains`)
//! are two folders of this one kind, each record type saying its format
//! version and its crash points ([`Durable`]).

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use gpuslice_cdi::atomic::{
    AtomicError, AtomicStep, is_temp_name, read_regular, remove_durable_observed,
    write_atomic_observed,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::crash::crash_point;

use super::record::{ClaimRecord, RECORD_VERSION};

/// Mode of record files: only root reads claim records.
const RECORD_MODE: u32 = 0o600;
/// The largest record read (a record is under 1 KB): a bigger file is set
/// aside as unreadable, never read whole.
const MAX_RECORD_BYTES: u64 = 1 << 20;

/// A record kept in a [`RecordFolder`].
pub trait Durable: Serialize + DeserializeOwned {
    /// What the records are, for messages: "claim record".
    const WHAT: &'static str;
    /// The format version this build writes, and the newest it reads.
    const VERSION: u32;
    /// The crash point after each durable step of a save or a removal.
    fn passed(step: AtomicStep);
    /// The claim it is the record of (its file is `<uid>.json`).
    fn uid(&self) -> &str;
}

impl Durable for ClaimRecord {
    const WHAT: &'static str = "claim record";
    const VERSION: u32 = RECORD_VERSION;

    fn passed(step: AtomicStep) {
        match step {
            AtomicStep::TempSynced => crash_point("record.after_temp_synced"),
            AtomicStep::Renamed => crash_point("record.after_rename"),
            AtomicStep::Unlinked => crash_point("record.after_unlink"),
        }
    }

    fn uid(&self) -> &str {
        &self.uid
    }
}

/// A record that could not be stored or loaded.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The records folder could not be created or listed.
    #[error("{what}s folder {path}: {error}")]
    Folder {
        /// What the records are.
        what: &'static str,
        /// The folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A durable write or removal failed.
    #[error("{what} of {uid}: {error}")]
    Write {
        /// What the records are.
        what: &'static str,
        /// The claim.
        uid: String,
        /// What failed.
        error: AtomicError,
    },
    /// A record could not be encoded (never expected: records are plain data).
    #[error("{what} of {uid} cannot be encoded: {reason}")]
    Encode {
        /// What the records are.
        what: &'static str,
        /// The claim.
        uid: String,
        /// serde's message.
        reason: String,
    },
    /// A record was written by a newer gpuslice.
    #[error(
        "{what} {path} has format version {found}, newer than this build's \
         {supported}: run the newer gpuslice, or remove the record once its claim is gone"
    )]
    NewerVersion {
        /// What the records are.
        what: &'static str,
        /// The record file.
        path: PathBuf,
        /// Its version.
        found: u32,
        /// The newest this build reads.
        supported: u32,
    },
}

/// Records loaded at start-up, and the files that could not be read.
#[derive(Debug)]
pub struct Loaded<R> {
    /// Whole records, by uid.
    pub records: Vec<R>,
    /// Files that are not records, with why; moved aside as `.<name>.corrupt`.
    pub unreadable: Vec<String>,
}

/// The claim engine's records loaded at start-up.
pub type LoadedRecords = Loaded<ClaimRecord>;

/// The claim engine's records folder, `<state_dir>/claims`.
pub type Store = RecordFolder<ClaimRecord>;

/// A folder of records of type `R`.
#[derive(Debug)]
pub struct RecordFolder<R> {
    dir: PathBuf,
    records: PhantomData<fn() -> R>,
}

impl<R> Clone for RecordFolder<R> {
    fn clone(&self) -> Self {
        Self {
            dir: self.dir.clone(),
            records: PhantomData,
        }
    }
}

impl Store {
    /// Opens (creating if needed, mode 0700) `<state_dir>/claims`.
    pub fn open(state_dir: &Path) -> Result<Self, StateError> {
        Self::open_folder(&state_dir.join("claims"))
    }
}

impl<R: Durable> RecordFolder<R> {
    /// Opens (creating if needed, mode 0700) the folder `dir`.
    pub fn open_folder(dir: &Path) -> Result<Self, StateError> {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(dir)
            .map_err(|error| StateError::Folder {
                what: R::WHAT,
                path: dir.to_owned(),
                error,
            })?;
        Ok(Self {
            dir: dir.to_owned(),
            records: PhantomData,
        })
    }

    /// The records folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file_name(uid: &str) -> String {
        format!("{uid}.json")
    }

    /// Writes `record` durably, replacing any earlier one.
    pub fn save(&self, record: &R) -> Result<(), StateError> {
        let mut bytes = serde_json::to_vec_pretty(record).map_err(|e| StateError::Encode {
            what: R::WHAT,
            uid: record.uid().to_owned(),
            reason: e.to_string(),
        })?;
        bytes.push(b'\n');
        write_atomic_observed(
            &self.dir,
            &Self::file_name(record.uid()),
            &bytes,
            RECORD_MODE,
            &R::passed,
        )
        .map_err(|error| StateError::Write {
            what: R::WHAT,
            uid: record.uid().to_owned(),
            error,
        })
    }

    /// Removes the record of `uid` durably; false when there was none.
    pub fn remove(&self, uid: &str) -> Result<bool, StateError> {
        remove_durable_observed(&self.dir, &Self::file_name(uid), &R::passed).map_err(|error| {
            StateError::Write {
                what: R::WHAT,
                uid: uid.to_owned(),
                error,
            }
        })
    }

    /// Loads every record; removes temp files a crash left behind.
    pub fn load_all(&self) -> Result<Loaded<R>, StateError> {
        let folder_err = |error| StateError::Folder {
            what: R::WHAT,
            path: self.dir.clone(),
            error,
        };
        let mut loaded = Loaded {
            records: Vec::new(),
            unreadable: Vec::new(),
        };
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
                    return Err(StateError::NewerVersion {
                        what: R::WHAT,
                        path,
                        found,
                        supported: R::VERSION,
                    });
                }
                Err(LoadError::Bad(why)) => {
                    self.set_aside(&path, &name);
                    loaded.unreadable.push(format!("{}: {why}", path.display()));
                }
            }
        }
        loaded.records.sort_by(|a, b| a.uid().cmp(b.uid()));
        Ok(loaded)
    }

    fn load_one(&self, name: &str) -> Result<R, LoadError> {
        let text = read_regular(&self.dir, name, MAX_RECORD_BYTES)
            .map_err(|e| LoadError::Bad(e.to_string()))?
            .ok_or_else(|| LoadError::Bad("vanished while being read".to_owned()))?;
        let value: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| LoadError::Bad(e.to_string()))?;
        let version = value.get("version").and_then(serde_json::Value::as_u64);
        match version.map(u32::try_from) {
            Some(Ok(v)) if v > R::VERSION => return Err(LoadError::Newer(v)),
            Some(Ok(_)) => {}
            _ => return Err(LoadError::Bad("no valid \"version\" field".to_owned())),
        }
        let record: R = serde_json::from_value(value).map_err(|e| LoadError::Bad(e.to_string()))?;
        if Self::file_name(record.uid()) != name {
            return Err(LoadError::Bad(format!(
                "holds claim {} but is named {name}",
                record.uid()
            )));
        }
        Ok(record)
    }

    fn set_aside(&self, path: &Path, name: &str) {
        let aside = self.dir.join(format!(".{name}.corrupt"));
        let _ = std::fs::rename(path, aside);
    }
}

enum LoadError {
    Newer(u32),
    Bad(String),
}

#[cfg(test)]
mod tests;
