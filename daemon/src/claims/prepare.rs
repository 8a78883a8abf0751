//! Prepare: the idempotent path from a validated request to a usable claim,
//! as one loop over the kinds of access the claim needs.
//!
//! Whole GPUs alone need no step: one spec write and one record write. A
//! claim with a step (a MIG slice, a MIG mode switch, an MPS daemon, a
//! time-slice, a compute mode) first writes its record in phase
//! `preparing`, so a crash at any later point leaves a record that start-up
//! reconcile rolls back, never an orphaned instance or daemon.
//!
//! Order: the table reservation, the shared GPUs' locks, each kind's reserve
//! (MIG placements, then time-slicing, then MPS: policy and memory), the
//! `preparing` record, each kind's apply in the same order (a MIG slice's MPS
//! daemon needs the slice's UUID), the CDI spec, the `prepared` record. Each
//! step pushes its undo ([`super::undo`]); a failure unwinds them in reverse.
//! Claims that share a GPU hold its lock from reserve to record.

use std::time::{SystemTime, UNIX_EPOCH};

use super::access::{Access, Change, Cx};
use super::again::difference;
use super::error::ClaimError;
use super::request::PrepareRequest;
use super::table::Want;
use super::undo::{Step, Undo};
use super::{Engine, Prepared, lock, spec};
use crate::cdi_build::{cdi_device_id, spec_file_name};
use crate::inventory::{DeviceRef, Inventory};
use crate::opaque::ClaimLimits;
use crate::state::{ClaimRecord, DeviceSharing, MigSlice, Phase, RecordDevice};

impl Engine {
    /// Prepares the claim, or returns what an earlier prepare of the same
    /// claim did.
    pub fn prepare(&self, req: &PrepareRequest) -> Result<Prepared, ClaimError> {
        let _operation = self.claim_operation();
        let inventory = self.inventory();
        let sharing = req
            .validate(&inventory)
            .map_err(|err| self.gone_rather_than_unknown(req, &inventory, err))?;
        let limits = req.limits(&self.env.settings.limits)?;
        let _claim = self.claim_locks.lock(&req.uid);
        self.prepare_locked(req, &inventory, sharing, limits)
    }

    fn prepare_locked(
        &self,
        req: &PrepareRequest,
        inventory: &Inventory,
        sharing: Vec<Option<DeviceSharing>>,
        limits: Option<ClaimLimits>,
    ) -> Result<Prepared, ClaimError> {
        let existing = lock(&self.table).get(&req.uid).cloned();
        if let Some(record) = existing {
            return self.prepare_again(req, record, &sharing);
        }
        let devices: Vec<DeviceRef<'_>> = req
            .devices
            .iter()
            .filter_map(|d| inventory.device(&d.device))
            .collect();
        self.refuse_unhealthy(&devices)?;
        let mut record = self.new_record(req, &devices, sharing, limits);
        let cx = self.cx();
        for kind in self.kinds.in_order() {
            kind.admit(&cx, &record, &devices)?;
        }
        let wants: Vec<Want> = devices
            .iter()
            .zip(&record.devices)
            .map(|(device, d)| Want::of_device(device, d.sharing.as_ref()))
            .collect();
        lock(&self.table).reserve(&req.uid, &wants)?;
        let mut undo = Undo::default();
        undo.push(Step::Table);
        undo.push(Step::GpuLocks(self.kinds.shared.lock_gpus(&record)));
        if let Err(err) = self.bring_up(&cx, &mut undo, &mut record, &devices) {
            undo.unwind(|step| self.undo_step(&cx, step, &record, &wants));
            return Err(err);
        }
        undo.disarm();
        lock(&self.table).insert(record.clone());
        for kind in self.kinds.in_order() {
            kind.after_change(&cx, &record, Change::Prepared);
        }
        self.env.bump();
        tracing::info!(claim_uid = %record.uid, devices = ?device_names(&record), "claim prepared");
        Ok(Prepared::Created(record))
    }

    /// `req` for the claim `record` holds: the claim again, or a refusal.
    /// `sharing` is the request's sharing, per device in request order.
    pub(super) fn prepare_again(
        &self,
        req: &PrepareRequest,
        record: ClaimRecord,
        sharing: &[Option<DeviceSharing>],
    ) -> Result<Prepared, ClaimError> {
        if let Some(differs) = difference(&record, req, sharing) {
            return Err(ClaimError::PreparedDifferently {
                uid: record.uid.clone(),
                prepared: differs.prepared,
                asked: differs.asked,
            });
        }
        let cx = self.cx();
        {
            let _gpus = self.kinds.shared.lock_gpus(&record);
            for kind in self.kinds.in_order() {
                kind.ensure(&cx, &record)?;
            }
        }
        if spec::ensure(&cx, &self.kinds, &record)? {
            tracing::warn!(claim_uid = %record.uid, "CDI spec of a prepared claim was missing or changed; rewrote it");
        }
        Ok(Prepared::AlreadyPrepared(record))
    }

    /// Each kind's reserve, then (when any kind takes part) the `preparing`
    /// record and each kind's apply; then the spec and the `prepared`
    /// record. Every step taken is pushed on `undo`.
    fn bring_up<'a>(
        &'a self,
        cx: &Cx<'_>,
        undo: &mut Undo<'a>,
        record: &mut ClaimRecord,
        devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        let kinds: Vec<&'a dyn Access> = (self.kinds.in_order().into_iter())
            .filter(|kind| kind.takes_part(record, devices))
            .collect();
        for kind in &kinds {
            kind.reserve(cx, record, devices)?;
            undo.push(Step::Unreserve(*kind));
        }
        if !kinds.is_empty() {
            record.phase = Phase::Preparing;
            self.env.store.save(record)?;
            undo.push(Step::Record);
            for kind in &kinds {
                kind.apply(cx, record, devices)?;
                undo.applied(*kind);
            }
            record.phase = Phase::Prepared;
        }
        // Spec first, record second: a crash in between leaves a spec without
        // a record (or with a `preparing` one), which reconcile removes.
        spec::write(cx, &self.kinds, record)?;
        undo.push(Step::Spec);
        self.env.store.save(record)?;
        Ok(())
    }

    /// Undoes one step of a prepare that failed.
    fn undo_step(&self, cx: &Cx<'_>, step: Step<'_>, record: &ClaimRecord, wants: &[Want]) {
        match step {
            Step::Spec => {
                if let Err(undo) = spec::remove(&self.env, record) {
                    tracing::warn!(claim_uid = %record.uid, error = %undo, "could not remove CDI spec after failed record write; reconcile will");
                }
            }
            Step::Release(kind) => {
                if let Err(err) = kind.release(cx, record) {
                    tracing::error!(claim_uid = %record.uid, error = %err, "could not undo a hardware step; start-up reconcile retries");
                }
            }
            Step::Record => {
                if let Err(err) = self.env.store.remove(&record.uid) {
                    tracing::warn!(claim_uid = %record.uid, error = %err, "could not remove the record of a failed prepare; start-up reconcile rolls it back");
                }
            }
            Step::Unreserve(kind) => kind.unreserve(cx, record),
            Step::GpuLocks(guards) => drop(guards),
            Step::Table => {
                let uuids = wants.iter().map(|w| w.gpu_uuid.as_str());
                lock(&self.table).release(&record.uid, uuids);
                // The reservation was visible (held, not available) meanwhile.
                self.env.bump();
            }
        }
    }

    fn new_record(
        &self,
        req: &PrepareRequest,
        devices: &[DeviceRef<'_>],
        sharing: Vec<Option<DeviceSharing>>,
        limits: Option<ClaimLimits>,
    ) -> ClaimRecord {
        let devices = req
            .devices
            .iter()
            .zip(devices)
            .zip(sharing)
            .map(|((d, device), sharing)| RecordDevice {
                device: d.device.clone(),
                uuid: device.gpu().info.uuid.clone(),
                mig: match device {
                    DeviceRef::Gpu(_) => None,
                    DeviceRef::Mig(m, _) => Some(MigSlice {
                        profile: m.profile.name.clone(),
                        profile_id: m.profile.id,
                        start: m.placement.start,
                        size: m.placement.size,
                        gpu_instance: None,
                        compute_instance: None,
                        mig_uuid: None,
                        created: false,
                    }),
                },
                request_names: d.request_names.clone(),
                pool: d.pool.clone(),
                cdi_device_ids: vec![cdi_device_id(&req.uid, &d.device)],
                sharing,
                consumed_memory: d.consumed_memory,
                share_id: d.share_id.clone(),
                // What a kind's reserve fills in (a MIG mode to restore).
                ..RecordDevice::default()
            })
            .collect();
        let mut record = ClaimRecord {
            version: 0,
            uid: req.uid.clone(),
            namespace: req.namespace.clone(),
            name: req.name.clone(),
            phase: Phase::Prepared,
            boot_id: self.env.settings.boot_id.clone(),
            devices,
            configs: req
                .configs
                .iter()
                .map(|c| c.parameters_json.clone())
                .collect(),
            cdi_spec_file: spec_file_name(&req.uid),
            prepared_at: unix_now(),
            limits,
        };
        record.version = record.format_version();
        record
    }
}

fn device_names(record: &ClaimRecord) -> Vec<&str> {
    record.devices.iter().map(|d| d.device.as_str()).collect()
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
