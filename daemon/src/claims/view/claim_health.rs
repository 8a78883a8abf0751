//! What is reported of a claim's health and of device health: a claim's
//! problems in each kind of access and its lines for unhealthy devices
//! (ListClaims), the status lines of each fault in force and of each claim
//! on one (GetStatus), and the view's unhealthy devices with their holders
//! (GetHealth). A GPU the scan could not read is not in
//! the inventory at all (`inventory::UnreadableGpu`); it is still shown
//! here, with the claims recorded on it. The verbs (refuse, clear) are in
//! `claims/health.rs`.

use super::NodeView;
use crate::claims::{Engine, lock};
use crate::gpu::Placement;
use crate::health::{Cause, DeviceFault, since_text};
use crate::inventory::{Inventory, UnreadableGpu};
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

/// The unreadable GPU a recorded device is on, if any: its GPU is not in
/// the inventory, and the GPU that could not be read has its UUID or (never
/// read, so UUID unknown) its name.
pub(in crate::claims) fn unreadable_gpu_of<'a>(
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

impl NodeView {
    /// Every unhealthy device (whole GPUs, then slices) with the claims
    /// holding it, then the GPUs the scan could not read (left out of the
    /// inventory) with the claims recorded on them.
    pub fn unhealthy_devices(&self) -> Vec<UnhealthyDevice> {
        let faulty = self.each_device().filter_map(|(device, state)| {
            Some(UnhealthyDevice {
                device: state.name.clone(),
                gpu_uuid: device.gpu().info.uuid.clone(),
                fault: state.fault.clone()?,
                claims: state.holders.clone(),
            })
        });
        let unreadable = self.unreadable.iter().filter_map(|state| {
            let gpu = self.inventory.unreadable.get(state.at)?;
            Some(UnhealthyDevice {
                device: gpu.name.clone(),
                gpu_uuid: gpu.uuid.clone().unwrap_or_default(),
                fault: DeviceFault {
                    reason: format!("{} since {}", gpu.reason(), since_text(gpu.since)),
                    cause: Cause::GpuLost,
                    since: gpu.since,
                },
                claims: state.holders.clone(),
            })
        });
        faulty.chain(unreadable).collect()
    }
}

impl Engine {
    /// Problems with `record`'s part in each kind of access (its MPS
    /// daemons, time-slices not supported) and with its shared GPUs
    /// (degraded); empty when healthy. Tests read one claim's.
    #[cfg(test)]
    pub(crate) fn claim_health(&self, record: &ClaimRecord) -> Vec<String> {
        (self.claims_health(std::slice::from_ref(record)).into_iter())
            .next()
            .unwrap_or_default()
    }

    /// [`Engine::claim_health`] of many claims, each kind reading its state
    /// once (the MPS daemons' is a few D-Bus calls a daemon under systemd).
    pub(crate) fn claims_health(&self, records: &[ClaimRecord]) -> Vec<Vec<String>> {
        let cx = self.cx();
        let mut health = vec![Vec::new(); records.len()];
        for kind in self.kinds.in_order() {
            for (lines, more) in health.iter_mut().zip(kind.claim_problems(&cx, records)) {
                lines.extend(more);
            }
        }
        for (lines, record) in health.iter_mut().zip(records) {
            lines.extend(self.kinds.shared.claim_problems(record));
            lines.dedup();
        }
        health
    }

    /// One line per unhealthy device of the claim (empty when healthy),
    /// including a device on a GPU the last scan could not read.
    pub(crate) fn claim_health_problems(&self, record: &ClaimRecord) -> Vec<String> {
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
    pub(in crate::claims) fn health_problems(&self) -> Vec<String> {
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
}
