//! Exact checks, with every client paused (no call in flight): the node
//! must show exactly the claims the ledger says are prepared, nothing more.
//! After the last unprepare that means an empty node: no claim, spec, record
//! or temp file, no MIG instance, MIG modes back as configured, no MPS
//! daemon (process, folder or view), compute modes DEFAULT, time-slices
//! reset, no problem in GetStatus.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gpuslice_proto::gpuslice::v1 as pb;

use super::concurrent::Look;
use super::holdings::{Hold, Rules, holds, violations};
use super::ledger::Entry;
use super::node::{Catalogue, Device};
use super::observe::{spec_ids, spec_name};
use super::workload::{INTERVALS, Plan, Sharing};

/// What a quiet look sees besides the concurrent one.
#[derive(Debug)]
pub struct Extra {
    pub status: pb::GetStatusResponse,
    /// The stand-in nvidia-smi's record.
    pub smi: Vec<String>,
    /// Folders under `<run_dir>/mps`.
    pub mps_folders: Vec<String>,
    /// Every file name in the CDI and records folders, temp files included.
    pub all_files: Vec<String>,
}

/// Every difference between the node and `prepared` (the ledger's
/// prepared claims).
pub fn check(look: &Look, extra: &Extra, prepared: &[&Entry], node: &Catalogue) -> Vec<String> {
    let plans: Vec<&Plan> = prepared.iter().map(|e| e.plan.as_ref()).collect();
    let mut out = Vec::new();
    out.extend(claims_and_files(look, extra, prepared));
    out.extend(mig(look, &plans, node));
    out.extend(sharing(look, extra, &plans, node));
    out.extend(inventory(look, &plans, node));
    out.extend(violations(
        plans.iter().copied(),
        node,
        Rules::All,
        "prepared claims",
    ));
    if !extra.status.problems.is_empty() {
        out.push(format!("GetStatus problems: {:?}", extra.status.problems));
    }
    out
}

fn differ<T: std::fmt::Debug + PartialEq>(what: &str, seen: &T, want: &T) -> Option<String> {
    (seen != want).then(|| format!("{what}: the node shows {seen:?}, expected {want:?}"))
}

fn claims_and_files(look: &Look, extra: &Extra, prepared: &[&Entry]) -> Vec<String> {
    let mut out = Vec::new();
    let want: BTreeMap<&str, &Entry> = prepared.iter().map(|e| (e.plan.uid.as_str(), *e)).collect();
    let listed: BTreeSet<&str> = look
        .api
        .claims
        .claims
        .iter()
        .filter_map(|c| c.claim.as_ref().map(|c| c.uid.as_str()))
        .collect();
    out.extend(differ("claims", &listed, &want.keys().copied().collect()));
    for c in &look.api.claims.claims {
        if !c.health_problems.is_empty() {
            out.push(format!(
                "claim {:?} has health problems {:?}",
                c.claim, c.health_problems
            ));
        }
    }
    let specs: BTreeSet<String> = want.keys().map(|u| spec_name(u)).collect();
    let records: BTreeSet<String> = want.keys().map(|u| format!("{u}.json")).collect();
    out.extend(differ(
        "spec files",
        &look.specs.iter().cloned().collect(),
        &specs,
    ));
    out.extend(differ(
        "record files",
        &look.records.iter().cloned().collect(),
        &records,
    ));
    let all: BTreeSet<String> = extra.all_files.iter().cloned().collect();
    let durable: BTreeSet<String> = specs.union(&records).cloned().collect();
    out.extend(differ("files with temp files", &all, &durable));
    for (uid, e) in &want {
        let mut ids = e.ids.clone();
        ids.sort();
        match look.spec_of.get(*uid) {
            Some(Ok(spec)) => {
                out.extend(differ(&format!("spec ids of {uid}"), &spec_ids(spec), &ids))
            }
            Some(Err(why)) => out.push(format!("spec of {uid}: {why}")),
            None => out.push(format!("spec of {uid} was not read")),
        }
    }
    out
}

/// MIG: the instances on the simulated GPUs and in GetMigLayout are those
/// of the prepared claims' slices; a GPU taken whole has MIG off.
fn mig(look: &Look, plans: &[&Plan], node: &Catalogue) -> Vec<String> {
    let mut out = Vec::new();
    for (i, (gpu, sim)) in node.gpus.iter().zip(&look.hardware).enumerate() {
        let mut slices = BTreeSet::new();
        let mut whole = false;
        for plan in plans {
            for (g, h) in holds(plan, node) {
                match h {
                    Hold::Slice { start, size } if g == i => {
                        slices.insert((start, size));
                    }
                    Hold::Whole if g == i => whole = true,
                    _ => {}
                }
            }
        }
        out.extend(differ(
            &format!("sim MIG instances of {}", gpu.name),
            &sim.instances,
            &slices,
        ));
        let enabled = gpu.mig_managed && !whole;
        out.extend(differ(
            &format!("sim MIG mode of {} (enabled)", gpu.name),
            &sim.mig_enabled,
            &enabled,
        ));
    }
    for g in &look.api.mig.gpus {
        for inst in &g.instances {
            let owner = plans.iter().find(|p| p.devices.contains(&inst.device));
            match owner {
                Some(p) if inst.holder == p.uid && inst.created_by_daemon => {}
                _ => out.push(format!(
                    "GetMigLayout: {} instance {} ({}) held by {:?}, made by gpusliced: {}",
                    g.device,
                    inst.gpu_instance_id,
                    inst.device,
                    inst.holder,
                    inst.created_by_daemon
                )),
            }
        }
    }
    out
}

/// The set of device names an MPS claim's daemon covers (its key).
fn key_of(plan: &Plan) -> Vec<String> {
    let mut key = plan.devices.clone();
    key.sort();
    key
}

#[allow(
    clippy::too_many_lines,
    reason = "the sharing checks of a quiescent node, one after the other"
)]
fn sharing(look: &Look, extra: &Extra, plans: &[&Plan], node: &Catalogue) -> Vec<String> {
    let mut out = Vec::new();
    let mig_names: BTreeMap<&str, &str> = look
        .api
        .mig
        .gpus
        .iter()
        .flat_map(|g| &g.instances)
        .map(|i| (i.uuid.as_str(), i.device.as_str()))
        .collect();
    let mut daemons: BTreeMap<&str, &pb::MpsDaemon> = BTreeMap::new();
    for (i, (gpu, view)) in node.gpus.iter().zip(&look.api.sharing.gpus).enumerate() {
        let on_gpu: Vec<&&Plan> = plans
            .iter()
            .filter(|p| {
                p.sharing != Sharing::Alone && p.devices.iter().any(|d| node.gpu_of(d) == Some(i))
            })
            .collect();
        let ts = on_gpu.iter().find_map(|p| match p.sharing {
            Sharing::TimeSlicing(interval) if !p.on_slices => Some(interval),
            _ => None,
        });
        let mps_whole = on_gpu
            .iter()
            .any(|p| matches!(p.sharing, Sharing::Mps { .. }) && !p.on_slices);
        let mode = match (ts, on_gpu.is_empty()) {
            (Some(_), _) => "timeslicing",
            (None, false) => "mps",
            (None, true) => "none",
        };
        let claims: BTreeSet<&str> = on_gpu.iter().map(|p| p.uid.as_str()).collect();
        let promised: u64 = on_gpu
            .iter()
            .filter(|p| !p.on_slices)
            .map(|p| p.memory_share())
            .sum();
        let name = &gpu.name;
        out.extend(differ(
            &format!("{name} sharing mode"),
            &view.mode.as_str(),
            &mode,
        ));
        out.extend(differ(
            &format!("{name} sharing claims"),
            &view.claims.iter().map(String::as_str).collect(),
            &claims,
        ));
        out.extend(differ(
            &format!("{name} memory promised"),
            &u64::try_from(view.memory_promised).unwrap_or(0),
            &promised,
        ));
        out.extend(differ(
            &format!("{name} interval"),
            &view.interval.as_str(),
            &ts.unwrap_or(""),
        ));
        let compute = if mps_whole {
            "EXCLUSIVE_PROCESS"
        } else {
            "DEFAULT"
        };
        out.extend(differ(
            &format!("{name} compute mode"),
            &view.compute_mode.as_str(),
            &compute,
        ));
        out.extend(differ(
            &format!("sim {name} EXCLUSIVE_PROCESS"),
            &look.hardware[i].exclusive_process,
            &mps_whole,
        ));
        if !view.problems.is_empty() {
            out.push(format!("{name} degraded: {:?}", view.problems));
        }
        let level = ts.map_or(0, |t| INTERVALS.iter().position(|i| *i == t).unwrap_or(99));
        let flag = format!("-i {} ", gpu.uuid);
        match extra.smi.iter().rev().find(|l| l.contains(&flag)) {
            Some(last) if !last.ends_with(&format!("--set-timeslice={level}")) => out.push(
                format!("{name}: the last nvidia-smi call was {last:?}; expected level {level}"),
            ),
            None if ts.is_some() => {
                out.push(format!("{name} is time-sliced; nvidia-smi never ran"))
            }
            _ => {}
        }
        for d in &view.mps_daemons {
            daemons.insert(d.pipe_dir.as_str(), d);
        }
    }
    let mut want: BTreeMap<Vec<String>, BTreeSet<&str>> = BTreeMap::new();
    for p in plans
        .iter()
        .filter(|p| matches!(p.sharing, Sharing::Mps { .. }))
    {
        want.entry(key_of(p)).or_default().insert(p.uid.as_str());
    }
    let mut seen: BTreeMap<Vec<String>, BTreeSet<&str>> = BTreeMap::new();
    for d in daemons.values() {
        let mut key: Vec<String> = d
            .uuids
            .iter()
            .map(|u| {
                node.gpu_by_uuid(u)
                    .map(|g| g.name.clone())
                    .or_else(|| mig_names.get(u.as_str()).map(|n| (*n).to_owned()))
                    .unwrap_or_else(|| u.clone())
            })
            .collect();
        key.sort();
        if d.state != "running" {
            out.push(format!("MPS daemon over {key:?} is {}", d.state));
        }
        seen.insert(key, d.claims.iter().map(String::as_str).collect());
    }
    out.extend(differ("MPS daemons and their claims", &seen, &want));
    let pids: BTreeSet<u32> = look.processes.iter().map(|p| p.pid).collect();
    let listed: BTreeSet<u32> = daemons.values().map(|d| d.pid).collect();
    out.extend(differ("MPS daemon processes (pids)", &pids, &listed));
    out.extend(differ(
        "MPS daemon folders",
        &extra.mps_folders.len(),
        &daemons.len(),
    ));
    out
}

fn inventory(look: &Look, plans: &[&Plan], node: &Catalogue) -> Vec<String> {
    let mut out = Vec::new();
    for d in &look.api.inventory.devices {
        let mut want: Vec<&str> = match node.device(&d.name) {
            Some(Device::Gpu(i)) => plans
                .iter()
                .filter(|p| holds(p, node).iter().any(|(g, _)| *g == i))
                .map(|p| p.uid.as_str())
                .collect(),
            Some(Device::Slice(_)) => plans
                .iter()
                .filter(|p| p.devices.contains(&d.name))
                .map(|p| p.uid.as_str())
                .collect(),
            None => vec!["(not in the catalogue)"],
        };
        want.sort_unstable();
        let mut seen: Vec<&str> = d.holders.iter().map(String::as_str).collect();
        seen.sort_unstable();
        out.extend(differ(&format!("holders of {}", d.name), &seen, &want));
    }
    out
}

/// Folder names under `dir` (empty when it does not exist).
pub fn folders(dir: &Path) -> Vec<String> {
    crate::harness::list(dir)
}
