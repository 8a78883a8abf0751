//! The engine's side of device health: a new claim on an unhealthy device (a
//! GPU with a fault, a slice of such a GPU, or a slice overlapping a faulty
//! GPU instance) is refused; claims already on one are reported (their
//! `health_problems`, and the status problems); an operator clears a device.
//!
//! Faults are looked up by GPU UUID and placement, never by device name, so
//! a claim prepared under a name the inventory no longer offers is still
//! reported. A claim prepared before the fault keeps working: re-preparing it
//! (the kubelet retries) answers as before, so running pods are not broken
//! by the daemon; moving them is the cluster's decision, which the taint and
//! the reports inform. A GPU the scan could not read is not in the inventory
//! at all (`inventory::UnreadableGpu`); it is still shown here, with the
//! claims recorded on it.

use super::error::ClaimError;
use super::{Engine, lock};
use crate::gpu::Placement;
use crate::health::{DeviceFault, DeviceHealth, since_text};
use crate::inventory::{DeviceRef, Inventory, UnreadableGpu};
use crate::state::{ClaimRecord, RecordDevice};

/// One unhealthy device of the inventory, with the claims holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnhealthyDevice {
    /// Inventory name.
    pub device: String,
    /// UUID of the (parent) GPU.
    pub gpu_uuid: String,
    /// Why, and since when.
    pub fault: DeviceFault,
    /// Uids of the claims holding it (for a whole GPU: any part of it).
    pub claims: Vec<String>,
}

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

/// The unreadable GPU a recorded device is on, if any: its GPU is not in
/// the inventory, and the GPU that could not be read has its UUID or (never
/// read, so UUID unknown) its name.
pub(super) fn unreadable_gpu_of<'a>(
    inventory: &'a Inventory,
    device: &RecordDevice,
) -> Option<&'a UnreadableGpu> {
    if inventory.gpu_by_uuid(&device.uuid).is_some() {
        return None;
    }
    inventory.unreadable.iter().find(|gpu| match &gpu.uuid {
        Some(uuid) => *uuid == device.uuid,
        None => gpu.names_device(&device.device),
    })
}

fn recorded_slice(device: &RecordDevice) -> Option<Placement> {
    device.mig.as_ref().map(|m| Placement {
        start: m.start,
        size: m.size,
    })
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
    pub fn fault_count(&self) -> usize {
        self.env
            .health
            .table()
            .gpus()
            .map(|(_, f)| usize::from(f.whole.is_some()) + f.instances.len())
            .sum()
    }

    /// Why `device` is unhealthy, if it is.
    pub fn device_fault(&self, device: &DeviceRef<'_>) -> Option<DeviceFault> {
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

    /// One line per unhealthy device of the claim (empty when healthy),
    /// including a device on a GPU the last scan could not read.
    pub fn claim_health_problems(&self, record: &ClaimRecord) -> Vec<String> {
        let inventory = self.inventory();
        record
            .devices
            .iter()
            .filter_map(|d| {
                if let Some(gpu) = unreadable_gpu_of(&inventory, d) {
                    return Some(format!(
                        "{} is unhealthy: {} {}",
                        d.device,
                        gpu.name,
                        gpu.reason()
                    ));
                }
                let fault = self.env.health.fault_of(&d.uuid, recorded_slice(d))?;
                Some(format!("{} is unhealthy: {}", d.device, fault.reason))
            })
            .collect()
    }

    /// Health lines for the status: each fault in force, each claim on an
    /// unhealthy device, and what keeps events from being watched.
    pub(super) fn health_problems(&self) -> Vec<String> {
        let table = self.env.health.table();
        if table.is_empty() {
            return self.env.health.watch_problems();
        }
        let inventory = self.inventory();
        let mut problems = Vec::new();
        for (uuid, faults) in table.gpus() {
            let gpu = inventory.gpu_by_uuid(uuid).map_or_else(
                || format!("GPU {} ({uuid})", faults.gpu_index),
                |g| format!("{} ({uuid})", g.name),
            );
            if let Some(fault) = &faults.whole {
                problems.push(format!(
                    "{gpu} is unhealthy: {} since {}; it and its slices take no new claims",
                    fault.cause,
                    since_text(fault.since)
                ));
            }
            for i in faults.instances.values() {
                problems.push(format!(
                    "{gpu} GPU instance {} (memory slices {}-{}) is unhealthy: {} since {}; \
                     devices on those slices take no new claims",
                    i.gpu_instance,
                    i.placement.start,
                    (i.placement.start + i.placement.size).saturating_sub(1),
                    i.fault.cause,
                    since_text(i.fault.since)
                ));
            }
        }
        for record in lock(&self.table).records() {
            let on_it = self.claim_health_problems(&record);
            if !on_it.is_empty() {
                problems.push(format!(
                    "claim {} ({}/{}) runs on unhealthy devices: {}",
                    record.uid,
                    record.namespace,
                    record.name,
                    on_it.join("; ")
                ));
            }
        }
        problems.extend(self.env.health.watch_problems());
        problems
    }

    /// An operator clears the faults that make `device` unhealthy.
    pub fn clear_health(&self, device: &str) -> Result<Cleared, ClaimError> {
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
