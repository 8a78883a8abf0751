//! The engine's side of device health, the verbs: a new claim on an
//! unhealthy device (a GPU with a fault, a slice of such a GPU, or a slice
//! overlapping a faulty GPU instance) is refused; a change of the faults in
//! force is a new generation; an operator clears a device. What is reported
//! of claims on unhealthy devices (their health problems, the status lines,
//! the unhealthy devices of the view) is read in `view/claim_health.rs`.
//!
//! Faults are looked up by GPU UUID and placement, never by device name, so
//! a claim prepared under a name the inventory no longer offers is still
//! reported. A claim prepared before the fault keeps working: re-preparing it
//! (the kubelet retries) answers as before, so running pods are not broken
//! by the daemon; moving them is the cluster's decision, which the taint and
//! the reports inform.

use super::error::ClaimError;
use super::{Engine, lock};
use crate::gpu::Placement;
use crate::health::{DeviceFault, DeviceHealth};
use crate::inventory::{DeviceRef, Inventory};

/// What an operator's clear did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleared {
    /// How many faults went.
    pub faults: usize,
    /// Why the device is still unhealthy, if it is (a slice of a faulty GPU).
    pub still: Option<DeviceFault>,
}

/// The slice a device takes of its GPU (`None`: the whole GPU).
fn slice_of(device: &DeviceRef<'_>) -> Option<Placement> {
    match device {
        DeviceRef::Gpu(_) => None,
        DeviceRef::Mig(m, _) => Some(m.placement),
    }
}

impl Engine {
    /// The node's device health.
    pub fn health(&self) -> &DeviceHealth {
        &self.env.health
    }

    /// Called after the faults in force changed: a new inventory generation,
    /// so the DRA plugin republishes (and taints) the devices and the daemon
    /// updates its systemd status line.
    pub fn health_changed(&self) {
        self.env.bump();
    }

    /// How many faults are in force (GPUs plus GPU instances).
    pub(crate) fn fault_count(&self) -> usize {
        self.env
            .health
            .table()
            .gpus()
            .map(|(_, f)| usize::from(f.whole.is_some()) + f.instances.len())
            .sum()
    }

    /// Why `device` is unhealthy, if it is.
    pub(crate) fn device_fault(&self, device: &DeviceRef<'_>) -> Option<DeviceFault> {
        self.env
            .health
            .fault_of(&device.gpu().info.uuid, slice_of(device))
    }

    /// A prepared claim asked again while its GPU is out of the inventory
    /// (lost, or unreadable at the last scan) is told its GPU is gone
    /// (UNAVAILABLE: the kubelet retries, and a rescan may bring the GPU
    /// back), not that it named an unknown device.
    pub(super) fn gone_rather_than_unknown(
        &self,
        req: &super::PrepareRequest,
        inventory: &Inventory,
        err: ClaimError,
    ) -> ClaimError {
        if !matches!(err, ClaimError::UnknownDevice { .. }) {
            return err;
        }
        let table = lock(&self.table);
        let gone = table.get(&req.uid).and_then(|record| {
            let d = (record.devices.iter()).find(|d| inventory.gpu_by_uuid(&d.uuid).is_none())?;
            Some(ClaimError::DeviceGone {
                uid: record.uid.clone(),
                device: d.device.clone(),
                uuid: d.uuid.clone(),
            })
        });
        gone.unwrap_or(err)
    }

    /// Refuses a new claim on any unhealthy device.
    pub(super) fn refuse_unhealthy(&self, devices: &[DeviceRef<'_>]) -> Result<(), ClaimError> {
        for device in devices {
            if let Some(fault) = self.device_fault(device) {
                return Err(ClaimError::DeviceUnhealthy {
                    device: match device {
                        DeviceRef::Gpu(g) => g.name.clone(),
                        DeviceRef::Mig(m, _) => m.name.clone(),
                    },
                    reason: fault.reason,
                    gpu: device.gpu().name.clone(),
                });
            }
        }
        Ok(())
    }

    /// An operator clears the faults that make `device` unhealthy.
    pub(crate) fn clear_health(&self, device: &str) -> Result<Cleared, ClaimError> {
        let inventory = self.inventory();
        let found = inventory
            .device(device)
            .ok_or_else(|| ClaimError::UnknownDevice {
                device: device.to_owned(),
                known: inventory.device_names().join(", "),
            })?;
        let uuid = &found.gpu().info.uuid;
        let faults = self.env.health.clear(uuid, slice_of(&found));
        if faults > 0 {
            tracing::info!(device, faults, "device health cleared by an operator");
            self.health_changed();
        }
        Ok(Cleared {
            faults,
            still: self.device_fault(&found),
        })
    }
}
