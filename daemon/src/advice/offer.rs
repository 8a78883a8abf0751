//! What the node offers, per GPU model (NVML's product name), for the rule
//! ([`super::rule::Offer`]) and the model's MIG profile table:
//!
//! - **MIG** when a GPU of the model runs in MIG mode with its profiles in
//!   the inventory (a `[mig]` layout, or partitionable);
//! - **MPS** when MPS is usable (`[mps]`'s control program is there) and a
//!   GPU of the model runs whole (not in MIG mode);
//! - **time-slicing** likewise with `[timeslice]`'s nvidia-smi.
//!
//! The profile table is the model's, which NVML reports for a GPU with MIG
//! whatever its MIG mode: a claim on a whole H100 of a node that runs no MIG
//! still learns which profile it would fit (the rule's "but no ... runs MIG
//! on this node" note), and a GPU without MIG (an L4) has none, so it is
//! never advised one. MPS is offered only on GPUs that run it. Pure: whether
//! the tools are there is the caller's to find out.

use std::collections::BTreeMap;

use super::rule::{GpuModel, Offer};
use crate::gpu::{MigMode, MigProfile, MigSupport};
use crate::inventory::{GpuDevice, Inventory};

/// Which sharing tools the node can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usable {
    /// MPS (`[mps]` control program present).
    pub mps: bool,
    /// Time-slicing (`[timeslice]` nvidia-smi present).
    pub timeslice: bool,
}

/// One GPU model of the node and what the node offers on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelOffer {
    /// NVML's product name.
    pub product_name: String,
    /// Memory of one GPU, bytes (the smallest of the model's GPUs).
    pub memory_bytes: u64,
    /// The model's MIG profile table; empty when no GPU of it has one.
    pub mig_profiles: Vec<MigProfile>,
    /// The forms offered.
    pub offer: Offer,
}

impl ModelOffer {
    /// The model as the rule reads it.
    pub fn gpu_model(&self) -> GpuModel<'_> {
        GpuModel {
            product_name: &self.product_name,
            memory_bytes: self.memory_bytes,
            mig_profiles: &self.mig_profiles,
        }
    }
}

/// Every model of the node, by product name.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NodeOffer {
    /// By product name.
    pub models: BTreeMap<String, ModelOffer>,
}

impl NodeOffer {
    /// The model of the GPU named `gpu` ("gpu-3") in `inventory`.
    pub fn of_gpu(&self, inventory: &Inventory, gpu: &str) -> Option<&ModelOffer> {
        let device = inventory.gpus.iter().find(|g| g.name == gpu)?;
        self.models.get(&device.info.product_name)
    }
}

/// Whether `gpu` runs in MIG mode now.
pub fn in_mig_mode(gpu: &GpuDevice) -> bool {
    matches!(
        gpu.info.mig,
        MigSupport::Supported {
            current: MigMode::Enabled,
            ..
        }
    )
}

/// What the node offers on each model of `inventory`.
pub fn node_offer(inventory: &Inventory, usable: Usable) -> NodeOffer {
    let mut models: BTreeMap<String, ModelOffer> = BTreeMap::new();
    for gpu in &inventory.gpus {
        let entry = models
            .entry(gpu.info.product_name.clone())
            .or_insert_with(|| ModelOffer {
                product_name: gpu.info.product_name.clone(),
                memory_bytes: gpu.info.memory_bytes,
                mig_profiles: Vec::new(),
                offer: Offer::default(),
            });
        entry.memory_bytes = entry.memory_bytes.min(gpu.info.memory_bytes);
        if entry.mig_profiles.is_empty() {
            entry.mig_profiles.clone_from(&gpu.model_profiles);
        }
        let mig = in_mig_mode(gpu);
        let managed = gpu.mig.as_ref().is_some_and(|m| !m.profiles.is_empty());
        entry.offer.mig |= mig && managed;
        entry.offer.mps |= usable.mps && !mig && gpu.features.mps;
        entry.offer.timeslice |= usable.timeslice && !mig;
    }
    NodeOffer { models }
}

#[cfg(test)]
mod tests;
