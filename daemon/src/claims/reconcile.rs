//! Reconcile: make claim records and the CDI dir agree, at start-up (before
//! the socket opens) and on SIGHUP.
//!
//! * A record in phase `preparing` is a prepare cut short: it is rolled back.
//! * A prepared claim's spec is rewritten when missing or stale (/var/run/cdi
//!   is a tmpfs, wiped at reboot; the driver may have been upgraded).
//! * A spec of ours without a record is removed, and so are temp files.
//! * A record from an earlier boot is re-stamped: whole GPUs survive a reboot
//!   and the kubelet prepares its claims again with the same ids.

use std::collections::BTreeSet;

use gpuslice_cdi::atomic::{is_temp_name, remove_durable};

use super::error::ClaimError;
use super::table::{Share, Want};
use super::{Engine, lock};
use crate::cdi_build::{CDI_CLASS, CDI_VENDOR, claim_uid_of_spec_file};
use crate::state::{ClaimRecord, Phase, RecordDevice};

/// What a reconcile found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Prepared claims now held.
    pub claims: usize,
    /// Specs written because they were missing or stale.
    pub specs_written: usize,
    /// Specs (and temp files) removed because no record owns them.
    pub specs_removed: usize,
    /// Half-done prepares rolled back.
    pub rolled_back: usize,
    /// Records from an earlier boot.
    pub from_earlier_boot: usize,
    /// Problems left for an operator.
    pub problems: Vec<String>,
}

impl Engine {
    /// Start-up: loads every record into the table, then repairs the CDI dir.
    pub fn reconcile(&self) -> Result<ReconcileReport, ClaimError> {
        let mut report = ReconcileReport::default();
        let loaded = self.store.load_all()?;
        report.problems.extend(
            loaded
                .unreadable
                .into_iter()
                .map(|p| format!("unreadable claim record set aside: {p}")),
        );
        for record in loaded.records {
            self.adopt(record, &mut report)?;
        }
        self.repair_cdi_dir(&mut report)?;
        *lock(&self.problems) = report.problems.clone();
        Ok(report)
    }

    /// SIGHUP: rewrites stale specs of the claims held and removes strays.
    pub fn refresh(&self) -> Result<ReconcileReport, ClaimError> {
        let mut report = ReconcileReport::default();
        self.repair_cdi_dir(&mut report)?;
        *lock(&self.problems) = report.problems.clone();
        Ok(report)
    }

    fn adopt(
        &self,
        mut record: ClaimRecord,
        report: &mut ReconcileReport,
    ) -> Result<(), ClaimError> {
        if record.phase == Phase::Preparing {
            self.remove_spec(&record)?;
            if let Err(err) = self.release_hardware(&record) {
                report.problems.push(format!(
                    "claim {}: a prepare cut short left MIG state that cannot be undone yet \
                     ({err}); retried at the next start",
                    record.uid
                ));
                return Ok(());
            }
            self.store.remove(&record.uid)?;
            report.rolled_back += 1;
            tracing::warn!(claim_uid = %record.uid, "rolled back a prepare that was cut short");
            return Ok(());
        }
        if record.boot_id != self.settings.boot_id {
            record.boot_id.clone_from(&self.settings.boot_id);
            self.store.save(&record)?;
            report.from_earlier_boot += 1;
        }
        let wants: Vec<Want> = record.devices.iter().map(record_want).collect();
        let mut table = lock(&self.table);
        if let Err(err) = table.reserve(&record.uid, &wants) {
            report.problems.push(format!(
                "claim {} overlaps another record: {err}",
                record.uid
            ));
        }
        table.insert(record);
        report.claims += 1;
        Ok(())
    }

    fn repair_cdi_dir(&self, report: &mut ReconcileReport) -> Result<(), ClaimError> {
        let dir = &self.settings.cdi_dir;
        std::fs::create_dir_all(dir).map_err(|e| self.dir_error(e))?;
        let records = self.claims();
        for record in &records {
            match self.ensure_spec(record) {
                Ok(true) => report.specs_written += 1,
                Ok(false) => {}
                Err(err) => report.problems.push(format!("claim {}: {err}", record.uid)),
            }
        }
        let held: BTreeSet<&str> = records.iter().map(|r| r.uid.as_str()).collect();
        let prefix = format!(".{CDI_VENDOR}-{CDI_CLASS}_");
        for entry in std::fs::read_dir(dir).map_err(|e| self.dir_error(e))? {
            let name = entry.map_err(|e| self.dir_error(e))?.file_name();
            let name = name.to_string_lossy();
            let stray = match claim_uid_of_spec_file(&name) {
                Some(uid) => !held.contains(uid),
                None => is_temp_name(&name) && name.starts_with(&prefix),
            };
            if stray {
                remove_durable(dir, &name).map_err(|source| ClaimError::CdiFile {
                    uid: name.to_string(),
                    source,
                })?;
                report.specs_removed += 1;
            }
        }
        Ok(())
    }

    fn dir_error(&self, source: std::io::Error) -> ClaimError {
        ClaimError::CdiFile {
            uid: "(all claims)".to_owned(),
            source: gpuslice_cdi::atomic::AtomicError::Io {
                step: "read CDI dir",
                path: self.settings.cdi_dir.clone(),
                source,
            },
        }
    }
}

/// What of its GPU a recorded device holds.
fn record_want(d: &RecordDevice) -> Want {
    Want {
        gpu_uuid: d.uuid.clone(),
        device: d.device.clone(),
        share: d.mig.as_ref().map_or(Share::Whole, |m| {
            Share::Slice(super::mig::slice_placement(m))
        }),
    }
}
