//! What a crashed and restarted node holds, read from the outside (the
//! record and CDI folders, the simulated hardware file, the MIG ledger,
//! /proc, the stand-in nvidia-smi's record; channel claims and their IMEX
//! daemons in [`channels`]), and the invariants it must meet. Each check
//! returns what it found wrong, in words, so a run reports every broken
//! invariant of every case at once.

mod channels;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gpuslice::compute_domains::cdi::claim_uid_of_spec_file;
use gpuslice::gpu::sim::SimGpuState;
use gpuslice::gpu::{ComputeMode, MigMode};
use gpuslice::state::{ClaimRecord, DeviceSharing, Phase};

use crate::crash_node::{Gpusliced, Node};
use crate::harness::list;
pub use channels::Channels;

/// The node's state, as files and processes show it.
pub struct World {
    pub records: Vec<ClaimRecord>,
    /// Files in the records folder that are not a record.
    pub stray_record_files: Vec<String>,
    pub cdi_files: Vec<String>,
    pub state_files: Vec<String>,
    /// The running gpusliced's pid when the world was read.
    pub daemon_pid: Option<u32>,
    /// Per GPU index.
    pub hardware: Vec<SimGpuState>,
    /// (GPU uuid, profile id, start, size) of each slice made ahead.
    pub ledger: BTreeSet<(String, u32, u32, u32)>,
    /// `CUDA_MPS_PIPE_DIRECTORY` of each running stand-in control daemon.
    pub mps_processes: Vec<String>,
    pub mps_folders: Vec<String>,
    /// uuid → the last `--set-timeslice` level set.
    pub timeslices: BTreeMap<String, u8>,
    /// Channel claims, their specs, their domains' folders and daemons.
    pub channels: Channels,
}

fn json(path: &Path) -> Option<serde_json::Value> {
    let bytes = std::fs::read(path).ok()?;
    Some(serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

impl World {
    /// The node's state while `daemon` runs on it.
    pub fn read(node: &Node, daemon: &Gpusliced) -> Self {
        let dir = node.path();
        let mut records = Vec::new();
        let mut stray_record_files = Vec::new();
        for name in list(&dir.join("state/claims")) {
            let path = dir.join("state/claims").join(&name);
            match (name.starts_with('.'), name.strip_suffix(".json")) {
                (false, Some(_)) => records
                    .push(serde_json::from_value(json(&path).expect("record")).expect("a record")),
                _ => stray_record_files.push(name),
            }
        }
        let hardware: Vec<SimGpuState> = json(&dir.join("sim-hardware.json"))
            .map(|h| serde_json::from_value(h["state"].clone()).expect("hardware state"))
            .unwrap_or_default();
        let ledger = json(&dir.join("state/mig-ahead.json"))
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|m| {
                let n = |k: &str| u32::try_from(m[k].as_u64().expect(k)).expect(k);
                let gpu = m["gpu_uuid"].as_str().expect("gpu_uuid").to_owned();
                (gpu, n("profile_id"), n("start"), n("size"))
            })
            .collect();
        let mut timeslices = BTreeMap::new();
        for line in std::fs::read_to_string(dir.join("smi.record"))
            .unwrap_or_default()
            .lines()
        {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["compute-policy", "-i", uuid, set] = words.as_slice()
                && let Some(level) = set.strip_prefix("--set-timeslice=")
            {
                timeslices.insert((*uuid).to_owned(), level.parse().expect("level"));
            }
        }
        Self {
            records,
            stray_record_files,
            cdi_files: list(&dir.join("cdi")),
            state_files: list(&dir.join("state")),
            daemon_pid: daemon.running_pid(),
            hardware,
            ledger,
            mps_processes: mps_processes(&node.mps_dir()),
            mps_folders: list(&node.mps_dir()),
            timeslices,
            channels: Channels::read(node),
        }
    }

    /// Every invariant a node must meet after a start, whatever crash came
    /// before it. `uuids`: GPU uuids by index; `mig_gpus`: the indices the
    /// `[mig]` config selects.
    pub fn problems(&self, node: &Node, uuids: &[String], mig_gpus: &[usize]) -> Vec<String> {
        let mut problems = Vec::new();
        let mut say = |p: String| problems.push(p);
        if !self.stray_record_files.is_empty() {
            say(format!(
                "records folder holds {:?}",
                self.stray_record_files
            ));
        }
        for r in self.records.iter().filter(|r| r.phase != Phase::Prepared) {
            say(format!(
                "record of {} survived start-up in phase {:?}",
                r.uid, r.phase
            ));
        }
        let specs: BTreeSet<&str> = self
            .records
            .iter()
            .map(|r| r.cdi_spec_file.as_str())
            .collect();
        let files: BTreeSet<&str> = self
            .cdi_files
            .iter()
            .map(String::as_str)
            .filter(|f| claim_uid_of_spec_file(f).is_none())
            .collect();
        if specs != files {
            say(format!(
                "CDI files {files:?} are not the records' specs {specs:?}"
            ));
        }
        let temps: Vec<&String> = self
            .state_files
            .iter()
            .filter(|f| f.starts_with('.') && !self.is_live_advisory_temp(f))
            .collect();
        if !temps.is_empty() {
            say(format!("state folder holds {temps:?}"));
        }
        self.check_slices(uuids, &mut say);
        self.check_daemons(node, &mut say);
        self.check_gpu_modes(uuids, mig_gpus, &mut say);
        self.channels.problems(&mut say);
        problems
    }

    /// A temp file of an advisory write the running daemon's sampler has
    /// in flight (`activity.json`, `limits.json`, `usage-history.json`: temp file, then
    /// rename): the live daemon's own, not a crash's leftover, which would
    /// carry a dead daemon's pid (start-up removes those).
    fn is_live_advisory_temp(&self, name: &str) -> bool {
        let Some(pid) = self.daemon_pid else {
            return false;
        };
        ["activity.json", "limits.json", "usage-history.json"]
            .iter()
            .any(|file| name == format!(".{file}.tmp-{pid}"))
    }

    fn check_slices(&self, uuids: &[String], say: &mut impl FnMut(String)) {
        let mut held = BTreeMap::new();
        for r in &self.records {
            for d in &r.devices {
                if let Some(m) = &d.mig {
                    let key = (d.uuid.clone(), m.profile_id, m.start, m.size);
                    held.insert(key, (r.uid.clone(), m.mig_uuid.clone()));
                }
            }
        }
        let mut present = BTreeSet::new();
        for (gpu, state) in uuids.iter().zip(&self.hardware) {
            for gi in &state.gpu_instances {
                let key = (
                    gpu.clone(),
                    gi.profile_id,
                    gi.placement.start,
                    gi.placement.size,
                );
                let ci = gi.compute_instances.first().map(|c| c.uuid.clone());
                if gi.compute_instances.len() != 1 {
                    say(format!(
                        "GPU instance {} of {gpu} has {} compute instances (a half-made or \
                         half-destroyed slice)",
                        gi.id,
                        gi.compute_instances.len()
                    ));
                }
                match held.get(&key) {
                    Some((uid, mig_uuid)) if *mig_uuid != ci => say(format!(
                        "claim {uid}'s slice {key:?} is MIG device {ci:?} on the GPU but \
                         {mig_uuid:?} in its record and spec"
                    )),
                    Some(_) => {}
                    None if self.ledger.contains(&key) => {}
                    None => say(format!(
                        "GPU instance {} {key:?} belongs to no live claim and was not made ahead",
                        gi.id
                    )),
                }
                present.insert(key);
            }
        }
        for (key, (uid, _)) in &held {
            if !present.contains(key) {
                say(format!(
                    "claim {uid}'s slice {key:?} does not exist on the GPU"
                ));
            }
        }
    }

    /// The MPS daemons running and their folders are exactly those the live
    /// claims' specs point at.
    fn check_daemons(&self, node: &Node, say: &mut impl FnMut(String)) {
        let mut wanted = BTreeSet::new();
        for r in &self.records {
            let uses_mps = r
                .devices
                .iter()
                .any(|d| matches!(d.sharing, Some(DeviceSharing::Mps(_))));
            if uses_mps {
                wanted.extend(spec_pipe_dirs(
                    &node.path().join("cdi").join(&r.cdi_spec_file),
                ));
            }
        }
        let running: BTreeSet<String> = self.mps_processes.iter().cloned().collect();
        if running != wanted {
            say(format!(
                "MPS control daemons run for {running:?}; the live claims use {wanted:?}"
            ));
        }
        let folders: BTreeSet<String> = self.mps_folders.iter().cloned().collect();
        let wanted_folders: BTreeSet<String> = wanted
            .iter()
            .filter_map(|p| {
                Path::new(p)
                    .parent()?
                    .file_name()?
                    .to_str()
                    .map(str::to_owned)
            })
            .collect();
        if folders != wanted_folders {
            say(format!(
                "MPS folders {folders:?}; the live claims' daemons are {wanted_folders:?}"
            ));
        }
    }

    /// Compute modes, time-slices and MIG modes as the live claims need.
    fn check_gpu_modes(&self, uuids: &[String], mig_gpus: &[usize], say: &mut impl FnMut(String)) {
        for (index, (uuid, state)) in uuids.iter().zip(&self.hardware).enumerate() {
            let whole: Vec<&gpuslice::state::RecordDevice> = self
                .records
                .iter()
                .flat_map(|r| &r.devices)
                .filter(|d| d.uuid == *uuid && d.mig.is_none())
                .collect();
            let mps = whole
                .iter()
                .any(|d| matches!(d.sharing, Some(DeviceSharing::Mps(_))));
            let want = if mps {
                ComputeMode::ExclusiveProcess
            } else {
                ComputeMode::Default
            };
            if state.compute_mode != want {
                say(format!(
                    "gpu-{index} is in compute mode {:?}, wants {want:?}",
                    state.compute_mode
                ));
            }
            let interval = whole.iter().find_map(|d| match d.sharing {
                Some(DeviceSharing::TimeSlicing { interval }) => Some(interval.level()),
                _ => None,
            });
            let set = self.timeslices.get(uuid).copied();
            if set.unwrap_or(0) != interval.unwrap_or(0) {
                say(format!(
                    "gpu-{index}'s time-slice is {set:?}, wants {interval:?}"
                ));
            }
            if mig_gpus.contains(&index) {
                let want = if whole.is_empty() {
                    MigMode::Enabled
                } else {
                    MigMode::Disabled
                };
                if state.mig_current != want {
                    say(format!(
                        "gpu-{index} is in MIG mode {:?}, wants {want:?}",
                        state.mig_current
                    ));
                }
            }
        }
    }
}

/// `CUDA_MPS_PIPE_DIRECTORY` of every device in the spec at `path`.
fn spec_pipe_dirs(path: &Path) -> Vec<String> {
    let Some(spec) = json(path) else {
        return Vec::new();
    };
    spec["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|d| {
            d["containerEdits"]["env"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|e| {
            e.as_str()?
                .strip_prefix("CUDA_MPS_PIPE_DIRECTORY=")
                .map(str::to_owned)
        })
        .collect()
}

/// Pipe dirs of the running control daemons (`-f`) of this node.
fn mps_processes(mps_dir: &Path) -> Vec<String> {
    let prefix = format!("CUDA_MPS_PIPE_DIRECTORY={}/", mps_dir.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let proc = entry.path();
        let is_daemon = std::fs::read(proc.join("cmdline"))
            .is_ok_and(|c| c.split(|b| *b == 0).any(|a| a == b"-f"));
        let alive = std::fs::read_to_string(proc.join("stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z")
        });
        if !is_daemon || !alive {
            continue;
        }
        let environ = std::fs::read(proc.join("environ")).unwrap_or_default();
        for var in environ.split(|b| *b == 0) {
            if var.starts_with(prefix.as_bytes()) {
                let text = String::from_utf8_lossy(var);
                found.push(text["CUDA_MPS_PIPE_DIRECTORY=".len()..].to_owned());
            }
        }
    }
    found.sort();
    found
}
