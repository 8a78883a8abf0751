//! GetMigLayout: per GPU, the MIG instances that exist, which claim holds each
//! and whether gpusliced made it: what `gpuslicectl mig` draws.

use gpuslice_proto::gpuslice::v1 as pb;

use crate::claims::Engine;
use crate::gpu::{GpuInstance, MigMode, MigSupport};
use crate::inventory::{GpuDevice, Inventory};
use crate::state::ClaimRecord;

/// The layout of every GPU.
pub fn mig_layout_response(engine: &Engine) -> pb::GetMigLayoutResponse {
    let inventory = engine.inventory();
    let records = engine.claims();
    let gpus = inventory
        .gpus
        .iter()
        .map(|gpu| {
            let instances = match gpu.mig {
                Some(_) => engine
                    .backend()
                    .gpu_instances(gpu.info.index)
                    .unwrap_or_else(|err| {
                        tracing::warn!(gpu = %gpu.name, error = %err, "cannot list MIG instances");
                        Vec::new()
                    }),
                None => Vec::new(),
            };
            pb::GpuMigLayout {
                device: gpu.name.clone(),
                uuid: gpu.info.uuid.clone(),
                index: gpu.info.index,
                mig_mode: mig_mode_text(gpu.info.mig),
                memory_slices: gpu.mig.as_ref().map_or(0, |m| m.memory_slices),
                instances: instances
                    .iter()
                    .map(|gi| instance(gi, gpu, &inventory, &records))
                    .collect(),
            }
        })
        .collect();
    pb::GetMigLayoutResponse { gpus }
}

fn instance(
    gi: &GpuInstance,
    gpu: &GpuDevice,
    inventory: &Inventory,
    records: &[ClaimRecord],
) -> pb::MigInstance {
    let profile = gpu
        .mig
        .as_ref()
        .and_then(|m| m.profile_by_id(gi.profile_id))
        .map_or_else(
            || format!("profile-id-{}", gi.profile_id),
            |p| p.name.clone(),
        );
    let holder = records.iter().find_map(|r| {
        r.devices
            .iter()
            .find(|d| {
                d.uuid == gpu.info.uuid
                    && d.mig.as_ref().is_some_and(|m| {
                        m.profile_id == gi.profile_id
                            && m.start == gi.placement.start
                            && m.size == gi.placement.size
                    })
            })
            .map(|d| (r.uid.clone(), d.mig.as_ref().is_some_and(|m| m.created)))
    });
    let device = inventory
        .mig
        .iter()
        .find(|m| {
            m.parent_uuid_is(inventory, &gpu.info.uuid)
                && m.profile.id == gi.profile_id
                && m.placement == gi.placement
        })
        .map(|m| m.name.clone())
        .unwrap_or_default();
    let ci = gi.compute_instances.first();
    pb::MigInstance {
        gpu_instance_id: gi.id,
        compute_instance_id: ci.map_or(0, |c| c.id),
        profile,
        placement_start: gi.placement.start,
        placement_size: gi.placement.size,
        uuid: ci.map(|c| c.uuid.clone()).unwrap_or_default(),
        device,
        created_by_daemon: holder.as_ref().is_some_and(|(_, created)| *created),
        holder: holder.map(|(uid, _)| uid).unwrap_or_default(),
    }
}

/// "enabled", "disabled", "enabled (pending disabled)" or "unsupported".
pub fn mig_mode_text(mig: MigSupport) -> String {
    let word = |mode| match mode {
        MigMode::Enabled => "enabled",
        MigMode::Disabled => "disabled",
    };
    match mig {
        MigSupport::NotSupported => "unsupported".into(),
        MigSupport::Supported { current, pending } if current == pending => word(current).into(),
        MigSupport::Supported { current, pending } => {
            format!("{} (pending {})", word(current), word(pending))
        }
    }
}
