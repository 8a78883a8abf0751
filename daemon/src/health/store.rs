//! The faults in force on disk, so an unhealthy GPU stays unhealthy across a
//! daemon restart (a watchdog restart must not put a GPU that raised XID 79
//! back into service), and not across a reboot, which resets every GPU.
//!
//! One JSON file, `<state_dir>/health.json`, written whole through the atomic
//! writer after every change, carrying the boot id it was written in. At
//! start: no file, or one from an earlier boot, is no fault; a file from this
//! boot gives its faults back, except a lost GPU (a live condition the
//! backend reports again if it still holds).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::table::HealthTable;

/// File name under the state folder.
pub const FILE_NAME: &str = "health.json";

/// Version of the file format.
const FORMAT_VERSION: u32 = 1;

/// The file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct HealthFile {
    version: u32,
    boot_id: String,
    gpus: HealthTable,
}

/// The health state file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HealthStoreError {
    /// Reading failed.
    #[error("cannot read device health state {path}: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Not a health state file this daemon understands.
    #[error(
        "device health state {path} is not understood ({reason}); faults recorded before are \
         forgotten: check `gpuslicectl health` and the journal, then delete the file"
    )]
    Format {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// Writing failed.
    #[error("cannot write device health state {path}: {error}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        error: gpuslice_cdi::atomic::AtomicError,
    },
    /// Encoding failed.
    #[error("cannot encode device health state: {0}")]
    Encode(serde_json::Error),
}

/// Where the file lives, and the boot it is written in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthStore {
    dir: PathBuf,
    boot_id: String,
}

impl HealthStore {
    /// The file in `state_dir`, for boot `boot_id`.
    pub fn new(state_dir: &Path, boot_id: &str) -> Self {
        Self {
            dir: state_dir.to_path_buf(),
            boot_id: boot_id.to_owned(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// The faults to carry over (see the module doc).
    pub fn load(&self) -> Result<HealthTable, HealthStoreError> {
        let path = self.path();
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Ok(HealthTable::default());
            }
            Err(err) => {
                return Err(HealthStoreError::Read {
                    path,
                    reason: err.to_string(),
                });
            }
        };
        let file: HealthFile =
            serde_json::from_slice(&text).map_err(|err| HealthStoreError::Format {
                path: path.clone(),
                reason: err.to_string(),
            })?;
        if file.version != FORMAT_VERSION {
            return Err(HealthStoreError::Format {
                path,
                reason: format!(
                    "version {}, this daemon reads {FORMAT_VERSION}",
                    file.version
                ),
            });
        }
        if file.boot_id != self.boot_id {
            return Ok(HealthTable::default());
        }
        Ok(file.gpus.without_live_conditions())
    }

    /// Writes `table` whole, atomically (mode 0644).
    pub fn save(&self, table: &HealthTable) -> Result<(), HealthStoreError> {
        let file = HealthFile {
            version: FORMAT_VERSION,
            boot_id: self.boot_id.clone(),
            gpus: table.clone(),
        };
        let mut json = serde_json::to_vec_pretty(&file).map_err(HealthStoreError::Encode)?;
        json.push(b'\n');
        gpuslice_cdi::atomic::write_atomic(&self.dir, FILE_NAME, &json, 0o644).map_err(|error| {
            HealthStoreError::Write {
                path: self.path(),
                error,
            }
        })
    }
}
