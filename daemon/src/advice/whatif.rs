//! The node's what-if: what accepting every advice at once would do.
//!
//! Claims keep their device unless advised otherwise; a give-back leaves.
//! Advised MIG slices are packed largest first onto GPUs of their model
//! that run MIG (GPUs that already hold slices first), each candidate
//! checked with the MIG planner ([`crate::mig::plan_layout`], foreign
//! instances kept) against the slices staying there; failing those, onto a
//! GPU of the model that the moves left empty, which then needs a `[mig]`
//! layout. MPS and time-slice advice is packed first-fit decreasing by
//! memory onto whole GPUs of the model running the same kind of sharing
//! (MPS threads at most 100 per GPU), else onto an emptied GPU. A GPU that
//! held a claim before and holds none after is freed. Pure.

use std::collections::{BTreeMap, BTreeSet};

use super::node::ClaimAdvice;
use super::rule::Form;
use crate::gpu::{MigProfile, Placement};
use crate::mig::{ForeignPolicy, MigGeometry, Occupancy, Occupant, Ownership, plan_layout};
use crate::state::AccessKind;

/// One whole GPU as the what-if sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuState {
    /// Inventory name.
    pub name: String,
    /// NVML's product name.
    pub product_name: String,
    /// Memory, bytes.
    pub memory_bytes: u64,
    /// Its MIG profile table; empty when unknown.
    pub profiles: Vec<MigProfile>,
    /// Whether it runs in MIG mode.
    pub mig_mode: bool,
    /// The slices claims hold on it: (claim uid, profile id, placement).
    pub held_slices: Vec<(String, u32, Placement)>,
}

/// What accepting every advice would do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WhatIf {
    /// GPUs no claim would hold any more, in inventory order.
    pub gpus_freed: Vec<String>,
    /// The moves, one line each: "ml/notebook gpu-3 -> gpu-0 mig 1g.10gb".
    pub moves: Vec<String>,
    /// The `[mig]` layouts needed on GPUs that do not run MIG now.
    pub mig_layouts: Vec<String>,
    /// GPUs that held a claim before.
    pub gpus_held: usize,
}

impl WhatIf {
    /// In words: "accepting every advice frees 1 of 4 held GPUs (gpu-3)".
    pub fn summary(&self) -> String {
        let freed = match self.gpus_freed.len() {
            0 => "frees no GPU".to_owned(),
            n => format!(
                "frees {n} of {} held GPU{} ({})",
                self.gpus_held,
                if self.gpus_held == 1 { "" } else { "s" },
                self.gpus_freed.join(", ")
            ),
        };
        let layouts = if self.mig_layouts.is_empty() {
            String::new()
        } else {
            format!("; needs [mig] layouts: {}", self.mig_layouts.join("; "))
        };
        format!("accepting every advice {freed}{layouts}")
    }
}

/// A form a claim moves to, packed somewhere.
struct Move<'a> {
    claim: &'a ClaimAdvice,
    from: &'a str,
    form: &'a Form,
}

/// The GPUs after the moves: who is on each, and what was added.
struct Plan<'a> {
    gpus: &'a [GpuState],
    /// GPU name → claims staying or moved there.
    on: BTreeMap<&'a str, BTreeSet<&'a str>>,
    /// GPU name → MIG profiles added.
    added: BTreeMap<&'a str, Vec<&'a str>>,
    /// GPU name → (MPS or time-slicing, memory, threads) added.
    shared: BTreeMap<&'a str, (AccessKind, u64, u32)>,
    moves: Vec<String>,
    mig_layouts: BTreeSet<&'a str>,
}

/// The what-if of `claims` (the node's advice) on `gpus`.
pub fn what_if(gpus: &[GpuState], claims: &[ClaimAdvice]) -> WhatIf {
    let mut plan = Plan {
        gpus,
        on: BTreeMap::new(),
        added: BTreeMap::new(),
        shared: BTreeMap::new(),
        moves: Vec::new(),
        mig_layouts: BTreeSet::new(),
    };
    let mut held: BTreeSet<&str> = BTreeSet::new();
    let mut moving = Vec::new();
    for claim in claims {
        for device in &claim.devices {
            held.insert(&device.gpu);
            match &device.advice.form {
                Form::Abstain | Form::Keep => {
                    plan.on.entry(&device.gpu).or_default().insert(&claim.uid);
                }
                Form::GiveBack => {}
                form => moving.push(Move {
                    claim,
                    from: &device.gpu,
                    form,
                }),
            }
        }
    }
    moving.sort_by_key(|m| std::cmp::Reverse(m.form.memory_bytes().unwrap_or(0)));
    for m in &moving {
        plan.place(m);
    }
    let gpus_freed = gpus
        .iter()
        .filter(|g| held.contains(g.name.as_str()))
        .filter(|g| plan.on.get(g.name.as_str()).is_none_or(BTreeSet::is_empty))
        .map(|g| g.name.clone())
        .collect();
    let mig_layouts = plan
        .mig_layouts
        .iter()
        .map(|g| plan.layout_line(g))
        .collect();
    WhatIf {
        gpus_freed,
        moves: plan.moves,
        mig_layouts,
        gpus_held: held.len(),
    }
}

impl<'a> Plan<'a> {
    fn model_of(&self, gpu: &str) -> Option<&'a GpuState> {
        self.gpus.iter().find(|g| g.name == gpu)
    }

    fn occupied(&self, gpu: &str) -> bool {
        self.on.get(gpu).is_some_and(|c| !c.is_empty())
    }

    /// Places one move, or leaves the claim where it is.
    fn place(&mut self, m: &Move<'a>) {
        let Some(from) = self.model_of(m.from) else {
            self.stay(m);
            return;
        };
        let same_model: Vec<&'a GpuState> = self
            .gpus
            .iter()
            .filter(|g| g.product_name == from.product_name)
            .collect();
        let placed = match m.form {
            Form::Mig { profile, .. } => self.place_mig(&same_model, profile),
            Form::Mps {
                memory_bytes,
                thread_percentage,
            } => self.place_shared(
                &same_model,
                AccessKind::Mps,
                *memory_bytes,
                *thread_percentage,
            ),
            Form::TimeSlicing { memory_bytes, .. } => {
                self.place_shared(&same_model, AccessKind::TimeSlicing, *memory_bytes, 0)
            }
            Form::Abstain | Form::Keep | Form::GiveBack => None,
        };
        match placed {
            Some((gpu, what)) => {
                self.on.entry(gpu).or_default().insert(&m.claim.uid);
                self.moves.push(format!(
                    "{}/{} {} -> {gpu} {what}",
                    m.claim.namespace, m.claim.name, m.from
                ));
            }
            None => self.stay(m),
        }
    }

    fn stay(&mut self, m: &Move<'a>) {
        self.on.entry(m.from).or_default().insert(&m.claim.uid);
    }

    /// A GPU of the model running MIG whose staying and added slices plus
    /// `profile` the planner can lay out; else an emptied GPU of the model.
    fn place_mig(
        &mut self,
        same_model: &[&'a GpuState],
        profile: &'a str,
    ) -> Option<(&'a str, String)> {
        // Running MIG now, or given a layout by an earlier move.
        let mut running: Vec<&'a GpuState> = same_model
            .iter()
            .copied()
            .filter(|g| g.mig_mode || self.mig_layouts.contains(g.name.as_str()))
            .collect();
        running.sort_by_key(|g| std::cmp::Reverse(self.occupied(&g.name)));
        let emptied = same_model
            .iter()
            .copied()
            .filter(|g| !g.mig_mode && !g.profiles.is_empty() && !self.occupied(&g.name));
        for gpu in running.into_iter().chain(emptied) {
            if self.fits_mig(gpu, profile) {
                self.added.entry(&gpu.name).or_default().push(profile);
                if !gpu.mig_mode {
                    self.mig_layouts.insert(&gpu.name);
                }
                return Some((&gpu.name, format!("mig {profile}")));
            }
        }
        None
    }

    /// Whether the planner lays out `gpu`'s staying slices, those added and
    /// `profile`.
    fn fits_mig(&self, gpu: &GpuState, profile: &str) -> bool {
        let Ok(geometry) = MigGeometry::new(gpu.profiles.clone()) else {
            return false;
        };
        let staying = self.on.get(gpu.name.as_str());
        let occupants: Vec<Occupant> = gpu
            .held_slices
            .iter()
            .filter(|(uid, ..)| staying.is_some_and(|s| s.contains(uid.as_str())))
            .zip(0u32..)
            .map(|((_, profile_id, placement), gi_id)| Occupant {
                gi_id,
                profile_id: *profile_id,
                placement: *placement,
                ownership: Ownership::Held,
            })
            .collect();
        let Ok(occupancy) = Occupancy::new(&geometry, occupants.clone()) else {
            return false;
        };
        let names: Vec<&str> = occupants
            .iter()
            .filter_map(|o| gpu.profiles.iter().find(|p| p.id == o.profile_id))
            .map(|p| p.name.as_str())
            .chain(
                self.added
                    .get(gpu.name.as_str())
                    .into_iter()
                    .flatten()
                    .copied(),
            )
            .chain([profile])
            .collect();
        plan_layout(&occupancy, &names, ForeignPolicy::Keep).is_ok()
    }

    /// First fit on a whole GPU of the model: one sharing `kind` already
    /// (staying claims of other kinds make it unusable), memory and threads
    /// left; else an emptied one.
    fn place_shared(
        &mut self,
        same_model: &[&'a GpuState],
        kind: AccessKind,
        memory: u64,
        threads: u32,
    ) -> Option<(&'a str, String)> {
        let usable = |plan: &Self, g: &GpuState| -> bool {
            if g.mig_mode {
                return false;
            }
            let (k, used, used_threads) = plan
                .shared
                .get(g.name.as_str())
                .copied()
                .unwrap_or((kind, 0, 0));
            let fresh = !plan.shared.contains_key(g.name.as_str()) && !plan.occupied(&g.name);
            let same = plan.shared.contains_key(g.name.as_str()) && k == kind;
            (fresh || same)
                && used.saturating_add(memory) <= g.memory_bytes
                && (kind != AccessKind::Mps || used_threads + threads <= 100)
        };
        let mut candidates: Vec<&'a GpuState> = same_model.to_vec();
        candidates.sort_by_key(|g| !self.shared.contains_key(g.name.as_str()));
        let gpu = candidates.into_iter().find(|g| usable(self, g))?;
        let entry = self.shared.entry(&gpu.name).or_insert((kind, 0, 0));
        entry.1 = entry.1.saturating_add(memory);
        entry.2 += threads;
        Some((&gpu.name, kind.to_string()))
    }

    /// "gpu-3 [1g.10gb×2, 3g.40gb]".
    fn layout_line(&self, gpu: &str) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for p in self.added.get(gpu).into_iter().flatten() {
            *counts.entry(p).or_default() += 1;
        }
        let parts: Vec<String> = counts
            .iter()
            .map(|(p, n)| {
                if *n == 1 {
                    (*p).to_owned()
                } else {
                    format!("{p}×{n}")
                }
            })
            .collect();
        format!("{gpu} [{}]", parts.join(", "))
    }
}

#[cfg(test)]
mod tests;
