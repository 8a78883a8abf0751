//! The record of one channel claim, one file per claim in
//! `<state_dir>/compute-domains/<uid>.json`, written durably through the
//! observed atomic writer (a crash point after each step:
//! `channel_record.after_*`) before the claim's effects and after them. A
//! record found `preparing` at start-up is rolled back; a `prepared` one is
//! served again. Versioned like the GPU claims' records: a newer version is
//! refused, not guessed at; an unreadable one is set aside, bounded in
//! size, and never followed through a link.

use std::path::{Path, PathBuf};

use gpuslice_cdi::atomic::{
    AtomicStep, is_temp_name, read_regular, remove_durable_observed, write_atomic_observed,
};
use serde::{Deserialize, Serialize};

use super::DomainError;
use super::request::ChannelAsk;
use crate::crash::crash_point;
use crate::state::Phase;

/// The largest record read (one is under 1 KB).
const MAX_RECORD_BYTES: u64 = 64 * 1024;

/// The crash points of a record's durable steps.
fn record_steps(step: AtomicStep) {
    match step {
        AtomicStep::TempSynced => crash_point("channel_record.after_temp_synced"),
        AtomicStep::Renamed => crash_point("channel_record.after_rename"),
        AtomicStep::Unlinked => crash_point("channel_record.after_unlink"),
    }
}

/// The format version this build writes and reads.
pub const CHANNEL_RECORD_VERSION: u32 = 1;

/// One channel claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelRecord {
    /// The format version.
    pub version: u32,
    /// Claim uid.
    pub uid: String,
    /// Claim namespace.
    pub namespace: String,
    /// Claim name.
    pub name: String,
    /// Preparing or prepared.
    pub phase: Phase,
    /// The ComputeDomain's uid.
    pub domain: String,
    /// The ComputeDomain's name (its namespace is the claim's).
    #[serde(default)]
    pub domain_name: String,
    /// The device, `channel-<id>`.
    pub device: String,
    /// The claim's requests it satisfies.
    pub request_names: Vec<String>,
    /// Its pool.
    pub pool: String,
    /// Its channel id.
    pub channel: u32,
    /// Every channel of the domain (`allocationMode: All`).
    pub all_channels: bool,
}

impl ChannelRecord {
    /// The record of `ask`, preparing.
    pub fn preparing(ask: &ChannelAsk) -> Self {
        Self {
            version: CHANNEL_RECORD_VERSION,
            uid: ask.uid.clone(),
            namespace: ask.namespace.clone(),
            name: ask.name.clone(),
            phase: Phase::Preparing,
            domain: ask.domain.clone(),
            domain_name: ask.domain_name.clone(),
            device: ask.device.device.clone(),
            request_names: ask.device.request_names.clone(),
            pool: ask.device.pool.clone(),
            channel: ask.channel,
            all_channels: ask.all_channels,
        }
    }

    /// Whether `ask` is this claim prepared again (the same device, domain,
    /// mode and requests).
    pub fn same_as(&self, ask: &ChannelAsk) -> bool {
        let mut asked = Self::preparing(ask);
        asked.phase = self.phase;
        &asked == self
    }

    /// `namespace/name`.
    pub fn claim_name(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The channels the claim's container gets.
    pub fn channels(&self) -> Vec<u32> {
        if self.all_channels {
            (0..gpuslice_imex::channels::CHANNEL_COUNT).collect()
        } else {
            vec![self.channel]
        }
    }
}

/// The records folder.
#[derive(Debug, Clone)]
pub struct RecordStore {
    dir: PathBuf,
}

impl RecordStore {
    /// Opens (creating, mode 0700) `<state_dir>/compute-domains`.
    pub fn open(state_dir: &Path) -> Result<Self, DomainError> {
        let dir = state_dir.join("compute-domains");
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(&dir)
            .map_err(|e| DomainError::io("create", &dir, e))?;
        Ok(Self { dir })
    }

    fn file_name(uid: &str) -> String {
        format!("{uid}.json")
    }

    /// Writes `record` durably.
    pub fn save(&self, record: &ChannelRecord) -> Result<(), DomainError> {
        let name = Self::file_name(&record.uid);
        let bytes = serde_json::to_vec_pretty(record).map_err(|e| DomainError::Record {
            path: self.dir.join(&name),
            problem: e.to_string(),
        })?;
        write_atomic_observed(&self.dir, &name, &bytes, 0o600, &record_steps).map_err(|e| {
            DomainError::Record {
                path: self.dir.join(&name),
                problem: e.to_string(),
            }
        })
    }

    /// Removes the record of `uid` durably.
    pub fn remove(&self, uid: &str) -> Result<(), DomainError> {
        let name = Self::file_name(uid);
        remove_durable_observed(&self.dir, &name, &record_steps)
            .map(|_| ())
            .map_err(|e| DomainError::Record {
                path: self.dir.join(&name),
                problem: e.to_string(),
            })
    }

    /// Every record, and what could not be read (set aside as
    /// `<file>.bad`, for an operator).
    pub fn load_all(&self) -> Result<(Vec<ChannelRecord>, Vec<String>), DomainError> {
        let mut records = Vec::new();
        let mut problems = Vec::new();
        let entries =
            std::fs::read_dir(&self.dir).map_err(|e| DomainError::io("read", &self.dir, e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_temp_name(&name) {
                // A write a crash cut short: the record it would have
                // replaced (if any) is whole beside it.
                let _ = std::fs::remove_file(entry.path());
                continue;
            }
            if name.starts_with('.') || !name.ends_with(".json") {
                continue;
            }
            let path = entry.path();
            match read_record(&self.dir, &name) {
                Ok(record) => records.push(record),
                Err(problem) => {
                    let aside = path.with_extension("json.bad");
                    let _ = std::fs::rename(&path, &aside);
                    problems.push(format!(
                        "{}: {problem}; set aside as {}",
                        path.display(),
                        aside.display()
                    ));
                }
            }
        }
        records.sort_by(|a, b| a.uid.cmp(&b.uid));
        Ok((records, problems))
    }
}

fn read_record(dir: &Path, name: &str) -> Result<ChannelRecord, String> {
    let text = read_regular(dir, name, MAX_RECORD_BYTES)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| "gone while read".to_owned())?;
    let value: serde_json::Value = serde_json::from_slice(&text).map_err(|e| e.to_string())?;
    let version = value.get("version").and_then(serde_json::Value::as_u64);
    if version != Some(u64::from(CHANNEL_RECORD_VERSION)) {
        return Err(format!(
            "version {version:?}; this gpusliced reads version {CHANNEL_RECORD_VERSION}"
        ));
    }
    let record: ChannelRecord = serde_json::from_value(value).map_err(|e| e.to_string())?;
    if Some(record.uid.as_str()) != name.strip_suffix(".json") {
        return Err(format!("its uid {} is not its file name", record.uid));
    }
    Ok(record)
}
