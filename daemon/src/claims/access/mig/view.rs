//! The MIG instances of every GPU, which claim holds each, which device
//! offers it and whether gpusliced made it: what GetMigLayout answers (and
//! `gpuslicectl mig` draws). The instances come from the hardware backend;
//! a GPU whose instances cannot be listed shows none, with a warning.

use super::slice_placement;
use crate::claims::access::Cx;
use crate::claims::lock;
use crate::gpu::GpuInstance;
use crate::inventory::{GpuDevice, Inventory};
use crate::state::ClaimRecord;

/// One GPU of the inventory with its MIG instances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuMigView {
    /// The GPU.
    pub gpu: GpuDevice,
    /// Its GPU instances (none without MIG).
    pub instances: Vec<MigInstanceView>,
}

/// One GPU instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigInstanceView {
    /// What the backend lists.
    pub instance: GpuInstance,
    /// Its profile's name; "profile-id-<id>" when the GPU's profiles do not
    /// list it.
    pub profile: String,
    /// The inventory device that offers it, if one does.
    pub device: Option<String>,
    /// The claim that holds it, if one does.
    pub holder: Option<MigHolder>,
}

/// The claim holding a GPU instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigHolder {
    /// The claim uid.
    pub uid: String,
    /// Whether gpusliced made the instance for it (and destroys it when the
    /// claim goes).
    pub created: bool,
}

/// Every GPU of the inventory with its MIG instances and their holders.
pub(in crate::claims) fn layout(cx: &Cx<'_>) -> Vec<GpuMigView> {
    let inventory = cx.env.inventory();
    // The hardware first: the table lock is never held across it.
    let listed: Vec<(&GpuDevice, Vec<GpuInstance>)> = (inventory.gpus.iter())
        .map(|gpu| (gpu, gpu_instances(cx, gpu)))
        .collect();
    let table = lock(cx.table);
    listed
        .into_iter()
        .map(|(gpu, instances)| GpuMigView {
            gpu: gpu.clone(),
            instances: instances
                .into_iter()
                .map(|gi| instance(gi, gpu, &inventory, table.iter()))
                .collect(),
        })
        .collect()
}

/// The GPU instances of a GPU in MIG mode (none otherwise, or when they
/// cannot be listed).
fn gpu_instances(cx: &Cx<'_>, gpu: &GpuDevice) -> Vec<GpuInstance> {
    if gpu.mig.is_none() {
        return Vec::new();
    }
    cx.env
        .backend
        .gpu_instances(gpu.info.index)
        .unwrap_or_else(|err| {
            tracing::warn!(gpu = %gpu.name, error = %err, "cannot list MIG instances");
            Vec::new()
        })
}

fn instance<'a>(
    gi: GpuInstance,
    gpu: &GpuDevice,
    inventory: &Inventory,
    mut records: impl Iterator<Item = &'a ClaimRecord>,
) -> MigInstanceView {
    let profile = (gpu.mig.as_ref())
        .and_then(|m| m.profile_by_id(gi.profile_id))
        .map_or_else(
            || format!("profile-id-{}", gi.profile_id),
            |p| p.name.clone(),
        );
    let holder = records.find_map(|r| {
        let held = r.devices.iter().find_map(|d| {
            let m = d.mig.as_ref()?;
            let at = slice_placement(m);
            (d.uuid == gpu.info.uuid && m.profile_id == gi.profile_id && at == gi.placement)
                .then_some(m.created)
        })?;
        Some(MigHolder {
            uid: r.uid.clone(),
            created: held,
        })
    });
    let device = (inventory.mig.iter())
        .find(|m| {
            m.parent_uuid_is(inventory, &gpu.info.uuid)
                && m.profile.id == gi.profile_id
                && m.placement == gi.placement
        })
        .map(|m| m.name.clone());
    MigInstanceView {
        instance: gi,
        profile,
        device,
        holder,
    }
}
