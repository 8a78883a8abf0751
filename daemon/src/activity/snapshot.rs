//! What the sampler publishes after each sample: per claim and device, the
//! processes gpuslice attributed to it and what they use; the processes on
//! the node's GPUs that map to no claim; the over-share and unclaimed
//! episodes open now, and how many have begun since the daemon started.
//! Plain data, read by the metrics, the gRPC API and `gpuslicectl`. What
//! `[limits]` did is published by `limits` itself.

use std::collections::BTreeMap;

use crate::state::AccessKind;

/// One sample of the node, whole. `Default` is "sampling off, nothing seen".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActivitySnapshot {
    /// Whether sampling is on (`[activity] interval_s` > 0).
    pub enabled: bool,
    /// The sampling interval, in milliseconds.
    pub interval_ms: u64,
    /// When this sample was taken, Unix milliseconds; 0 before the first.
    pub sampled_at_ms: i64,
    /// CPU time the sample took (the sampler's thread), in microseconds.
    pub sample_cpu_us: u64,
    /// Every prepared claim, sorted by uid, with all its devices (idle ones too).
    pub claims: Vec<ClaimActivity>,
    /// Processes on gpuslice's GPUs that no claim holding their device was given.
    pub unclaimed: Vec<UnclaimedProcess>,
    /// The episodes open now: over-shares and unclaimed processes.
    pub warnings: Vec<Warning>,
    /// Episodes begun since the daemon started, by kind.
    pub episodes: EpisodeCounts,
    /// Per-claim series left out of the metrics to bound their cardinality.
    pub series_dropped: u64,
    /// Moves (by one) with each sample whose open summary conditions (a
    /// device's `idle_since` or `overshare_since`, see [`DeviceSummary`])
    /// differ from the sample's before; figures alone never move it. 0
    /// until the first sample that opens one; restarts with the daemon.
    pub conditions_generation: u64,
}

/// One prepared claim's use of its devices.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimActivity {
    /// The claim uid.
    pub uid: String,
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// How it shares its devices.
    pub kind: AccessKind,
    /// Unix seconds of the prepare.
    pub prepared_at: i64,
    /// Unix seconds of the last sample that found the claim active (see
    /// `activity` module doc); `None`: never active since prepared.
    pub last_active: Option<i64>,
    /// Its devices, in record order.
    pub devices: Vec<DeviceActivity>,
    /// Whether a sample read it: false for a claim prepared after the
    /// snapshot was taken, listed with its devices and no figures (see
    /// [`super::current`]).
    pub sampled: bool,
}

impl ClaimActivity {
    /// Seconds without activity at `now` (Unix seconds): since the last
    /// active sample, or since the prepare when never active.
    pub fn idle_for(&self, now: i64) -> i64 {
        (now - self.last_active.unwrap_or(self.prepared_at)).max(0)
    }

    /// Memory used by the claim's processes on all its devices, in bytes.
    pub fn memory_used(&self) -> u64 {
        self.devices.iter().map(|d| d.memory_used).sum()
    }

    /// Processes of the claim on all its devices.
    pub fn process_count(&self) -> usize {
        self.devices.iter().map(|d| d.processes.len()).sum()
    }
}

/// One device of a claim and what the claim's processes use on it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceActivity {
    /// The inventory name, "gpu-2" or "gpu-0-mig-3g40gb-2".
    pub device: String,
    /// The (parent) GPU's inventory name, "gpu-0".
    pub gpu: String,
    /// The device's own UUID: the GPU's, or the slice's MIG UUID ("" while
    /// the slice has none).
    pub uuid: String,
    /// How the device is used.
    pub sharing: AccessKind,
    /// Memory the claim's processes use on the device, in bytes.
    pub memory_used: u64,
    /// The claim's memory share of the device, where it shares one (MPS
    /// memory share or pinned limit, the scheduler's consumed capacity, or
    /// an equal split between the claims on the GPU), in bytes.
    pub memory_share: Option<u64>,
    /// Memory of the device: the whole GPU, or the slice, in bytes.
    pub memory_total: u64,
    /// Memory in use on the device as a whole (every process and the
    /// driver), where the backend reports it: a slice's own figure from its
    /// MIG device handle, or the whole GPU's.
    pub device_memory_used: Option<u64>,
    /// SM utilization of the claim's processes, percent of the GPU, where
    /// the driver samples per process (not in MIG mode).
    pub sm_percent: Option<u32>,
    /// The claim's processes on this device, ascending by pid.
    pub processes: Vec<ProcessActivity>,
    /// The pool the device was allocated from (the claim record's).
    pub pool: String,
    /// The allocation's share id (the claim record's; "" when none).
    pub share_id: String,
    /// What the sampler's window says of the device, with the claim's idle
    /// and over-share state; `None` until a sample read the claim.
    pub summary: Option<DeviceSummary>,
}

/// One claim's use of one device over the summary window, and the
/// conditions an operator (or the claim's status) acts on. Built by
/// [`super::summary`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceSummary {
    /// The window's length (`[activity] summary_window_s`), in seconds.
    pub window_s: u64,
    /// The highest memory the claim's processes used on the device in the
    /// window's samples, in bytes.
    pub memory_peak: u64,
    /// Their mean SM utilization over the window, percent; `None` where the
    /// driver does not sample per process (MIG).
    pub sm_mean: Option<u32>,
    /// Their highest SM utilization in the window, percent; `None` as above.
    pub sm_peak: Option<u32>,
    /// The claim's processes on the device in this sample.
    pub process_count: u32,
    /// Set once the claim has seen no activity for `[activity]
    /// idle_after_s`: when its idleness began (its last active sample, else
    /// its prepare), Unix seconds. The claim's, on each of its devices.
    pub idle_since: Option<i64>,
    /// Set while an over-share episode of the claim on this device is open:
    /// when it began, Unix seconds.
    pub overshare_since: Option<i64>,
    /// While not idle: since when, Unix seconds (the sample that ended the
    /// claim's last idle spell seen since gpusliced started, else its
    /// prepare). `None` while idle.
    pub active_since: Option<i64>,
    /// While no over-share episode is open: since when, Unix seconds (the
    /// sample that closed the last one seen since gpusliced started, else
    /// the prepare). `None` while one is open.
    pub within_share_since: Option<i64>,
}

/// One process attributed to a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessActivity {
    /// Host pid.
    pub pid: u32,
    /// The process name (`/proc/<pid>/comm`), or "" when gone.
    pub name: String,
    /// Memory it uses, where NVML reports it, in bytes.
    pub memory_used: Option<u64>,
    /// Its SM utilization, percent, where sampled.
    pub sm_percent: Option<u32>,
    /// An MPS client.
    pub mps_client: bool,
}

/// A process on one of gpuslice's GPUs that maps to no claim holding the
/// device it runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnclaimedProcess {
    /// The GPU's inventory name.
    pub gpu: String,
    /// The device it runs on: the GPU, or the slice's inventory name (or
    /// "gpu-0 instance 3" for a slice not in the inventory).
    pub device: String,
    /// The process.
    pub process: ProcessActivity,
    /// Why it maps to no claim, e.g. "no gpuslice claim in its environment".
    pub reason: String,
}

/// The kind of an episode: "overshare" or "unclaimed", in the activity file,
/// text and metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[derive(serde::Serialize, serde::Deserialize, strum::Display)]
#[derive(strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum WarningKind {
    /// A shared claim's memory use passes its share.
    OverShare,
    /// A process on a GPU gpuslice owns maps to no claim.
    Unclaimed,
}

/// An episode open now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// What kind.
    pub kind: WarningKind,
    /// Unix seconds the episode began.
    pub since: i64,
    /// The claim uid (over-share), or "" (unclaimed).
    pub claim_uid: String,
    /// The device.
    pub device: String,
    /// The process (unclaimed), or 0.
    pub pid: u32,
    /// One line an operator can act on, as logged when the episode began.
    pub message: String,
}

/// Episodes begun since the daemon started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpisodeCounts {
    /// Over-share episodes, by the kind of access the device is shared
    /// under; a kind with none yet is absent.
    pub overshare: BTreeMap<AccessKind, u64>,
    /// Unclaimed-process episodes.
    pub unclaimed: u64,
}

impl EpisodeCounts {
    /// Over-share episodes of devices shared under `kind`.
    pub fn overshare(&self, kind: AccessKind) -> u64 {
        self.overshare.get(&kind).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use strum::VariantArray;

    use super::WarningKind;

    #[test]
    fn a_warning_kind_prints_as_its_name_in_the_activity_file() {
        for kind in WarningKind::VARIANTS {
            assert_eq!(serde_json::to_string(kind).unwrap(), format!("\"{kind}\""));
        }
    }
}
