//! MIG in the claim engine: everything the engine does to MIG hardware.
//!
//! This module owns the steps of a MIG claim (this file), the node-wide MIG
//! set-up at start-up and on SIGHUP ([`setup`]), slices made ahead of claims
//! and their ledger ([`ahead`]), the start-up repair of prepared slices
//! ([`restore`]) and the CDI device of a slice ([`cdi`]). It must not touch
//! the claim table's rules, records or CDI files on its own: the engine
//! (`prepare`, `unprepare`, `reconcile`) calls it in the order that keeps
//! records ahead of effects. The layout arithmetic (profiles, placements,
//! diffs) lives in [`crate::mig`], free of I/O; the hardware behind
//! [`crate::gpu::GpuBackend`].
//!
//! The hardware steps of a claim: creating or taking a MIG slice, destroying
//! what the claim created, and switching a GPU's MIG mode off for a whole-GPU
//! claim (and back on after it).
//!
//! Every step is undone on failure before the error is returned: a GPU
//! instance whose compute instance could not be made is destroyed, so no
//! half-made slice is left behind.

mod ahead;
pub(super) mod cdi;
mod restore;
mod setup;

#[cfg(test)]
mod crash_recovery_tests;
#[cfg(test)]
mod tests;

use super::Engine;
use super::error::ClaimError;
use crate::gpu::{GpuError, GpuInstance, MigMode, MigSupport, Placement};
use crate::inventory::GpuDevice;
use crate::state::MigSlice;

impl Engine {
    /// Decides, before anything is written, how the slice comes to exist:
    /// an instance already at the placement with the profile is taken (its
    /// ids filled in now); a free placement is marked `created` (the intent
    /// the `preparing` record carries, so a crash after the create is rolled
    /// back). An instance in the way is an error.
    pub(super) fn reserve_slice(
        &self,
        gpu: &GpuDevice,
        slice: &mut MigSlice,
    ) -> Result<(), ClaimError> {
        let index = gpu.info.index;
        self.ensure_mig_enabled(gpu)?;
        let placement = slice_placement(slice);
        let instances = self.env.backend.gpu_instances(index)?;
        if let Some(gi) = instances
            .iter()
            .find(|gi| gi.profile_id == slice.profile_id && gi.placement == placement)
        {
            return self.take_existing(index, gi, slice);
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

    /// Creates a slice [`Engine::reserve_slice`] marked `created`: the GPU
    /// instance, then its compute instance; the GPU instance is destroyed
    /// again if the compute instance fails.
    pub(super) fn create_slice(
        &self,
        gpu: &GpuDevice,
        slice: &mut MigSlice,
    ) -> Result<(), ClaimError> {
        if !slice.created || slice.gpu_instance.is_some() {
            return Ok(());
        }
        let index = gpu.info.index;
        let gi =
            self.env.backend
                .create_gpu_instance(index, slice.profile_id, slice_placement(slice))?;
        slice.gpu_instance = Some(gi.id);
        match self.env.backend.create_compute_instance(index, gi.id) {
            Ok(ci) => {
                slice.compute_instance = Some(ci.id);
                slice.mig_uuid = Some(ci.uuid);
                Ok(())
            }
            Err(err) => {
                if let Err(undo) = self.env.backend.destroy_gpu_instance(index, gi.id) {
                    tracing::error!(gpu = %gpu.name, gi = gi.id, error = %undo, "could not destroy a GPU instance after its compute instance failed; start-up reconcile retries");
                }
                slice.gpu_instance = None;
                Err(err.into())
            }
        }
    }

    fn take_existing(
        &self,
        index: u32,
        gi: &GpuInstance,
        slice: &mut MigSlice,
    ) -> Result<(), ClaimError> {
        slice.gpu_instance = Some(gi.id);
        let ci = match gi.compute_instances.first() {
            Some(ci) => ci.clone(),
            None => self.env.backend.create_compute_instance(index, gi.id)?,
        };
        slice.compute_instance = Some(ci.id);
        slice.mig_uuid = Some(ci.uuid);
        Ok(())
    }

    /// Destroys the slice if this claim created it (CIs, then the GI). An
    /// instance that is already gone is fine; one that is in use is an error
    /// the kubelet's retry resolves once the container has stopped.
    pub(super) fn release_slice(&self, gpu_index: u32, slice: &MigSlice) -> Result<(), ClaimError> {
        if !slice.created {
            return Ok(());
        }
        let placement = slice_placement(slice);
        let instances = self.env.backend.gpu_instances(gpu_index)?;
        let Some(gi) = instances
            .iter()
            .find(|gi| gi.profile_id == slice.profile_id && gi.placement == placement)
        else {
            return Ok(());
        };
        for ci in &gi.compute_instances {
            ignore_not_found(
                self.env.backend
                    .destroy_compute_instance(gpu_index, gi.id, ci.id),
            )?;
        }
        ignore_not_found(self.env.backend.destroy_gpu_instance(gpu_index, gi.id))?;
        Ok(())
    }

    /// Turns MIG mode on where it is off (Hopper loses it at reboot; a
    /// whole-GPU claim may have switched it off and failed to restore it).
    fn ensure_mig_enabled(&self, gpu: &GpuDevice) -> Result<(), ClaimError> {
        let index = gpu.info.index;
        let current = self.env.backend.device_info(index)?.mig;
        if let MigSupport::Supported {
            current: MigMode::Enabled,
            ..
        } = current
        {
            return Ok(());
        }
        match self.env.backend.set_mig_mode(index, MigMode::Enabled)? {
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
    pub(super) fn take_whole_gpu(&self, gpu: &GpuDevice) -> Result<bool, ClaimError> {
        let index = gpu.info.index;
        let MigSupport::Supported {
            current: MigMode::Enabled,
            ..
        } = self.env.backend.device_info(index)?.mig
        else {
            return Ok(false);
        };
        let instances = self.env.backend.gpu_instances(index)?;
        if let Some(gi) = instances.first() {
            return Err(ClaimError::GpuPartitioned {
                gpu: gpu.name.clone(),
                instances: instances.len(),
                first: gi.id,
            });
        }
        let outcome = self.env.backend.set_mig_mode(index, MigMode::Disabled);
        if let Ok(MigSupport::Supported {
            current: MigMode::Disabled,
            ..
        }) = outcome
        {
            return Ok(true);
        }
        // Not switched (Ampere with work on it): cancel the pending change so
        // the next reboot does not take the GPU out of MIG mode.
        if let Err(err) = self.env.backend.set_mig_mode(index, MigMode::Enabled) {
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

    /// Undoes [`Engine::take_whole_gpu`].
    pub(super) fn return_whole_gpu(&self, gpu_index: u32) -> Result<(), ClaimError> {
        self.env.backend.set_mig_mode(gpu_index, MigMode::Enabled)?;
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
