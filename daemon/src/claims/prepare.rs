//! Prepare: the idempotent path from a validated request to a usable claim.
//!
//! Whole GPUs alone need no hardware step: one spec write and one record
//! write. A claim with a hardware step (a MIG slice, a MIG mode switch, an MPS
//! daemon, a time-slice, a compute mode) first writes its record in phase
//! `preparing`, so a crash at any later point leaves a record that start-up
//! reconcile rolls back, never an orphaned instance or daemon.
//!
//! Order: reserve (MIG placements, then sharing: policy and memory), the
//! `preparing` record, MIG steps, sharing steps (a MIG slice's MPS daemon
//! needs the slice's UUID), the CDI spec, the `prepared` record. Claims that
//! share a GPU hold its lock from reserve to record.

use std::time::{SystemTime, UNIX_EPOCH};

use super::error::ClaimError;
use super::request::PrepareRequest;
use super::sharing::has_sharing;
use super::table::{Share, SharedMode, Want};
use super::{Engine, Prepared, lock};
use crate::cdi_build::{cdi_device_id, spec_file_name};
use crate::inventory::{DeviceRef, Inventory};
use crate::state::{ClaimRecord, DeviceKind, DeviceSharing, MigSlice, Phase, RecordDevice};

impl Engine {
    /// Prepares the claim, or returns what an earlier prepare of the same
    /// claim did.
    pub fn prepare(&self, req: &PrepareRequest) -> Result<Prepared, ClaimError> {
        let _operation = self.claim_operation();
        let inventory = self.inventory();
        let sharing = req
            .validate(&inventory)
            .map_err(|err| self.gone_rather_than_unknown(req, &inventory, err))?;
        let _claim = self.claim_locks.lock(&req.uid);
        self.prepare_locked(req, &inventory, sharing)
    }

    fn prepare_locked(
        &self,
        req: &PrepareRequest,
        inventory: &Inventory,
        sharing: Vec<Option<DeviceSharing>>,
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
        for device in &devices {
            if let DeviceRef::Gpu(gpu) = device
                && !inventory.offers_whole(gpu)
            {
                return Err(ClaimError::NotOfferedWhole {
                    device: gpu.name.clone(),
                    slices: inventory.slice_names(gpu).join(", "),
                });
            }
        }
        for (device, shared) in devices.iter().zip(&sharing) {
            if let (DeviceRef::Gpu(gpu), Some(_)) = (device, shared)
                && gpu.mig.is_some()
            {
                return Err(ClaimError::SharingOnMigManaged {
                    device: gpu.name.clone(),
                });
            }
        }
        let record = self.new_record(req, &devices, sharing);
        let wants: Vec<Want> = devices
            .iter()
            .zip(&record.devices)
            .map(|(device, d)| want(device, d.sharing.as_ref()))
            .collect();
        lock(&self.table).reserve(&req.uid, &wants)?;
        let brought = {
            let _gpus = self.lock_gpus(&record);
            self.bring_up(record.clone(), &devices)
        };
        match brought {
            Ok(record) => {
                lock(&self.table).insert(record.clone());
                if record
                    .devices
                    .iter()
                    .any(|d| d.mig.is_some() || d.restore_mig_mode)
                {
                    self.refresh_offer();
                }
                self.env.bump();
                tracing::info!(claim_uid = %record.uid, devices = ?device_names(&record), "claim prepared");
                Ok(Prepared::Created(record))
            }
            Err(err) => {
                let uuids = wants.iter().map(|w| w.gpu_uuid.as_str());
                lock(&self.table).release(&req.uid, uuids);
                // The reservation was visible (held, not available) meanwhile.
                self.env.bump();
                Err(err)
            }
        }
    }

    /// Hardware steps (if any) under a `preparing` record, then spec, then
    /// the `prepared` record. Undoes everything on failure.
    fn bring_up(
        &self,
        mut record: ClaimRecord,
        devices: &[DeviceRef<'_>],
    ) -> Result<ClaimRecord, ClaimError> {
        let mig = devices
            .iter()
            .any(|d| matches!(d, DeviceRef::Mig(..)) || d.gpu().mig.is_some());
        let steps = mig || has_sharing(&record);
        if steps {
            if mig {
                self.reserve_hardware(&mut record, devices)?;
            }
            self.reserve_sharing(&record)?;
            record.phase = Phase::Preparing;
            if let Err(err) = self.env.store.save(&record) {
                self.unreserve_sharing(&record);
                return Err(err.into());
            }
            if let Err(err) = self.hardware_up(&mut record, devices) {
                self.unreserve_sharing(&record);
                self.forget_record(&record);
                return Err(err);
            }
            if let Err(err) = self.sharing_up(&record) {
                self.hardware_down(&record);
                self.forget_record(&record);
                return Err(err);
            }
            record.phase = Phase::Prepared;
        }
        if let Err(err) = self.write_new_claim(&record) {
            self.sharing_down(&record);
            self.hardware_down(&record);
            if steps {
                self.forget_record(&record);
            }
            return Err(err);
        }
        Ok(record)
    }

    /// Applies the claim's sharing (time-slices, then MPS daemons); on
    /// failure nothing of it is left, in the state or on the GPUs.
    fn sharing_up(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        if !has_sharing(record) {
            return Ok(());
        }
        if let Err(err) = self.apply_timeslices(record) {
            self.unreserve_sharing(record);
            return Err(err);
        }
        if let Err(err) = self.apply_mps(record) {
            self.release_timeslices(record);
            self.unreserve_sharing(record);
            return Err(err);
        }
        Ok(())
    }

    /// Releases the claim's sharing (never fails; see `release_mps`).
    pub(super) fn sharing_down(&self, record: &ClaimRecord) {
        if has_sharing(record) {
            self.release_timeslices(record);
            self.release_mps(record);
        }
    }

    /// Decides every slice's fate before the `preparing` record is written.
    fn reserve_hardware(
        &self,
        record: &mut ClaimRecord,
        devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        for (device, slot) in devices.iter().zip(record.devices.iter_mut()) {
            if let (DeviceRef::Mig(_, gpu), Some(slice)) = (device, slot.mig.as_mut()) {
                self.reserve_slice(gpu, slice)?;
            }
        }
        Ok(())
    }

    fn hardware_up(
        &self,
        record: &mut ClaimRecord,
        devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        for i in 0..record.devices.len() {
            let (Some(device), Some(slot)) = (devices.get(i), record.devices.get_mut(i)) else {
                break;
            };
            let step = match (device, slot.mig.as_mut()) {
                (DeviceRef::Mig(_, gpu), Some(slice)) => self.create_slice(gpu, slice),
                (DeviceRef::Gpu(gpu), None) if gpu.mig.is_some() => {
                    self.take_whole_gpu(gpu).map(|switched| {
                        slot.restore_mig_mode = switched;
                    })
                }
                _ => Ok(()),
            };
            if let Err(err) = step {
                self.hardware_down(record);
                return Err(err);
            }
        }
        Ok(())
    }

    /// Best effort: undoes the hardware steps a record says were taken.
    pub(super) fn hardware_down(&self, record: &ClaimRecord) {
        if let Err(err) = self.release_hardware(record) {
            tracing::error!(claim_uid = %record.uid, error = %err, "could not undo a hardware step; start-up reconcile retries");
        }
    }

    /// Undoes every hardware step of the record, trying all of them; the
    /// first failure is returned.
    pub(super) fn release_hardware(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        let inventory = self.inventory();
        let mut first_error = None;
        for d in &record.devices {
            let Some(gpu) = inventory.gpu_by_uuid(&d.uuid) else {
                continue;
            };
            let undone = match &d.mig {
                Some(slice) => self.release_slice(gpu.info.index, slice),
                None if d.restore_mig_mode => self.return_whole_gpu(gpu.info.index),
                None => Ok(()),
            };
            if let Err(err) = undone {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn forget_record(&self, record: &ClaimRecord) {
        if let Err(err) = self.env.store.remove(&record.uid) {
            tracing::warn!(claim_uid = %record.uid, error = %err, "could not remove the record of a failed prepare; start-up reconcile rolls it back");
        }
    }

    /// Spec first, record second: a crash in between leaves a spec without a
    /// record (or with a `preparing` one), which reconcile removes.
    fn write_new_claim(&self, record: &ClaimRecord) -> Result<(), ClaimError> {
        self.write_spec(record)?;
        if let Err(err) = self.env.store.save(record) {
            if let Err(undo) = self.remove_spec(record) {
                tracing::warn!(claim_uid = %record.uid, error = %undo, "could not remove CDI spec after failed record write; reconcile will");
            }
            return Err(err.into());
        }
        Ok(())
    }

    fn new_record(
        &self,
        req: &PrepareRequest,
        devices: &[DeviceRef<'_>],
        sharing: Vec<Option<DeviceSharing>>,
    ) -> ClaimRecord {
        let devices = req
            .devices
            .iter()
            .zip(devices)
            .zip(sharing)
            .map(|((d, device), sharing)| RecordDevice {
                device: d.device.clone(),
                uuid: device.gpu().info.uuid.clone(),
                kind: match (device, &sharing) {
                    (DeviceRef::Gpu(_), None) => DeviceKind::Exclusive,
                    (DeviceRef::Gpu(_), Some(_)) => DeviceKind::Shared,
                    (DeviceRef::Mig(..), _) => DeviceKind::Mig,
                },
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
                restore_mig_mode: false,
                request_names: d.request_names.clone(),
                pool: d.pool.clone(),
                cdi_device_ids: vec![cdi_device_id(&req.uid, &d.device)],
                sharing,
                consumed_memory: d.consumed_memory,
                share_id: d.share_id.clone(),
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
        };
        record.version = record.format_version();
        record
    }
}

/// What of its GPU a device takes: a whole GPU shared across claims is a
/// shared holding; a MIG slice stays the claim's alone, MPS or not.
pub(super) fn want(device: &DeviceRef<'_>, sharing: Option<&DeviceSharing>) -> Want {
    let (name, share) = match (device, sharing) {
        (DeviceRef::Gpu(g), None) => (g.name.clone(), Share::Whole),
        (DeviceRef::Gpu(g), Some(DeviceSharing::Mps(_))) => {
            (g.name.clone(), Share::Shared(SharedMode::Mps))
        }
        (DeviceRef::Gpu(g), Some(DeviceSharing::Timeslicing { .. })) => {
            (g.name.clone(), Share::Shared(SharedMode::Timeslicing))
        }
        (DeviceRef::Mig(m, _), _) => (m.name.clone(), Share::Slice(m.placement)),
    };
    Want {
        gpu_uuid: device.gpu().info.uuid.clone(),
        device: name,
        share,
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
