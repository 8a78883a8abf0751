//! Reconcile: make claim records and the CDI dir agree, at start-up (before
//! the socket opens) and on SIGHUP.
//!
//! * A record in phase `preparing` is a prepare cut short: it is rolled back.
//! * A prepared claim's spec is rewritten when missing or stale (/var/run/cdi
//!   is a tmpfs, wiped at reboot; the driver may have been upgraded).
//! * A spec of ours without a record is removed, and so are temp files, in
//!   the CDI dir and in the state folder (the MIG ledger's, the health
//!   file's: a crash between a temp file's write and its rename leaves one).
//! * A record from an earlier boot is re-stamped: whole GPUs survive a reboot
//!   and the kubelet prepares its claims again with the same ids.
//! * Shared claims are put back in the sharing books (policy, memory), MPS
//!   daemons of claims that are gone are stopped (with their units, mounts
//!   and folders), and a `preparing` record's time-slice and compute mode are
//!   reset where no live claim uses the GPU. The daemons and time-slices of
//!   live claims are brought back by [`Engine::restore_sharing`], after the
//!   MIG set-up (a MIG slice's daemon needs the slice).

use std::collections::BTreeSet;

use gpuslice_cdi::atomic::{is_temp_name, remove_durable_observed};

use super::access::shared_gpu::has_sharing;
use super::access::{Access, Restored};
use super::error::ClaimError;
use super::table::Want;
use super::{Engine, lock, spec};
use crate::cdi_build::{CDI_CLASS, CDI_VENDOR, claim_uid_of_spec_file};
use crate::config::MigConfig;
use crate::driver::DriverFiles;
use crate::state::{ClaimRecord, Phase};

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
    /// MPS control daemons stopped because their claims are gone.
    pub daemons_stopped: usize,
    /// Records from an earlier boot.
    pub from_earlier_boot: usize,
    /// Problems left for an operator.
    pub problems: Vec<String>,
}

impl Engine {
    /// Replaces the driver files (after a rescan on SIGHUP).
    pub(crate) fn set_driver_files(&self, driver: DriverFiles) {
        self.env.set_driver_files(driver);
    }

    /// Start-up: loads every record into the table, then repairs the CDI dir.
    pub(crate) fn reconcile(&self) -> Result<ReconcileReport, ClaimError> {
        let mut report = ReconcileReport::default();
        let loaded = self.env.store.load_all()?;
        self.remove_state_temps();
        report.problems.extend(
            loaded
                .unreadable
                .into_iter()
                .map(|p| format!("unreadable claim record set aside: {p}")),
        );
        let (preparing, prepared): (Vec<ClaimRecord>, Vec<ClaimRecord>) = loaded
            .records
            .into_iter()
            .partition(|r| r.phase == Phase::Preparing);
        for record in prepared {
            self.adopt(record, &mut report)?;
        }
        let cx = self.cx();
        for kind in self.kinds.in_order() {
            let swept = kind.sweep(&cx);
            report.daemons_stopped += swept.stopped;
            report.problems.extend(swept.problems);
        }
        for record in preparing {
            self.roll_back(&record, &mut report)?;
        }
        self.repair_cdi_dir(&mut report)?;
        *lock(&self.problems) = report.problems.clone();
        Ok(report)
    }

    /// SIGHUP: rewrites stale specs of the claims held and removes strays.
    /// Waits for the prepares and unprepares in flight and holds new ones
    /// back meanwhile: a spec written before its claim is in the table, or
    /// removed before its claim leaves it, is neither stray nor missing.
    pub(crate) fn refresh(&self) -> Result<ReconcileReport, ClaimError> {
        let _quiet = self.quiet_node();
        let mut report = ReconcileReport::default();
        self.repair_cdi_dir(&mut report)?;
        *lock(&self.problems) = report.problems.clone();
        Ok(report)
    }

    /// Applies `[mig]` (MIG mode per the config, the claims' slices made to
    /// match their records, the layouts made ahead, the inventory
    /// rescanned); returns the problems found (also kept for status). Waits
    /// for the prepares and unprepares in flight and holds new ones back
    /// meanwhile: it reads the table and the hardware together.
    pub fn setup_mig(&self, mig: &MigConfig) -> Result<Vec<String>, ClaimError> {
        let _quiet = self.quiet_node();
        let cx = self.cx();
        let kind = &self.kinds.mig;
        kind.set_config(mig);
        let mut problems = kind.restore_whole_gpus(&cx);
        problems.extend(kind.enable_configured(&cx, mig));
        problems.extend(self.restore_slices());
        problems.extend(kind.place_layouts(&cx, mig)?);
        kind.keep_problems(&problems);
        Ok(problems)
    }

    /// The slices of prepared claims made to match their records; a record
    /// whose slice ids changed is saved and its spec rewritten. Returns the
    /// problems.
    fn restore_slices(&self) -> Vec<String> {
        let cx = self.cx();
        let mut problems = Vec::new();
        for mut record in self.claims() {
            let Restored {
                problems: found,
                record_changed,
            } = self.kinds.mig.restore(&cx, &mut record);
            problems.extend(found);
            if record_changed {
                tracing::info!(claim_uid = %record.uid, "MIG slices made to match the claim again");
                let saved = self.env.store.save(&record).map_err(ClaimError::from);
                lock(&self.table).insert(record.clone());
                let ensured = |()| spec::ensure(&cx, &self.kinds, &record).map(drop);
                if let Err(err) = saved.and_then(ensured) {
                    problems.push(format!("claim {}: {err}", record.uid));
                }
            }
        }
        problems
    }

    /// A prepare cut short: spec, sharing state, MIG hardware, record.
    fn roll_back(
        &self,
        record: &ClaimRecord,
        report: &mut ReconcileReport,
    ) -> Result<(), ClaimError> {
        spec::remove(&self.env, record)?;
        let cx = self.cx();
        let kinds = self.kinds.in_order();
        let (hardware, sharing) = kinds.split_at(2);
        // Sharing first (MPS, then time-slicing): problems, never a kept
        // record; then MIG, whose slice in use keeps the record.
        for kind in sharing.iter().rev() {
            report.problems.extend(kind.roll_back(&cx, record)?);
        }
        let undone =
            (hardware.iter().rev()).try_for_each(|kind| kind.roll_back(&cx, record).map(drop));
        if let Err(err) = undone {
            report.problems.push(format!(
                "claim {}: a prepare cut short left MIG state that cannot be undone yet \
                 ({err}); retried at the next start",
                record.uid
            ));
            return Ok(());
        }
        self.env.store.remove(&record.uid)?;
        report.rolled_back += 1;
        tracing::warn!(claim_uid = %record.uid, "rolled back a prepare that was cut short");
        Ok(())
    }

    fn adopt(
        &self,
        mut record: ClaimRecord,
        report: &mut ReconcileReport,
    ) -> Result<(), ClaimError> {
        if record.boot_id != self.env.settings.boot_id {
            record.boot_id.clone_from(&self.env.settings.boot_id);
            self.env.store.save(&record)?;
            report.from_earlier_boot += 1;
        }
        let wants: Vec<Want> = record.devices.iter().map(Want::of_record).collect();
        let mut table = lock(&self.table);
        if let Err(err) = table.reserve(&record.uid, &wants) {
            report.problems.push(format!(
                "claim {} overlaps another record: {err}",
                record.uid
            ));
        }
        drop(table);
        if let Err(err) = self.adopt_kinds(&record) {
            report.problems.push(format!(
                "claim {} cannot share its GPUs with the other records: {err}",
                record.uid
            ));
        }
        lock(&self.table).insert(record);
        report.claims += 1;
        Ok(())
    }

    /// Puts `record` back in each kind's books, or in none: the first kind
    /// that refuses undoes the kinds before it.
    fn adopt_kinds(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        let cx = self.cx();
        let kinds = self.kinds.in_order();
        for (i, kind) in kinds.iter().enumerate() {
            if let Err(err) = kind.adopt(&cx, record) {
                for earlier in kinds.iter().take(i).rev() {
                    earlier.unreserve(&cx, record);
                }
                return Err(err);
            }
        }
        Ok(())
    }

    /// Brings back the sharing of every prepared claim (time-slices, then
    /// MPS daemons: a running one is adopted, not restarted; after a reboot
    /// it is started again under the same key hash, so the same pipe dir and
    /// CDI ids). Call after the MIG set-up: a MIG slice's daemon needs the
    /// slice. Returns the problems (also kept for status); a claim whose
    /// daemon cannot start is a problem, not a failed start.
    pub(crate) fn restore_sharing(&self) -> Vec<String> {
        let cx = self.cx();
        let mut problems = Vec::new();
        for mut record in self.claims() {
            if record.phase != Phase::Prepared || !has_sharing(&record) {
                continue;
            }
            problems.extend(self.kinds.timeslicing.restore(&cx, &mut record).problems);
            problems.extend(self.kinds.mps.restore(&cx, &mut record).problems);
        }
        for problem in &problems {
            tracing::error!(%problem, "sharing");
        }
        lock(&self.kinds.shared.books)
            .problems
            .clone_from(&problems);
        problems
    }

    fn repair_cdi_dir(&self, report: &mut ReconcileReport) -> Result<(), ClaimError> {
        let dir = &self.env.settings.cdi_dir;
        std::fs::create_dir_all(dir).map_err(|e| self.dir_error(e))?;
        let records = self.claims();
        let cx = self.cx();
        for record in &records {
            match spec::ensure(&cx, &self.kinds, record) {
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
                remove_durable_observed(dir, &name, &spec::spec_steps).map_err(|error| {
                    ClaimError::CdiFile {
                        uid: name.to_string(),
                        error,
                    }
                })?;
                report.specs_removed += 1;
            }
        }
        Ok(())
    }

    /// Temp files of durable writes a crash cut short in the state folder
    /// (the records folder has its own, in `Store::load_all`).
    fn remove_state_temps(&self) {
        let dir = self.state_dir();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name();
            if is_temp_name(&name.to_string_lossy())
                && let Err(err) = std::fs::remove_file(entry.path())
            {
                tracing::warn!(path = %entry.path().display(), error = %err, "could not remove a temp file left by a crash");
            }
        }
    }

    fn dir_error(&self, error: std::io::Error) -> ClaimError {
        ClaimError::CdiFile {
            uid: "(all claims)".to_owned(),
            error: gpuslice_cdi::atomic::AtomicError::Io {
                step: "read CDI dir",
                path: self.env.settings.cdi_dir.clone(),
                error,
            },
        }
    }
}

/// The engine's start-up, in the one order production and the test kit
/// share: reconcile the records and CDI specs, apply the MIG config, then
/// bring back the sharing (MPS daemons, time-slices) of prepared claims.
impl Engine {
    /// Reconciles, runs `apply_mig` (the MIG set-up: gpusliced goes through
    /// its advertiser, a test calls [`Engine::setup_mig`]), then restores
    /// sharing. Call once, before the first prepare, after
    /// [`Engine::with_sharing`] and the device health restore. A MIG
    /// set-up that fails stops the start-up; its problems and the sharing
    /// restore's are kept for status.
    pub fn start_up(
        &self,
        apply_mig: impl FnOnce(&Engine) -> Result<Vec<String>, ClaimError>,
    ) -> Result<ReconcileReport, ClaimError> {
        let report = self.reconcile()?;
        apply_mig(self)?;
        self.restore_sharing();
        Ok(report)
    }
}

impl super::mig_offering::ApplyMig for Engine {
    fn apply_mig(&self, mig: &MigConfig) -> Result<Vec<String>, ClaimError> {
        self.setup_mig(mig)
    }
}
