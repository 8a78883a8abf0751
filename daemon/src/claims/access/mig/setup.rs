//! MIG at start-up and on SIGHUP: MIG mode per the config, the inventory
//! rescanned (profiles can only be read in MIG mode), and instances nobody
//! asked for reported.
//!
//! A GPU that a whole-GPU claim holds keeps its mode until that claim goes. A
//! GPU that cannot switch (busy, or Ampere waiting for a reset) is a problem
//! an operator sees in `gpuslicectl status`, not a failed start.

use super::Mig;
use crate::claims::access::Cx;
use crate::claims::error::ClaimError;
use crate::claims::lock;
use crate::claims::table::Share;
use crate::config::MigConfig;
use crate::gpu::{GpuInstance, MigMode, MigSupport};
use crate::inventory::{GpuDevice, Inventory};
use crate::mig::Ownership;

/// How many times a scan starts over while claims take or free slices and
/// whole GPUs under it, before the last one is installed anyway.
const RESCAN_ATTEMPTS: u32 = 8;

impl Mig {
    /// Sets the `[mig]` in force.
    pub(in crate::claims) fn set_config(&self, mig: &MigConfig) {
        mig.clone_into(
            &mut self
                .books
                .config
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
    }

    /// GPUs the config selects, in MIG mode; returns the problems.
    pub(in crate::claims) fn enable_configured(&self, cx: &Cx<'_>, mig: &MigConfig) -> Vec<String> {
        let mut problems = Vec::new();
        for gpu in &cx.env.inventory().gpus {
            if mig.for_gpu(gpu.info.index, &gpu.info.uuid).is_some()
                && let Some(problem) = self.enable_mig_mode(cx, gpu)
            {
                problems.push(problem);
            }
        }
        problems
    }

    /// After the claims' slices are back: the inventory rescanned, the
    /// slices made ahead, rescanned again; returns the problems found.
    pub(in crate::claims) fn place_layouts(
        &self,
        cx: &Cx<'_>,
        mig: &MigConfig,
    ) -> Result<Vec<String>, ClaimError> {
        self.rescan(cx, mig)?;
        let mut problems = self.apply_ahead_layouts(cx, mig);
        let inventory = self.rescan(cx, mig)?;
        problems.extend(inventory.problems.iter().cloned());
        problems.extend(self.foreign_instances(cx, &inventory)?);
        Ok(problems)
    }

    /// Keeps the set-up's problems for status, logged once.
    pub(in crate::claims) fn keep_problems(&self, problems: &[String]) {
        for problem in problems {
            tracing::warn!(%problem, "MIG");
        }
        *lock(&self.books.problems) = problems.to_vec();
    }

    /// After a slice is made or destroyed, the offer is read again: the
    /// slice's `uuid` attribute comes or goes (the partitionable order itself
    /// never depends on what is held). A changed offer is a new generation. Best effort: a
    /// failed scan keeps the previous offer, which is still correct, only
    /// less up to date.
    pub(in crate::claims) fn refresh_offer(&self, cx: &Cx<'_>) {
        let mig = self
            .books
            .config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Err(err) = self.rescan(cx, &mig) {
            tracing::warn!(error = %err, "could not refresh the MIG offer after a change");
        }
    }

    /// Reads the inventory again and installs it; returns it. One scan at a
    /// time, so a scan that began later is installed later. The held slices
    /// and whole GPUs are read before the hardware; a claim that takes or
    /// frees one meanwhile (a whole-GPU claim switching MIG off, say) makes
    /// the scan start over, so what is installed never pairs hardware read
    /// after a change with holdings read before it (the slices of a GPU
    /// switched off for a whole-GPU claim would vanish from the offer).
    fn rescan(
        &self,
        cx: &Cx<'_>,
        mig: &MigConfig,
    ) -> Result<std::sync::Arc<Inventory>, ClaimError> {
        let _one_at_a_time = lock(&self.books.rescanning);
        let mut attempt = 1;
        let inventory = loop {
            // A snapshot: the table lock is never held across hardware calls.
            let (changes, slices, whole) = {
                let table = lock(cx.table);
                (table.mig_changes(), table.held_slices(), table.held_whole())
            };
            let inventory = self.scan_with(cx, mig, &slices, &whole)?;
            if lock(cx.table).mig_changes() == changes {
                break inventory;
            }
            if attempt == RESCAN_ATTEMPTS {
                // Claims kept changing: the one that changed last refreshes
                // the offer again when it is done (see its callers).
                tracing::debug!(
                    attempts = attempt,
                    "holdings kept changing during the MIG scan"
                );
                break inventory;
            }
            attempt += 1;
        };
        if cx.env.set_inventory(inventory) {
            tracing::info!(generation = cx.env.generation(), "inventory changed");
        }
        Ok(cx.env.inventory())
    }

    /// One scan of the hardware, with these slices and whole GPUs held.
    fn scan_with(
        &self,
        cx: &Cx<'_>,
        mig: &MigConfig,
        slices: &std::collections::HashSet<(String, crate::gpu::Placement)>,
        whole: &std::collections::HashSet<String>,
    ) -> Result<Inventory, ClaimError> {
        let ledger = self.made_ahead(cx);
        let owner = |gpu: &str, gi: &GpuInstance| {
            if slices.contains(&(gpu.to_owned(), gi.placement)) {
                Ownership::Held
            } else if ledger.iter().any(|m| m.is(gpu, gi)) {
                Ownership::Ours
            } else {
                Ownership::Foreign
            }
        };
        let held_whole = |gpu: &str| whole.contains(gpu);
        Ok(Inventory::scan(
            cx.env.backend.as_ref(),
            mig,
            &owner,
            &held_whole,
        )?)
    }

    fn enable_mig_mode(&self, cx: &Cx<'_>, gpu: &GpuDevice) -> Option<String> {
        let held_whole = lock(cx.table)
            .holdings(&gpu.info.uuid)
            .iter()
            .any(|h| matches!(h.share, Share::Whole | Share::Shared(_)));
        let name = format!("{} ({})", gpu.name, gpu.info.uuid);
        match gpu.info.mig {
            MigSupport::NotSupported => Some(format!(
                "{name}: the [mig] config selects it, but it does not support MIG"
            )),
            MigSupport::Supported {
                current: MigMode::Enabled,
                ..
            } => None,
            MigSupport::Supported { .. } if held_whole => None,
            MigSupport::Supported { .. } => {
                match cx
                    .env
                    .backend
                    .set_mig_mode(gpu.info.index, MigMode::Enabled)
                {
                    Ok(MigSupport::Supported {
                        current: MigMode::Enabled,
                        ..
                    }) => {
                        tracing::info!(gpu = %name, "MIG mode enabled");
                        None
                    }
                    Ok(_) => Some(format!(
                        "{name}: MIG mode is pending until the GPU is reset; reset it while \
                         idle (nvidia-smi -r -i {}) or reboot",
                        gpu.info.index
                    )),
                    Err(err) => Some(format!(
                        "{name}: cannot enable MIG mode: {err}; stop what runs on it and send \
                         SIGHUP (systemctl reload gpusliced)"
                    )),
                }
            }
        }
    }

    /// GPU instances on MIG GPUs that no claim record accounts for.
    fn foreign_instances(
        &self,
        cx: &Cx<'_>,
        inventory: &Inventory,
    ) -> Result<Vec<String>, ClaimError> {
        let records = lock(cx.table).records();
        let mut found = Vec::new();
        for gpu in inventory.gpus.iter().filter(|g| g.mig.is_some()) {
            for gi in cx.env.backend.gpu_instances(gpu.info.index)? {
                let ours = records.iter().flat_map(|r| &r.devices).any(|d| {
                    d.uuid == gpu.info.uuid
                        && d.mig.as_ref().is_some_and(|m| {
                            m.profile_id == gi.profile_id
                                && super::slice_placement(m) == gi.placement
                        })
                });
                let offered = inventory.mig.iter().any(|m| {
                    m.parent_uuid_is(inventory, &gpu.info.uuid)
                        && m.profile.id == gi.profile_id
                        && m.placement == gi.placement
                });
                if !ours && !offered {
                    found.push(format!(
                        "{} ({}): GPU instance {} (profile id {}, memory slices {}..{}) was not \
                         created by gpusliced; left alone",
                        gpu.name,
                        gpu.info.uuid,
                        gi.id,
                        gi.profile_id,
                        gi.placement.start,
                        gi.placement.start.saturating_add(gi.placement.size)
                    ));
                }
            }
        }
        Ok(found)
    }
}
