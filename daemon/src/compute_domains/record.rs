//! The record of one channel claim, one file per claim in
//! `<state_dir>/compute-domains/<uid>.json`, written durably through the
//! observed atomic writer (a crash point after each step:
//! `channel_record.after_*`) before the claim's effects and after them. A
//! record found `preparing` at start-up is rolled back; a `prepared` one is
//! served again. Kept in the claim engine's kind of record folder
//! ([`crate::state::RecordFolder`]): a newer version is refused, not guessed
//! at; an unreadable one is set aside, bounded in size, and never followed
//! through a link.

use std::path::Path;

use gpuslice_cdi::atomic::AtomicStep;
use serde::{Deserialize, Serialize};

use super::request::ChannelAsk;
use crate::crash::crash_point;
use crate::state::{Durable, Phase, RecordFolder, StateError};

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

/// The channel records' folder, `<state_dir>/compute-domains`: the claim
/// engine's kind of folder ([`crate::state::RecordFolder`]), with the
/// channel records' own version and crash points.
pub type RecordStore = RecordFolder<ChannelRecord>;

/// Opens (creating, mode 0700) `<state_dir>/compute-domains`.
pub fn open_records(state_dir: &Path) -> Result<RecordStore, StateError> {
    RecordFolder::open_folder(&state_dir.join("compute-domains"))
}

impl Durable for ChannelRecord {
    const WHAT: &'static str = "channel claim record";
    const VERSION: u32 = CHANNEL_RECORD_VERSION;

    fn passed(step: AtomicStep) {
        match step {
            AtomicStep::TempSynced => crash_point("channel_record.after_temp_synced"),
            AtomicStep::Renamed => crash_point("channel_record.after_rename"),
            AtomicStep::Unlinked => crash_point("channel_record.after_unlink"),
        }
    }

    fn uid(&self) -> &str {
        &self.uid
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute_domains::request::ChannelDevice;

    const UID: &str = "0b4c9f3e-1111-4a2b-8c3d-0123456789ab";

    fn record() -> ChannelRecord {
        ChannelRecord::preparing(&ChannelAsk {
            uid: UID.to_owned(),
            namespace: "team-a".to_owned(),
            name: "workload".to_owned(),
            device: ChannelDevice {
                device: "channel-3".to_owned(),
                request_names: vec!["channel".to_owned()],
                pool: "node-a".to_owned(),
            },
            channel: 3,
            domain: "5d1e2f3a-2222-4b2b-9c3d-0123456789ab".to_owned(),
            domain_name: "domain".to_owned(),
            all_channels: false,
        })
    }

    /// The channel records live in the claim engine's kind of folder: a
    /// round trip, a newer version refused naming both versions, and a
    /// file that is no record set aside without losing the others. (The
    /// stray files are written plainly: they stand for what a crash or an
    /// older build left.)
    #[test]
    #[allow(clippy::disallowed_methods)]
    fn channel_records_keep_the_claim_folders_rules() {
        let state = tempfile::tempdir().expect("a temp dir");
        let records = open_records(state.path()).expect("the folder");
        let mut saved = record();
        records.save(&saved).expect("saved");
        saved.phase = Phase::Prepared;
        records.save(&saved).expect("saved again");
        let loaded = records.load_all().expect("loaded");
        assert_eq!(loaded.records, vec![saved.clone()]);
        assert!(loaded.unreadable.is_empty());

        let folder = state.path().join("compute-domains");
        std::fs::write(folder.join("not-a-claim.json"), b"{").expect("written");
        let loaded = records.load_all().expect("loaded");
        assert_eq!(loaded.records, vec![saved]);
        assert_eq!(loaded.unreadable.len(), 1, "{:?}", loaded.unreadable);
        assert!(folder.join(".not-a-claim.json.corrupt").is_file());

        let newer = format!(r#"{{"version":{}}}"#, CHANNEL_RECORD_VERSION + 1);
        std::fs::write(folder.join("newer.json"), newer).expect("written");
        let err = records.load_all().expect_err("a newer record is refused");
        assert!(
            err.to_string().starts_with("channel claim record ")
                && err.to_string().contains("newer than this build's 1"),
            "{err}"
        );
        assert!(records.remove(UID).expect("removed"));
    }
}
