//! Attribution, pure: which claim each GPU process belongs to, what each
//! claim uses on each of its devices, which claims are active, which pass
//! their share, and which processes belong to no claim.
//!
//! Rules:
//! - A process maps to the claims its environment names that hold the
//!   device it runs on: the whole GPU, or on a GPU in MIG mode the slice
//!   whose GPU instance id the process runs on. Two such claims (a
//!   container given two claims that share one GPU): the first by uid.
//! - A process that is one of gpusliced's own daemons or a child of one
//!   (the MPS control daemon or server, known by pid from gpusliced's books,
//!   never by what its environment says) is neither a claim's nor unclaimed.
//! - Any other process is unclaimed, with the reason.
//! - A claim is active when one of its processes has SM utilization above 0
//!   where the driver samples per process, or, where it does not (MIG), when
//!   it has any process. Per process, the highest of its samples counts.
//! - A device's SM utilization is the sum of its processes' (at most 100).
//! - A shared device (MPS, time-slicing) is over its share when its
//!   processes use more memory than the claim's share.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::held::{HeldClaim, HeldDevice};
use super::procfs::ProcInfo;
use super::snapshot::{ClaimActivity, DeviceActivity, ProcessActivity, UnclaimedProcess};
use crate::gpu::{GpuProcess, MemoryUse, ProcessUtilization};

/// What the backend said about one GPU in this sample.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GpuSample {
    /// NVML index.
    pub index: u32,
    /// Inventory name, "gpu-0".
    pub name: String,
    /// Its processes (every slice's, with their instance ids).
    pub processes: Vec<GpuProcess>,
    /// Per-process utilization samples; `None` where the driver does not
    /// sample per process (MIG mode, older GPUs) or the call failed.
    pub utilization: Option<Vec<ProcessUtilization>>,
    /// Memory of the GPU (`None` key) and of held slices (their GPU instance).
    pub memory: BTreeMap<Option<u32>, MemoryUse>,
}

/// A process's environment as read, or why it could not be.
pub type ProcView = Result<ProcInfo, String>;

/// Everything one attribution needs.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// Unix seconds of the sample.
    pub now: i64,
    /// The prepared claims, sorted by uid.
    pub claims: &'a [HeldClaim],
    /// The GPUs sampled.
    pub gpus: &'a [GpuSample],
    /// Each listed pid's `/proc` view.
    pub procs: &'a HashMap<u32, ProcView>,
    /// Last active time of each claim before this sample.
    pub last_active: &'a BTreeMap<String, i64>,
}

/// A shared device whose claim uses more memory than its share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverShare {
    /// Index into [`Attribution::claims`].
    pub claim: usize,
    /// Index into that claim's devices.
    pub device: usize,
}

/// The result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attribution {
    /// Every claim, sorted by uid, `last_active` updated.
    pub claims: Vec<ClaimActivity>,
    /// Processes mapped to no claim, by GPU index then pid.
    pub unclaimed: Vec<UnclaimedProcess>,
    /// The shared devices over their share.
    pub overshares: Vec<OverShare>,
}

/// Where a process landed.
enum Owner {
    Claim(usize, usize),
    Ours,
    Nobody(String),
}

/// Attributes every process of `inputs.gpus`.
pub fn attribute(inputs: &Inputs<'_>) -> Attribution {
    let mut out = Attribution {
        claims: inputs.claims.iter().map(empty_claim).collect(),
        ..Attribution::default()
    };
    for gpu in inputs.gpus {
        let sm = max_sm(gpu.utilization.as_deref());
        for (claim, held_claim) in out.claims.iter_mut().zip(inputs.claims) {
            for (d, held) in claim.devices.iter_mut().zip(&held_claim.devices) {
                if held.gpu_index == Some(gpu.index) {
                    fill_device_figures(d, held, gpu);
                }
            }
        }
        for process in &gpu.processes {
            let view = inputs.procs.get(&process.pid);
            let activity = ProcessActivity {
                pid: process.pid,
                name: view
                    .and_then(|v| v.as_ref().ok())
                    .map(|i| i.name.clone())
                    .unwrap_or_default(),
                memory_used: process.used_memory,
                sm_percent: sm
                    .as_ref()
                    .map(|m| m.get(&process.pid).copied().unwrap_or(0)),
                mps_client: process.mps_client,
            };
            match owner(inputs, gpu, process, view) {
                Owner::Claim(c, d) => out.claims[c].devices[d].processes.push(activity),
                Owner::Ours => {}
                Owner::Nobody(reason) => out.unclaimed.push(UnclaimedProcess {
                    gpu: gpu.name.clone(),
                    device: device_label(inputs.claims, gpu, process.gpu_instance),
                    process: activity,
                    reason,
                }),
            }
        }
    }
    for (c, claim) in out.claims.iter_mut().enumerate() {
        let active = finish_claim(claim);
        claim.last_active = if active {
            Some(inputs.now)
        } else {
            inputs.last_active.get(&claim.uid).copied()
        };
        for (d, device) in claim.devices.iter().enumerate() {
            let shared = device.sharing.shares_gpus();
            if shared && device.memory_share.is_some_and(|s| device.memory_used > s) {
                out.overshares.push(OverShare {
                    claim: c,
                    device: d,
                });
            }
        }
    }
    out
}

/// `held` with nothing read of it yet: no processes, no figures.
pub(super) fn empty_claim(held: &HeldClaim) -> ClaimActivity {
    ClaimActivity {
        uid: held.uid.clone(),
        namespace: held.namespace.clone(),
        name: held.name.clone(),
        kind: held.kind,
        prepared_at: held.prepared_at,
        last_active: None,
        sampled: true,
        devices: held
            .devices
            .iter()
            .map(|d| DeviceActivity {
                device: d.device.clone(),
                gpu: d.gpu.clone(),
                uuid: d.uuid.clone(),
                sharing: d.sharing,
                memory_used: 0,
                memory_share: d.memory_share,
                memory_total: d.memory_total,
                device_memory_used: None,
                sm_percent: None,
                processes: Vec::new(),
                pool: d.pool.clone(),
                share_id: d.share_id.clone(),
                summary: None,
            })
            .collect(),
    }
}

/// The device's own memory figures, and whether the driver samples SM.
fn fill_device_figures(device: &mut DeviceActivity, held: &HeldDevice, gpu: &GpuSample) {
    if let Some(memory) = gpu.memory.get(&held.gpu_instance) {
        device.device_memory_used = Some(memory.used);
        if device.memory_total == 0 {
            device.memory_total = memory.total;
        }
    }
    if gpu.utilization.is_some() && held.gpu_instance.is_none() {
        device.sm_percent = Some(0);
    }
}

/// Sorts the processes, sums memory and SM; true when the claim is active.
fn finish_claim(claim: &mut ClaimActivity) -> bool {
    let mut active = false;
    for device in &mut claim.devices {
        device.processes.sort_by_key(|p| p.pid);
        device.memory_used = device.processes.iter().filter_map(|p| p.memory_used).sum();
        let sampled: Vec<u32> = device
            .processes
            .iter()
            .filter_map(|p| p.sm_percent)
            .collect();
        if !sampled.is_empty() {
            device.sm_percent = Some(sampled.iter().sum::<u32>().min(100));
        }
        active |= device
            .processes
            .iter()
            .any(|p| p.sm_percent.is_none_or(|sm| sm > 0));
    }
    active
}

/// Per pid, the highest SM utilization among its samples.
fn max_sm(samples: Option<&[ProcessUtilization]>) -> Option<HashMap<u32, u32>> {
    samples.map(|samples| {
        let mut sm = HashMap::new();
        for s in samples {
            let e = sm.entry(s.pid).or_insert(0);
            *e = (*e).max(s.sm_percent);
        }
        sm
    })
}

fn owner(
    inputs: &Inputs<'_>,
    gpu: &GpuSample,
    process: &GpuProcess,
    view: Option<&ProcView>,
) -> Owner {
    let info = match view {
        Some(Ok(info)) => info,
        Some(Err(reason)) => return Owner::Nobody(reason.clone()),
        None => return Owner::Nobody("environment not read".to_owned()),
    };
    if info.own_daemon {
        return Owner::Ours;
    }
    for uid in &info.marks.claims {
        let Ok(c) = inputs.claims.binary_search_by(|c| c.uid.as_str().cmp(uid)) else {
            continue;
        };
        let runs_on = |d: &HeldDevice| {
            d.gpu_index == Some(gpu.index) && d.gpu_instance == process.gpu_instance
        };
        if let Some(d) = inputs.claims[c].devices.iter().position(runs_on) {
            return Owner::Claim(c, d);
        }
    }
    Owner::Nobody(no_claim_reason(
        &info.marks.claims,
        &device_label(inputs.claims, gpu, process.gpu_instance),
    ))
}

fn no_claim_reason(named: &BTreeSet<String>, device: &str) -> String {
    match named.len() {
        0 => "no gpuslice claim in its environment".to_owned(),
        1 => format!(
            "its environment names claim {}, which does not hold {device}",
            named.iter().map(String::as_str).collect::<String>()
        ),
        _ => format!(
            "its environment names claims {}, none of which holds {device}",
            named
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The device a process runs on: the GPU, a held slice's name, or
/// "gpu-0 instance 3" for a slice no claim holds.
fn device_label(claims: &[HeldClaim], gpu: &GpuSample, gpu_instance: Option<u32>) -> String {
    let Some(gi) = gpu_instance else {
        return gpu.name.clone();
    };
    claims
        .iter()
        .flat_map(|c| &c.devices)
        .find(|d| d.gpu_index == Some(gpu.index) && d.gpu_instance == Some(gi))
        .map_or_else(
            || format!("{} instance {gi}", gpu.name),
            |d| d.device.clone(),
        )
}

#[cfg(test)]
mod tests;
