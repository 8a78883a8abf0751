//! Prepare: the idempotent path from a validated request to a usable claim.

use std::time::{SystemTime, UNIX_EPOCH};

use super::error::ClaimError;
use super::request::PrepareRequest;
use super::{Engine, Prepared, lock};
use crate::cdi_build::{cdi_device_id, spec_file_name};
use crate::inventory::{GpuDevice, Inventory};
use crate::state::{ClaimRecord, DeviceKind, Phase, RECORD_VERSION, RecordDevice};

impl Engine {
    /// Prepares the claim, or returns what an earlier prepare of the same
    /// claim did.
    pub fn prepare(&self, req: &PrepareRequest) -> Result<Prepared, ClaimError> {
        let inventory = self.inventory();
        req.validate(&inventory)?;
        self.claim_locks
            .run(&req.uid, || self.prepare_locked(req, &inventory))
    }

    fn prepare_locked(
        &self,
        req: &PrepareRequest,
        inventory: &Inventory,
    ) -> Result<Prepared, ClaimError> {
        let existing = lock(&self.table).get(&req.uid).cloned();
        if let Some(record) = existing {
            return self.prepare_again(req, record);
        }
        let gpus: Vec<&GpuDevice> = req
            .devices
            .iter()
            .filter_map(|d| inventory.gpu(&d.device))
            .collect();
        let reservation: Vec<(String, String)> = gpus
            .iter()
            .map(|g| (g.info.uuid.clone(), g.name.clone()))
            .collect();
        lock(&self.table).reserve(&req.uid, &reservation)?;
        let record = self.new_record(req, &gpus);
        match self.write_new_claim(&record) {
            Ok(()) => {
                lock(&self.table).insert(record.clone());
                tracing::info!(claim_uid = %record.uid, devices = ?device_names(&record), "claim prepared");
                Ok(Prepared::Created(record))
            }
            Err(err) => {
                let uuids = reservation.iter().map(|(uuid, _)| uuid.as_str());
                lock(&self.table).release(&req.uid, uuids);
                Err(err)
            }
        }
    }

    /// Spec first, record second: a crash in between leaves a spec without a
    /// record, which reconcile removes.
    fn write_new_claim(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        self.write_spec(record)?;
        if let Err(err) = self.store.save(record) {
            if let Err(undo) = self.remove_spec(record) {
                tracing::warn!(claim_uid = %record.uid, error = %undo, "could not remove CDI spec after failed record write; reconcile will");
            }
            return Err(err.into());
        }
        Ok(())
    }

    fn prepare_again(
        &self,
        req: &PrepareRequest,
        record: ClaimRecord,
    ) -> Result<Prepared, ClaimError> {
        let mut asked: Vec<&str> = req.devices.iter().map(|d| d.device.as_str()).collect();
        let mut held = device_names(&record);
        asked.sort_unstable();
        held.sort_unstable();
        let configs: Vec<&str> = req
            .configs
            .iter()
            .map(|c| c.parameters_json.as_str())
            .collect();
        if asked != held || configs != record.configs {
            return Err(ClaimError::PreparedDifferently {
                uid: record.uid.clone(),
                prepared: held.join(", "),
                asked: asked.join(", "),
            });
        }
        if self.ensure_spec(&record)? {
            tracing::warn!(claim_uid = %record.uid, "CDI spec of a prepared claim was missing or changed; rewrote it");
        }
        Ok(Prepared::AlreadyPrepared(record))
    }

    fn new_record(&self, req: &PrepareRequest, gpus: &[&GpuDevice]) -> ClaimRecord {
        let devices = req
            .devices
            .iter()
            .zip(gpus)
            .map(|(d, gpu)| RecordDevice {
                device: d.device.clone(),
                uuid: gpu.info.uuid.clone(),
                kind: DeviceKind::Exclusive,
                request_names: d.request_names.clone(),
                pool: d.pool.clone(),
                cdi_device_ids: vec![cdi_device_id(&req.uid, &d.device)],
            })
            .collect();
        ClaimRecord {
            version: RECORD_VERSION,
            uid: req.uid.clone(),
            namespace: req.namespace.clone(),
            name: req.name.clone(),
            phase: Phase::Prepared,
            boot_id: self.settings.boot_id.clone(),
            devices,
            configs: req
                .configs
                .iter()
                .map(|c| c.parameters_json.clone())
                .collect(),
            cdi_spec_file: spec_file_name(&req.uid),
            prepared_at: unix_now(),
        }
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
