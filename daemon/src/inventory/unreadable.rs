//! GPUs the scan could not read, and what an operator is told about them.
//!
//! Such a GPU is left out of the offer rather than kept as unhealthy: its
//! attributes cannot be read again, a device that stays published invites the
//! scheduler to allocate it (without device taints on the cluster nothing
//! stops it) only for every prepare to fail, and leaving it out makes a GPU
//! lost before start-up and one lost before a rescan look the same. Claims
//! already on it stay in their records and cannot be prepared again until it
//! answers (their GPU is no longer in the inventory); they can be unprepared.
//! A rescan (SIGHUP) offers it again once it answers. Pure.

use super::{Inventory, gpu_device_name};
use crate::gpu::GpuError;

/// One GPU the scan could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnreadableGpu {
    /// Its index (NVML's).
    pub index: u32,
    /// The inventory name it would have, "gpu-<index>".
    pub name: String,
    /// Its UUID, when it was read before (an earlier scan, or the device
    /// info of a GPU whose MIG state could not be read).
    pub uuid: Option<String>,
    /// What could not be read, e.g. "device info".
    pub what: &'static str,
    /// The backend's answer.
    pub error: GpuError,
    /// Unix seconds of the first scan that could not read it.
    pub since: i64,
}

impl UnreadableGpu {
    /// GPU `index`, whose `what` failed with `error` at `since`.
    pub fn new(
        index: u32,
        uuid: Option<String>,
        what: &'static str,
        error: GpuError,
        since: i64,
    ) -> Self {
        Self {
            index,
            name: gpu_device_name(index),
            uuid,
            what,
            error,
            since,
        }
    }

    /// "gpu-1 (GPU-…)" or "gpu-1 (index 1)".
    pub fn label(&self) -> String {
        match &self.uuid {
            Some(uuid) => format!("{} ({uuid})", self.name),
            None => format!("{} (index {})", self.name, self.index),
        }
    }

    /// Why it is missing, for the health view.
    pub fn reason(&self) -> String {
        format!(
            "cannot be read ({}: {}); left out of the offer until a rescan finds it answering",
            self.what, self.error
        )
    }

    /// The operator's problem line.
    pub fn problem(&self) -> String {
        format!(
            "{} cannot be read ({}: {}): it is left out of the offer and claims on it cannot be \
             prepared again; once it answers (check nvidia-smi), `systemctl reload gpusliced` \
             offers it again",
            self.label(),
            self.what,
            self.error
        )
    }

    /// Whether an inventory device name is this GPU or one of its MIG
    /// slices ("gpu-1", "gpu-1-mig-…"): how records name their devices.
    pub fn names_device(&self, device: &str) -> bool {
        device
            .strip_prefix(&self.name)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("-mig-"))
    }
}

impl Inventory {
    /// Keeps what `previous` knew of GPUs this scan could not read: the time
    /// they were first found unreadable (so an unchanged node is an
    /// unchanged inventory) and their UUID when an earlier scan read it.
    pub fn carry_over_unreadable(&mut self, previous: &Inventory) {
        for gpu in &mut self.unreadable {
            if let Some(before) = previous.unreadable.iter().find(|u| u.index == gpu.index) {
                gpu.since = before.since;
                if gpu.uuid.is_none() {
                    gpu.uuid.clone_from(&before.uuid);
                }
            } else if gpu.uuid.is_none()
                && let Some(read) = previous.gpus.iter().find(|g| g.info.index == gpu.index)
            {
                gpu.uuid = Some(read.info.uuid.clone());
            }
        }
    }
}
