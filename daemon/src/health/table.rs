//! The faults in force, per GPU (by UUID): one on the whole GPU, and one per
//! MIG GPU instance, kept with the instance's placement. Pure data and rules.
//!
//! Which devices a fault covers: a fault on the whole GPU covers the GPU and
//! every slice of it; a fault on an instance covers every slice whose memory
//! slices overlap the instance's (the memory may be what failed, and in
//! partitionable mode several offered devices share those slices), and the
//! whole GPU, which includes them. The first fault of a scope is kept with
//! its time: later events on an unhealthy scope change nothing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::classify::Cause;
use crate::gpu::Placement;

/// One fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Why.
    pub cause: Cause,
    /// The backend's detail.
    pub detail: String,
    /// Unix seconds of the event.
    pub since: i64,
}

/// A fault confined to one MIG GPU instance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceFault {
    /// The GPU instance id.
    pub gpu_instance: u32,
    /// Its memory slices.
    pub placement: Placement,
    /// The fault.
    pub fault: Fault,
}

/// The faults of one GPU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuFaults {
    /// The GPU's NVML index when the first fault was recorded (for messages).
    pub gpu_index: u32,
    /// A fault of the whole GPU.
    pub whole: Option<Fault>,
    /// Faults of instances, by GPU instance id.
    pub instances: BTreeMap<u32, InstanceFault>,
}

impl GpuFaults {
    fn is_empty(&self) -> bool {
        self.whole.is_none() && self.instances.is_empty()
    }
}

/// What a fault is recorded against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The whole GPU.
    Gpu,
    /// One GPU instance, at its placement.
    Instance {
        /// The GPU instance id.
        gpu_instance: u32,
        /// Its memory slices.
        placement: Placement,
    },
}

/// Where a device's fault sits, relative to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Covering<'a> {
    /// The fault is on the whole GPU.
    Gpu(&'a Fault),
    /// The fault is on a GPU instance overlapping the device.
    Instance(&'a InstanceFault),
}

impl Covering<'_> {
    /// The fault itself.
    pub fn fault(&self) -> &Fault {
        match self {
            Covering::Gpu(f) => f,
            Covering::Instance(i) => &i.fault,
        }
    }
}

/// Every fault in force, by GPU UUID.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HealthTable {
    gpus: BTreeMap<String, GpuFaults>,
}

impl HealthTable {
    /// Records `fault` against `target` of the GPU; false (nothing changed)
    /// when that target is unhealthy already.
    pub fn record(&mut self, gpu_uuid: &str, gpu_index: u32, target: Target, fault: Fault) -> bool {
        let gpu = self
            .gpus
            .entry(gpu_uuid.to_owned())
            .or_insert_with(|| GpuFaults {
                gpu_index,
                ..GpuFaults::default()
            });
        match target {
            Target::Gpu if gpu.whole.is_none() => gpu.whole = Some(fault),
            Target::Instance {
                gpu_instance,
                placement,
            } if !gpu.instances.contains_key(&gpu_instance) => {
                let slice = InstanceFault {
                    gpu_instance,
                    placement,
                    fault,
                };
                gpu.instances.insert(gpu_instance, slice);
            }
            _ => return false,
        }
        true
    }

    /// Clears the whole GPU (`None`: with every instance fault) or one
    /// instance; true when something was cleared.
    pub fn recover(&mut self, gpu_uuid: &str, gpu_instance: Option<u32>) -> bool {
        let Some(gpu) = self.gpus.get_mut(gpu_uuid) else {
            return false;
        };
        let cleared = match gpu_instance {
            None => {
                self.gpus.remove(gpu_uuid);
                return true;
            }
            Some(id) => gpu.instances.remove(&id).is_some(),
        };
        if gpu.is_empty() {
            self.gpus.remove(gpu_uuid);
        }
        cleared
    }

    /// Clears what makes the device unhealthy: for the whole GPU (`slice`
    /// `None`) every fault of it; for a slice, the instance faults overlapping
    /// it (a fault of the whole GPU stays). Returns how many faults went.
    pub fn clear(&mut self, gpu_uuid: &str, slice: Option<Placement>) -> usize {
        let Some(gpu) = self.gpus.get_mut(gpu_uuid) else {
            return 0;
        };
        let before = usize::from(gpu.whole.is_some()) + gpu.instances.len();
        match slice {
            None => {
                self.gpus.remove(gpu_uuid);
                return before;
            }
            Some(p) => gpu.instances.retain(|_, i| !i.placement.overlaps(p)),
        }
        let after = usize::from(gpu.whole.is_some()) + gpu.instances.len();
        if gpu.is_empty() {
            self.gpus.remove(gpu_uuid);
        }
        before - after
    }

    /// The fault that makes a device unhealthy, if any: for the whole GPU
    /// (`slice` `None`) its own fault or any instance's; for a slice, the
    /// GPU's fault or an overlapping instance's.
    pub fn covering(&self, gpu_uuid: &str, slice: Option<Placement>) -> Option<Covering<'_>> {
        let gpu = self.gpus.get(gpu_uuid)?;
        if let Some(whole) = &gpu.whole {
            return Some(Covering::Gpu(whole));
        }
        gpu.instances
            .values()
            .find(|i| slice.is_none_or(|p| i.placement.overlaps(p)))
            .map(Covering::Instance)
    }

    /// Every GPU with faults, by UUID.
    pub fn gpus(&self) -> impl Iterator<Item = (&str, &GpuFaults)> {
        self.gpus.iter().map(|(uuid, f)| (uuid.as_str(), f))
    }

    /// The table without the faults that are live conditions rather than
    /// history (a lost GPU): after a daemon restart the backend reports a
    /// GPU that is still lost again, and one that answers is fine.
    pub fn without_live_conditions(mut self) -> Self {
        for gpu in self.gpus.values_mut() {
            if gpu
                .whole
                .as_ref()
                .is_some_and(|f| f.cause == Cause::GpuLost)
            {
                gpu.whole = None;
            }
        }
        self.gpus.retain(|_, g| !g.is_empty());
        self
    }

    /// True when no fault is in force.
    pub fn is_empty(&self) -> bool {
        self.gpus.is_empty()
    }
}
