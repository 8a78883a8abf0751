//! `create = "ahead"`: slices made before any claim asks, from the configured
//! layout, at start-up and on SIGHUP, with the fewest steps
//! ([`crate::mig::diff`]): instances that already match stay, held ones are
//! never touched, foreign ones are left alone.
//!
//! A ledger (`<state_dir>/mig-ahead.json`) remembers which instances the
//! daemon made ahead, so after a restart they are its own to reuse or destroy,
//! not foreign. An entry is written before its create and removed after its
//! destroy, so a crash in between leaves an entry whose instance may be
//! missing (harmless) but never an instance nobody owns.

use std::collections::BTreeSet;
use std::path::PathBuf;

use gpuslice_cdi::atomic::{AtomicStep, write_atomic_observed};
use serde::{Deserialize, Serialize};

use super::Mig;
use crate::claims::access::Cx;
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::config::{MigConfig, MigCreate};
use crate::crash::crash_point;
use crate::gpu::{GpuInstance, Placement};
use crate::inventory::GpuDevice;
use crate::mig::{
    ForeignPolicy, MigGeometry, Occupancy, Occupant, Ownership, Step, diff, plan_layout,
};
use crate::state::StateError;

const LEDGER: &str = "mig-ahead.json";

/// One instance made ahead.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(in crate::claims) struct Made {
    gpu_uuid: String,
    profile_id: u32,
    start: u32,
    size: u32,
}

impl Made {
    pub(in crate::claims) fn is(&self, gpu_uuid: &str, gi: &GpuInstance) -> bool {
        self.gpu_uuid == gpu_uuid
            && self.profile_id == gi.profile_id
            && self.start == gi.placement.start
            && self.size == gi.placement.size
    }
}

impl Mig {
    fn ledger_path(cx: &Cx<'_>) -> PathBuf {
        cx.env.state_dir().join(LEDGER)
    }

    /// The slices made ahead, as the ledger lists them.
    pub(in crate::claims) fn made_ahead(&self, cx: &Cx<'_>) -> BTreeSet<Made> {
        Self::load_ledger(cx)
    }

    fn load_ledger(cx: &Cx<'_>) -> BTreeSet<Made> {
        std::fs::read(Self::ledger_path(cx))
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    fn save_ledger(cx: &Cx<'_>, ledger: &BTreeSet<Made>) -> Result<(), ClaimError> {
        let uid = "(MIG ledger)".to_owned();
        let bytes = serde_json::to_vec_pretty(ledger).map_err(|e| StateError::Encode {
            what: "MIG ledger",
            uid: uid.clone(),
            reason: e.to_string(),
        })?;
        write_atomic_observed(cx.env.state_dir(), LEDGER, &bytes, 0o600, &ledger_steps).map_err(
            |error| {
                ClaimError::State(StateError::Write {
                    what: "MIG ledger",
                    uid,
                    error,
                })
            },
        )
    }

    /// Brings every MIG GPU to its layout (ahead mode), or removes idle
    /// slices made ahead under an earlier config (on-prepare mode). Returns
    /// problems for an operator.
    pub(super) fn apply_ahead_layouts(&self, cx: &Cx<'_>, mig: &MigConfig) -> Vec<String> {
        let mut ledger = Self::load_ledger(cx);
        let mut problems = Vec::new();
        // A GPU a claim holds whole has MIG off until the claim goes.
        let whole = lock(cx.table).held_whole();
        for gpu in &cx.env.inventory().gpus {
            if whole.contains(&gpu.info.uuid) {
                continue;
            }
            let wanted: Vec<&str> = match (mig.create, mig.for_gpu(gpu.info.index, &gpu.info.uuid))
            {
                (MigCreate::Ahead, Some(entry)) => {
                    entry.layout.iter().map(String::as_str).collect()
                }
                _ => Vec::new(),
            };
            if gpu.mig.is_none() {
                continue;
            }
            if let Err(err) = self.reshape(cx, gpu, &wanted, &mut ledger) {
                problems.push(format!("{} ({}): layout: {err}", gpu.name, gpu.info.uuid));
            }
        }
        problems
    }

    fn reshape(
        &self,
        cx: &Cx<'_>,
        gpu: &GpuDevice,
        wanted: &[&str],
        ledger: &mut BTreeSet<Made>,
    ) -> Result<(), ClaimError> {
        let Some(gpu_mig) = &gpu.mig else {
            return Ok(());
        };
        let index = gpu.info.index;
        Self::complete_made_ahead(cx, gpu, ledger)?;
        let instances = cx.env.backend.gpu_instances(index)?;
        let held = lock(cx.table).held_slices();
        let occupants: Vec<Occupant> = instances
            .iter()
            .map(|gi| {
                let ownership = if held.contains(&(gpu.info.uuid.clone(), gi.placement)) {
                    Ownership::Held
                } else if ledger.iter().any(|m| m.is(&gpu.info.uuid, gi)) {
                    Ownership::Ours
                } else {
                    Ownership::Foreign
                };
                Occupant::from_instance(gi, ownership)
            })
            .collect();
        let plan_err = |e: crate::mig::MigPlanError| ClaimError::LayoutUnplaceable {
            gpu: gpu.name.clone(),
            reason: e.to_string(),
        };
        // No layout to make ahead (on-prepare mode, or no entry for the
        // GPU): the target is what claims hold, so only idle slices made
        // ahead under an earlier config go.
        let held_profiles: Vec<&str> = occupants
            .iter()
            .filter(|o| o.ownership == Ownership::Held)
            .filter_map(|o| gpu_mig.profile_by_id(o.profile_id))
            .map(|p| p.name.as_str())
            .collect();
        let wanted = if wanted.is_empty() {
            held_profiles.as_slice()
        } else {
            wanted
        };
        let geometry = MigGeometry::new(gpu_mig.profiles.clone()).map_err(plan_err)?;
        let occupancy = Occupancy::new(&geometry, occupants).map_err(plan_err)?;
        let target = plan_layout(&occupancy, wanted, ForeignPolicy::Keep).map_err(plan_err)?;
        let change = diff(&occupancy, &target, ForeignPolicy::Keep).map_err(plan_err)?;
        for step in change.steps {
            match step {
                Step::Destroy { gi_id } => {
                    let gi = instances.iter().find(|g| g.id == gi_id);
                    for ci in gi.map(|g| g.compute_instances.as_slice()).unwrap_or(&[]) {
                        cx.env
                            .backend
                            .destroy_compute_instance(index, gi_id, ci.id)?;
                    }
                    cx.env.backend.destroy_gpu_instance(index, gi_id)?;
                    if let Some(gi) = gi {
                        ledger.retain(|m| !m.is(&gpu.info.uuid, gi));
                        Self::save_ledger(cx, ledger)?;
                    }
                }
                Step::Create {
                    profile_id,
                    placement,
                } => Self::create_ahead(cx, gpu, profile_id, placement, ledger)?,
            }
        }
        Ok(())
    }

    /// A slice made ahead whose compute instance is missing (a crash came
    /// between the two creates) gets it, so the layout offers only whole
    /// slices.
    fn complete_made_ahead(
        cx: &Cx<'_>,
        gpu: &GpuDevice,
        ledger: &BTreeSet<Made>,
    ) -> Result<(), ClaimError> {
        let index = gpu.info.index;
        for gi in cx.env.backend.gpu_instances(index)? {
            if gi.compute_instances.is_empty() && ledger.iter().any(|m| m.is(&gpu.info.uuid, &gi)) {
                tracing::warn!(gpu = %gpu.name, gi = gi.id, "a slice made ahead has no compute instance (a crash cut its creation short); making it");
                cx.env.backend.create_compute_instance(index, gi.id)?;
            }
        }
        Ok(())
    }

    fn create_ahead(
        cx: &Cx<'_>,
        gpu: &GpuDevice,
        profile_id: u32,
        placement: Placement,
        ledger: &mut BTreeSet<Made>,
    ) -> Result<(), ClaimError> {
        let index = gpu.info.index;
        ledger.insert(Made {
            gpu_uuid: gpu.info.uuid.clone(),
            profile_id,
            start: placement.start,
            size: placement.size,
        });
        Self::save_ledger(cx, ledger)?;
        let gi = cx
            .env
            .backend
            .create_gpu_instance(index, profile_id, placement)?;
        if let Err(err) = cx.env.backend.create_compute_instance(index, gi.id) {
            if let Err(undo) = cx.env.backend.destroy_gpu_instance(index, gi.id) {
                tracing::error!(gpu = %gpu.name, gi = gi.id, error = %undo, "could not destroy a GPU instance after its compute instance failed");
            }
            return Err(err.into());
        }
        tracing::info!(gpu = %gpu.name, gi = gi.id, profile_id, start = placement.start, "made a slice ahead");
        Ok(())
    }
}

/// The crash points of the ledger's durable steps.
fn ledger_steps(step: AtomicStep) {
    match step {
        AtomicStep::TempSynced => crash_point("mig_ledger.after_temp_synced"),
        AtomicStep::Renamed => crash_point("mig_ledger.after_rename"),
        AtomicStep::Unlinked => {}
    }
}
