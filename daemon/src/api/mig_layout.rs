//! GetMigLayout: per GPU, the MIG instances that exist, which claim holds each
//! and whether gpusliced made it: what `gpuslicectl mig` draws. The engine
//! reads them ([`Engine::mig_view`]); this file maps them to proto.
//!
//! What it answers is the GPUs' occupancy, not the `[mig] layout` list. The
//! RPC, its messages and this file keep the name "layout" all the same: the
//! proto is a wire API that released clients call by name.

use gpuslice_proto::gpuslice::v1 as pb;

use crate::claims::{Engine, GpuMigView, MigInstanceView};

/// The MIG instances of every GPU.
pub fn mig_layout_response(engine: &Engine) -> pb::GetMigLayoutResponse {
    pb::GetMigLayoutResponse {
        gpus: engine.mig_view().into_iter().map(gpu_layout).collect(),
    }
}

fn gpu_layout(view: GpuMigView) -> pb::GpuMigLayout {
    let gpu = view.gpu;
    pb::GpuMigLayout {
        mig_mode: gpu.info.mig.to_string(),
        memory_slices: gpu.mig.as_ref().map_or(0, |m| m.memory_slices),
        device: gpu.name,
        uuid: gpu.info.uuid,
        index: gpu.info.index,
        instances: view.instances.into_iter().map(instance).collect(),
    }
}

fn instance(view: MigInstanceView) -> pb::MigInstance {
    let gi = view.instance;
    let ci = gi.compute_instances.first();
    pb::MigInstance {
        gpu_instance_id: gi.id,
        compute_instance_id: ci.map_or(0, |c| c.id),
        profile: view.profile,
        placement_start: gi.placement.start,
        placement_size: gi.placement.size,
        uuid: ci.map(|c| c.uuid.clone()).unwrap_or_default(),
        device: view.device.unwrap_or_default(),
        created_by_daemon: view.holder.as_ref().is_some_and(|h| h.created),
        holder: view.holder.map(|h| h.uid).unwrap_or_default(),
    }
}
