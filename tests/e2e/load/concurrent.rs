//! Checks that hold at any instant, run while the load runs: a ledger
//! snapshot, a look at the node, a second snapshot, then every finding is
//! judged over that window (see [`super::ledger::Window`]), so a claim that
//! was mid-flight is never blamed, and anything of a claim that was gone
//! before the look began is.
//!
//! - ListClaims and GetInventory are each one instant of the claim table:
//!   no two prepared claims may hold devices that exclude each other, and no
//!   two holders (prepared or mid-prepare) may share a whole GPU held alone
//!   or overlapping slices (see [`Rules`]).
//! - Every spec and record file belongs to a claim that may exist; a claim
//!   prepared through the whole window has its spec (schema-valid, its CDI
//!   ids) and its `prepared` record.
//! - Every MIG instance on the simulated GPUs, every GPU with MIG switched
//!   off or in EXCLUSIVE_PROCESS, every MPS daemon process belongs to a
//!   claim that may exist and asked for it; one daemon per pipe dir at most.
//! - GetSharing: promised memory within the GPU's, no degraded GPU.

use std::collections::HashMap;

use super::holdings::{Hold, Rules, holds, violations};
use super::ledger::Window;
use super::node::{Catalogue, Device};
use super::observe::{Api, MpsProcess, SimGpu, spec_ids, uid_of};
use super::workload::Sharing;
use crate::cdi_schema::SchemaCheck;

/// Everything one look found, files already read.
#[derive(Debug)]
pub struct Look {
    pub api: Api,
    pub specs: Vec<String>,
    pub records: Vec<String>,
    /// Spec of each claim prepared at the look's start: parsed, or why not.
    pub spec_of: HashMap<String, Result<serde_json::Value, String>>,
    /// Record of each claim prepared at the look's start.
    pub record_of: HashMap<String, Result<serde_json::Value, String>>,
    pub hardware: Vec<SimGpu>,
    pub processes: Vec<MpsProcess>,
}

/// Every violation the look shows over `w`.
pub fn check(look: &Look, w: &Window, node: &Catalogue, schema: &SchemaCheck) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(claims(look, w, node));
    out.extend(files(look, w, schema));
    out.extend(hardware(look, w, node));
    out.extend(processes(look, w, node));
    for g in &look.api.sharing.gpus {
        if g.memory_promised > g.memory_total {
            out.push(format!(
                "GetSharing: {} has {} bytes promised of {}",
                g.device, g.memory_promised, g.memory_total
            ));
        }
        for p in &g.problems {
            out.push(format!("GetSharing: {} is degraded: {p}", g.device));
        }
        for d in &g.mps_daemons {
            for c in &d.claims {
                let mps = w
                    .plan(c)
                    .is_some_and(|p| matches!(p.sharing, Sharing::Mps { .. }));
                if !mps {
                    out.push(format!(
                        "GetSharing: MPS daemon {} lists claim {c}, which is gone or not MPS",
                        d.pipe_dir
                    ));
                }
            }
        }
    }
    out
}

fn claims(look: &Look, w: &Window, node: &Catalogue) -> Vec<String> {
    let mut out = Vec::new();
    let mut listed = Vec::new();
    for info in &look.api.claims.claims {
        let uid = info.claim.as_ref().map_or("", |c| c.uid.as_str());
        let Some(plan) = w.plan(uid) else {
            out.push(format!(
                "ListClaims shows claim {uid}, which is gone or unknown"
            ));
            continue;
        };
        let devices: Vec<&str> = info.devices.iter().map(|d| d.device.as_str()).collect();
        let ids: Vec<String> = info
            .devices
            .iter()
            .flat_map(|d| d.cdi_device_ids.iter().cloned())
            .collect();
        if devices != plan.devices || ids != plan.cdi_ids() || info.phase != "prepared" {
            out.push(format!(
                "ListClaims: claim {uid} is {} on {devices:?} with {ids:?}; asked for {:?}",
                info.phase, plan.devices
            ));
        }
        listed.push(plan.as_ref());
    }
    out.extend(violations(listed, node, Rules::All, "ListClaims"));
    let mut holders = Vec::new();
    for d in &look.api.inventory.devices {
        let whole_gpu = matches!(node.device(&d.name), Some(Device::Gpu(_)));
        for h in &d.holders {
            let Some(plan) = w.plan(h) else {
                out.push(format!(
                    "GetInventory: {} is held by claim {h}, which is gone or unknown",
                    d.name
                ));
                continue;
            };
            let alone = plan.sharing == Sharing::Alone && plan.devices.contains(&d.name);
            if whole_gpu && alone && d.available {
                out.push(format!(
                    "GetInventory: {} is held whole by claim {h} but shown available",
                    d.name
                ));
            }
            holders.push(plan.as_ref());
        }
    }
    holders.sort_by(|a, b| a.uid.cmp(&b.uid));
    holders.dedup_by(|a, b| a.uid == b.uid);
    out.extend(violations(holders, node, Rules::Table, "GetInventory"));
    out
}

fn files(look: &Look, w: &Window, schema: &SchemaCheck) -> Vec<String> {
    let mut out = Vec::new();
    for (what, names) in [("spec", &look.specs), ("record", &look.records)] {
        for name in names {
            let known = uid_of(name).is_some_and(|uid| w.may_exist(uid));
            if !known {
                out.push(format!("{what} file {name} belongs to no live claim"));
            }
        }
    }
    for e in w.steady() {
        let uid = &e.plan.uid;
        match look.spec_of.get(uid) {
            Some(Ok(spec)) => {
                let mut want = e.ids.clone();
                want.sort();
                if spec_ids(spec) != want {
                    out.push(format!(
                        "spec of prepared claim {uid} gives {:?}, the prepare returned {want:?}",
                        spec_ids(spec)
                    ));
                }
                let errors = schema.errors(spec);
                if !errors.is_empty() {
                    out.push(format!(
                        "spec of claim {uid} violates the CDI schema: {errors:?}"
                    ));
                }
            }
            Some(Err(why)) => out.push(format!("spec of prepared claim {uid}: {why}")),
            None => {}
        }
        match look.record_of.get(uid) {
            Some(Ok(r)) if r["uid"] == uid.as_str() && r["phase"] == "prepared" => {}
            Some(Ok(r)) => out.push(format!("record of prepared claim {uid}: {r}")),
            Some(Err(why)) => out.push(format!("record of prepared claim {uid}: {why}")),
            None => {}
        }
    }
    out
}

/// Whether a claim that may exist in `w` takes `wanted` of GPU `gpu`.
fn taken(w: &Window, node: &Catalogue, gpu: usize, wanted: impl Fn(&Hold) -> bool) -> bool {
    w.live().any(|e| {
        holds(&e.plan, node)
            .iter()
            .any(|(g, h)| *g == gpu && wanted(h))
    })
}

fn hardware(look: &Look, w: &Window, node: &Catalogue) -> Vec<String> {
    let mut out = Vec::new();
    for (i, (gpu, sim)) in node.gpus.iter().zip(&look.hardware).enumerate() {
        for &(start, size) in &sim.instances {
            let slice = Hold::Slice { start, size };
            if !taken(w, node, i, |h| *h == slice) {
                out.push(format!(
                    "sim: {} has a MIG instance at slices {start}..{} no live claim asked for",
                    gpu.name,
                    start + size
                ));
            }
        }
        let whole = || taken(w, node, i, |h| *h == Hold::Whole);
        if sim.mig_enabled != gpu.mig_managed && (!gpu.mig_managed || !whole()) {
            out.push(format!(
                "sim: {} has MIG {} without a claim that takes it whole",
                gpu.name,
                if sim.mig_enabled { "on" } else { "off" }
            ));
        }
        if sim.exclusive_process && !taken(w, node, i, |h| matches!(h, Hold::Mps { .. })) {
            out.push(format!(
                "sim: {} is in EXCLUSIVE_PROCESS without a live MPS claim",
                gpu.name
            ));
        }
    }
    out
}

fn processes(look: &Look, w: &Window, node: &Catalogue) -> Vec<String> {
    let mut out = Vec::new();
    let mut per_dir: HashMap<&str, Vec<String>> = HashMap::new();
    for p in &look.processes {
        per_dir
            .entry(p.pipe_dir.as_str())
            .or_default()
            .push(format!("pid {} ({})", p.pid, p.args.trim()));
        let whole: Option<Vec<String>> = p
            .uuids
            .iter()
            .map(|u| node.gpu_by_uuid(u).map(|g| g.name.clone()))
            .collect();
        let owned = w.live().any(|e| match (&e.plan.sharing, &whole) {
            (Sharing::Mps { .. }, Some(names)) if !e.plan.on_slices => {
                let mut asked = e.plan.devices.clone();
                asked.sort();
                let mut names = names.clone();
                names.sort();
                asked == names
            }
            (Sharing::Mps { .. }, None) => e.plan.on_slices,
            _ => false,
        });
        if !owned {
            out.push(format!(
                "MPS daemon pid {} over {:?} ({}) belongs to no live MPS claim",
                p.pid, p.uuids, p.pipe_dir
            ));
        }
    }
    for (dir, found) in per_dir {
        if found.len() > 1 {
            out.push(format!("MPS daemons {found:?} run on one pipe dir {dir}"));
        }
    }
    out
}
