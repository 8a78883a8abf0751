//! `<state_dir>/usage-history.json`: the usage history across restarts.
//!
//! Advisory, like `activity.json`: written through a temp file and a rename
//! (a reader never sees half a file), never fsynced; a crash loses the
//! samples since the last write. A file that is missing starts an empty
//! history quietly; one that cannot be read, does not parse, is cut short,
//! has an unknown version or a record that does not fit its scale starts an
//! empty history too, and [`load`] hands the caller one [`LoadWarning`] to
//! log. The file is replaced at the next save. A half life changed in the
//! config applies to new samples; the weights kept keep their standing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::histogram::{Checkpoint, CheckpointError, Histogram, MEMORY, SM_PERCENT};
use super::{ClaimHistory, DeviceHistory, History, HistorySettings};
use crate::state::SaveError;

/// The file's name in the state dir.
pub const FILE_NAME: &str = "usage-history.json";

/// The format version.
pub const VERSION: u32 = 1;

/// Most bytes one device's record takes in the file, whatever was observed:
/// every bucket of both histograms filled (214 × `[213,10000],` and 21 ×
/// `[20,10000],`) plus its fields at their widest, name aside.
pub const MAX_DEVICE_RECORD_BYTES: usize = 3_200;

#[derive(Debug, Serialize, Deserialize)]
struct FileV1 {
    version: u32,
    half_life_s: u64,
    claims: BTreeMap<String, ClaimEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ClaimEntry {
    ns: String,
    name: String,
    devices: BTreeMap<String, DeviceEntry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct DeviceEntry {
    first: i64,
    last: i64,
    obs: u64,
    n: u64,
    act: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mmax: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    smax: Option<u32>,
    /// The open peak window: start, peak.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    win: Option<(i64, u64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mh: Option<Checkpoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sh: Option<Checkpoint>,
}

#[derive(Debug, Deserialize)]
struct VersionOnly {
    version: u32,
}

/// Why the file was not used; the history starts empty.
#[derive(Debug, thiserror::Error)]
pub enum LoadWarning {
    /// The file could not be read.
    #[error(
        "usage history {path} not read ({error}); starting empty, it is replaced at the next save"
    )]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The file ends in the middle of its JSON.
    #[error(
        "usage history {path} is cut short ({message}); starting empty, it is replaced at the next save"
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// serde_json's message.
        message: String,
    },
    /// Not the history's JSON.
    #[error(
        "usage history {path} does not parse ({message}); starting empty, it is replaced at the next save"
    )]
    Garbage {
        /// The file.
        path: PathBuf,
        /// serde_json's message.
        message: String,
    },
    /// A version this gpusliced does not know.
    #[error(
        "usage history {path} has format version {version}, this gpusliced reads {VERSION}; starting empty, it is replaced at the next save"
    )]
    UnknownVersion {
        /// The file.
        path: PathBuf,
        /// The version found.
        version: u32,
    },
    /// A histogram that does not fit its scale.
    #[error(
        "usage history {path}: claim {uid} device {device}: {problem}; starting empty, it is replaced at the next save"
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The claim.
        uid: String,
        /// The device.
        device: String,
        /// What is wrong.
        problem: CheckpointError,
    },
}

/// Reads the history in `state_dir`; empty (with a warning unless the file
/// is missing) when it cannot be used.
pub fn load(state_dir: &Path, settings: HistorySettings) -> (History, Option<LoadWarning>) {
    let path = state_dir.join(FILE_NAME);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return (History::new(settings), None);
        }
        Err(error) => {
            return (
                History::new(settings),
                Some(LoadWarning::Unreadable { path, error }),
            );
        }
    };
    match parse(&bytes, &path, settings) {
        Ok(history) => (history, None),
        Err(warning) => (History::new(settings), Some(warning)),
    }
}

/// Parses the file's bytes (read from `path`).
pub fn parse(bytes: &[u8], path: &Path, settings: HistorySettings) -> Result<History, LoadWarning> {
    let path = path.to_path_buf();
    let parse_error = |err: serde_json::Error| {
        let message = err.to_string();
        let path = path.clone();
        if err.is_eof() {
            LoadWarning::Truncated { path, message }
        } else {
            LoadWarning::Garbage { path, message }
        }
    };
    let version = serde_json::from_slice::<VersionOnly>(bytes).map_err(parse_error)?;
    if version.version != VERSION {
        return Err(LoadWarning::UnknownVersion {
            path,
            version: version.version,
        });
    }
    let file: FileV1 = serde_json::from_slice(bytes).map_err(parse_error)?;
    let mut claims = BTreeMap::new();
    for (uid, entry) in file.claims {
        let mut devices = BTreeMap::new();
        for (device, d) in entry.devices {
            match device_from(&d, settings.half_life_s) {
                Ok(record) => {
                    devices.insert(device, record);
                }
                Err(problem) => {
                    return Err(LoadWarning::Invalid {
                        path,
                        uid,
                        device,
                        problem,
                    });
                }
            }
        }
        claims.insert(
            uid,
            ClaimHistory {
                namespace: entry.ns,
                name: entry.name,
                devices,
            },
        );
    }
    Ok(History::with_claims(settings, claims))
}

fn device_from(d: &DeviceEntry, half_life_s: u64) -> Result<DeviceHistory, CheckpointError> {
    let histogram = |scale, checkpoint: &Option<Checkpoint>| match checkpoint {
        Some(c) => Histogram::from_checkpoint(scale, half_life_s, c),
        None => Ok(Histogram::new(scale, half_life_s)),
    };
    Ok(DeviceHistory {
        first: d.first,
        last: d.last,
        observed_s: d.obs,
        samples: d.n,
        active_samples: d.act,
        memory_peak: d.mmax,
        sm_peak: d.smax,
        window: d.win,
        memory: histogram(MEMORY, &d.mh)?,
        sm: histogram(SM_PERCENT, &d.sh)?,
    })
}

/// The file's bytes for `history`.
pub fn to_bytes(history: &History) -> Vec<u8> {
    let claims = history
        .claims()
        .iter()
        .map(|(uid, c)| {
            let devices = c
                .devices
                .iter()
                .map(|(name, d)| (name.clone(), device_entry(d)))
                .collect();
            let entry = ClaimEntry {
                ns: c.namespace.clone(),
                name: c.name.clone(),
                devices,
            };
            (uid.clone(), entry)
        })
        .collect();
    let file = FileV1 {
        version: VERSION,
        half_life_s: history.settings().half_life_s,
        claims,
    };
    let mut bytes = serde_json::to_vec(&file).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

fn device_entry(d: &DeviceHistory) -> DeviceEntry {
    DeviceEntry {
        first: d.first,
        last: d.last,
        obs: d.observed_s,
        n: d.samples,
        act: d.active_samples,
        mmax: d.memory_peak,
        smax: d.sm_peak,
        win: d.window,
        mh: d.memory.checkpoint(),
        sh: d.sm.checkpoint(),
    }
}

/// Writes `history` into `state_dir` (temp file, rename); returns the bytes
/// written.
pub fn save(state_dir: &Path, history: &History) -> Result<usize, SaveError> {
    let bytes = to_bytes(history);
    // Advisory (module doc): no fsync, so not the durable writer.
    crate::state::write_advisory(state_dir, FILE_NAME, &bytes)?;
    Ok(bytes.len())
}

#[cfg(test)]
mod tests;
