//! MIG's verbs: a claim's slices taken or made at prepare (reserve, then
//! apply: GPU instance, then compute instance), a whole-GPU claim's MIG mode
//! switched off and back, what a prepare cut short or an unprepare destroys,
//! and the admission and offer hooks. Every step is undone on failure before
//! the error is returned: a GPU instance whose compute instance could not be
//! made is destroyed, so no half-made slice is left behind.

use super::Mig;
use crate::cdi_build::ClaimDevice;
use crate::claims::access::{Access, Change, Cx, Restored};
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::driver::DriverFiles;
use crate::gpu::{GpuError, GpuInstance, MigMode, MigSupport, Placement};
use crate::inventory::{DeviceRef, GpuDevice};
use crate::state::AccessKind;
use crate::state::{ClaimRecord, MigSlice, RecordDevice};

impl Access for Mig {
    fn kind(&self) -> AccessKind {
        AccessKind::Mig
    }

    fn takes_part(&self, _record: &ClaimRecord, devices: &[DeviceRef<'_>]) -> bool {
        devices
            .iter()
            .any(|d| matches!(d, DeviceRef::Mig(..)) || d.gpu().mig.is_some())
    }

    /// A GPU the `[mig]` config manages is offered whole only in
    /// partitionable mode, and is never shared across claims.
    fn admit(
        &self,
        cx: &Cx<'_>,
        record: &ClaimRecord,
        devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        let inventory = cx.env.inventory();
        for (device, d) in devices.iter().zip(&record.devices) {
            let DeviceRef::Gpu(gpu) = device else {
                continue;
            };
            if !inventory.offers_whole(gpu) {
                return Err(ClaimError::NotOfferedWhole {
                    device: gpu.name.clone(),
                    slices: inventory.slice_names(gpu).join(", "),
                });
            }
            if d.sharing.is_some() && gpu.mig.is_some() {
                return Err(ClaimError::SharingOnMigManaged {
                    device: gpu.name.clone(),
                });
            }
        }
        Ok(())
    }

    /// The offer follows a claim that took or made a slice, or took a GPU
    /// whole out of MIG mode (prepared), or that destroyed slices it made or
    /// gives a GPU back to MIG mode (unprepared).
    fn after_change(&self, cx: &Cx<'_>, record: &ClaimRecord, change: Change) {
        let changed = (record.devices.iter()).any(|d| match change {
            Change::Prepared => d.mig.is_some() || d.restore_mig_mode,
            Change::Unprepared => d.restore_mig_mode || d.mig.as_ref().is_some_and(|m| m.created),
        });
        if changed {
            self.refresh_offer(cx);
        }
    }

    /// Decides every slice's fate before the `preparing` record is written.
    fn reserve(
        &self,
        cx: &Cx<'_>,
        record: &mut ClaimRecord,
        devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        for (device, slot) in devices.iter().zip(record.devices.iter_mut()) {
            if let (DeviceRef::Mig(_, gpu), Some(slice)) = (device, slot.mig.as_mut()) {
                self.reserve_slice(cx, gpu, slice)?;
            }
        }
        Ok(())
    }

    /// Reserve books nothing of its own (the table holds the slices).
    fn unreserve(&self, _cx: &Cx<'_>, _record: &ClaimRecord) {}

    fn apply(
        &self,
        cx: &Cx<'_>,
        record: &mut ClaimRecord,
        devices: &[DeviceRef<'_>],
    ) -> Result<(), ClaimError> {
        for i in 0..record.devices.len() {
            let (Some(device), Some(slot)) = (devices.get(i), record.devices.get_mut(i)) else {
                break;
            };
            let step = match (device, slot.mig.as_mut()) {
                (DeviceRef::Mig(_, gpu), Some(slice)) => self.create_slice(cx, gpu, slice),
                (DeviceRef::Gpu(gpu), None) if gpu.mig.is_some() => {
                    self.take_whole_gpu(cx, gpu).map(|switched| {
                        slot.restore_mig_mode = switched;
                    })
                }
                _ => Ok(()),
            };
            if let Err(err) = step {
                self.release_logged(cx, record);
                return Err(err);
            }
        }
        Ok(())
    }

    /// Undoes every hardware step of the record, trying all of them; the
    /// first failure is returned.
    fn release(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<(), ClaimError> {
        let inventory = cx.env.inventory();
        let mut first_error = None;
        for d in &record.devices {
            let Some(gpu) = inventory.gpu_by_uuid(&d.uuid) else {
                continue;
            };
            let undone = match &d.mig {
                Some(slice) => self.release_slice(cx, gpu.info.index, slice),
                None if d.restore_mig_mode => self.return_whole_gpu(cx, gpu.info.index),
                None => Ok(()),
            };
            if let Err(err) = undone {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// A slice that cannot be destroyed yet keeps the record.
    fn roll_back(&self, cx: &Cx<'_>, record: &ClaimRecord) -> Result<Vec<String>, ClaimError> {
        self.release(cx, record).map(|()| Vec::new())
    }

    /// The claim's slices match its record again (see [`restore`]).
    fn restore(&self, cx: &Cx<'_>, record: &mut ClaimRecord) -> Restored {
        self.restore_slices(cx, record)
    }

    /// The problems the last MIG set-up found.
    fn node_problems(&self, _cx: &Cx<'_>) -> Vec<String> {
        lock(&self.books.problems).clone()
    }
}

impl Mig {
    /// CDI: the device nodes of a MIG slice `slice` of `gpu`.
    pub(in crate::claims) fn cdi_device(
        &self,
        cx: &Cx<'_>,
        device: &RecordDevice,
        slice: &MigSlice,
        gpu: &GpuDevice,
        driver: &DriverFiles,
    ) -> Result<ClaimDevice, ClaimError> {
        super::cdi::claim_device(
            gpu,
            slice,
            &device.device,
            &cx.env.settings.dev_root,
            driver,
        )
    }

    /// Best effort: undoes the hardware steps a record says were taken.
    pub(in crate::claims) fn release_logged(&self, cx: &Cx<'_>, record: &ClaimRecord) {
        if let Err(err) = self.release(cx, record) {
            tracing::error!(claim_uid = %record.uid, error = %err, "could not undo a hardware step; start-up reconcile retries");
        }
    }

    /// Decides, before anything is written, how the slice comes to exist:
    /// an instance already at the placement with the profile is taken (its
    /// ids filled in now); a free placement is marked `created` (the intent
    /// the `preparing` record carries, so a crash after the create is rolled
    /// back). An instance in the way is an error.
    pub(super) fn reserve_slice(
        &self,
        cx: &Cx<'_>,
        gpu: &GpuDevice,
        slice: &mut MigSlice,
    ) -> Result<(), ClaimError> {
        let index = gpu.info.index;
        self.ensure_mig_enabled(cx, gpu)?;
        let placement = slice_placement(slice);
        let instances = cx.env.backend.gpu_instances(index)?;
        if let Some(gi) = instances
            .iter()
            .find(|gi| gi.profile_id == slice.profile_id && gi.placement == placement)
        {
            return self.take_existing(cx, index, gi, slice);
        }
        if let Some(gi) = instances.iter().find(|gi| gi.placement.overlaps(placement)) {
            return Err(ClaimError::SliceOccupied {
                gpu: gpu.name.clone(),
                profile: slice.profile.clone(),
                start: slice.start,
                gpu_instance: gi.id,
            });
        }
        slice.created = true;
        Ok(())
    }

    /// Creates a slice [`Mig::reserve_slice`] marked `created`: the GPU
    /// instance, then its compute instance; the GPU instance is destroyed
    /// again if the compute instance fails.
    pub(super) fn create_slice(
        &self,
        cx: &Cx<'_>,
        gpu: &GpuDevice,
        slice: &mut MigSlice,
    ) -> Result<(), ClaimError> {
        if !slice.created || slice.gpu_instance.is_some() {
            return Ok(());
        }
        let index = gpu.info.index;
        let gi =
            cx.env
                .backend
                .create_gpu_instance(index, slice.profile_id, slice_placement(slice))?;
        slice.gpu_instance = Some(gi.id);
        match cx.env.backend.create_compute_instance(index, gi.id) {
            Ok(ci) => {
                slice.compute_instance = Some(ci.id);
                slice.mig_uuid = Some(ci.uuid);
                Ok(())
            }
            Err(err) => {
                if let Err(undo) = cx.env.backend.destroy_gpu_instance(index, gi.id) {
                    tracing::error!(gpu = %gpu.name, gi = gi.id, error = %undo, "could not destroy a GPU instance after its compute instance failed; start-up reconcile retries");
                }
                slice.gpu_instance = None;
                Err(err.into())
            }
        }
    }

    pub(super) fn take_existing(
        &self,
        cx: &Cx<'_>,
        index: u32,
        gi: &GpuInstance,
        slice: &mut MigSlice,
    ) -> Result<(), ClaimError> {
        slice.gpu_instance = Some(gi.id);
        let ci = match gi.compute_instances.first() {
            Some(ci) => ci.clone(),
            None => cx.env.backend.create_compute_instance(index, gi.id)?,
        };
        slice.compute_instance = Some(ci.id);
        slice.mig_uuid = Some(ci.uuid);
        Ok(())
    }

    /// Destroys the slice if this claim created it (CIs, then the GI). An
    /// instance that is already gone is fine; one that is in use is an error
    /// the kubelet's retry resolves once the container has stopped.
    pub(super) fn release_slice(
        &self,
        cx: &Cx<'_>,
        gpu_index: u32,
        slice: &MigSlice,
    ) -> Result<(), ClaimError> {
        if !slice.created {
            return Ok(());
        }
        let placement = slice_placement(slice);
        let instances = cx.env.backend.gpu_instances(gpu_index)?;
        let Some(gi) = instances
            .iter()
            .find(|gi| gi.profile_id == slice.profile_id && gi.placement == placement)
        else {
            return Ok(());
        };
        for ci in &gi.compute_instances {
            ignore_not_found(
                cx.env
                    .backend
                    .destroy_compute_instance(gpu_index, gi.id, ci.id),
            )?;
        }
        ignore_not_found(cx.env.backend.destroy_gpu_instance(gpu_index, gi.id))?;
        Ok(())
    }

    /// Turns MIG mode on where it is off (Hopper loses it at reboot; a
    /// whole-GPU claim may have switched it off and failed to restore it).
    pub(super) fn ensure_mig_enabled(
        &self,
        cx: &Cx<'_>,
        gpu: &GpuDevice,
    ) -> Result<(), ClaimError> {
        let index = gpu.info.index;
        let current = cx.env.backend.device_info(index)?.mig;
        if let MigSupport::Supported {
            current: MigMode::Enabled,
            ..
        } = current
        {
            return Ok(());
        }
        match cx.env.backend.set_mig_mode(index, MigMode::Enabled)? {
            MigSupport::Supported {
                current: MigMode::Enabled,
                ..
            } => Ok(()),
            _ => Err(ClaimError::MigModeStuck {
                gpu: gpu.name.clone(),
                wanted: "enabled",
                reason: "the change is pending until a GPU reset".to_owned(),
            }),
        }
    }

    /// For a whole-GPU claim on a GPU in MIG mode: switch MIG off, which
    /// needs the GPU free of instances and takes effect at once only on
    /// Hopper and later. True when it switched (so unprepare switches back).
    pub(super) fn take_whole_gpu(&self, cx: &Cx<'_>, gpu: &GpuDevice) -> Result<bool, ClaimError> {
        let index = gpu.info.index;
        let MigSupport::Supported {
            current: MigMode::Enabled,
            ..
        } = cx.env.backend.device_info(index)?.mig
        else {
            return Ok(false);
        };
        let instances = cx.env.backend.gpu_instances(index)?;
        if let Some(gi) = instances.first() {
            return Err(ClaimError::GpuPartitioned {
                gpu: gpu.name.clone(),
                instances: instances.len(),
                first: gi.id,
            });
        }
        let outcome = cx.env.backend.set_mig_mode(index, MigMode::Disabled);
        if let Ok(MigSupport::Supported {
            current: MigMode::Disabled,
            ..
        }) = outcome
        {
            return Ok(true);
        }
        // Not switched (Ampere with work on it): cancel the pending change so
        // the next reboot does not take the GPU out of MIG mode.
        if let Err(err) = cx.env.backend.set_mig_mode(index, MigMode::Enabled) {
            tracing::warn!(gpu = %gpu.name, error = %err, "could not cancel a pending MIG mode change");
        }
        Err(match outcome {
            Err(err) => ClaimError::MigModeStuck {
                gpu: gpu.name.clone(),
                wanted: "disabled",
                reason: err.to_string(),
            },
            Ok(_) => ClaimError::MigModeStuck {
                gpu: gpu.name.clone(),
                wanted: "disabled",
                reason: "the change is pending until a GPU reset".to_owned(),
            },
        })
    }

    /// Undoes [`Mig::take_whole_gpu`].
    pub(super) fn return_whole_gpu(&self, cx: &Cx<'_>, gpu_index: u32) -> Result<(), ClaimError> {
        cx.env.backend.set_mig_mode(gpu_index, MigMode::Enabled)?;
        Ok(())
    }
}

/// The placement a slice record names.
pub fn slice_placement(slice: &MigSlice) -> Placement {
    Placement {
        start: slice.start,
        size: slice.size,
    }
}

fn ignore_not_found(result: Result<(), GpuError>) -> Result<(), ClaimError> {
    match result {
        Ok(()) | Err(GpuError::NotFound { .. }) => Ok(()),
        Err(err) => Err(err.into()),
    }
}
