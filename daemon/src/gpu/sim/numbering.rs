//! NVML's numbering, as the simulator reproduces it: GPU instance ids from
//! placements, compute-instance profile ids from slice counts, MIG device
//! UUIDs, and a table row as the boundary's [`MigProfile`]. Pure functions.

use uuid::Uuid;

use super::models::GiProfile;
use crate::gpu::{MigProfile, Placement};

/// Namespace of simulated MIG device UUIDs (fixed; never change it).
const MIG_UUID_NAMESPACE: Uuid = Uuid::from_u128(0x2f4b_91c7_5d3e_4a08_b6e1_7c90_d4a2_3e15);

/// The GPU instance id NVML gives a placement: its node in the binary tree of
/// memory slices, numbered breadth first (A100: 8 slices at 0 → 0, 4 at 0/4 →
/// 1/2, 2 at 0..6 → 3..6, 1 at 0..6 → 7..13), as `nvidia-smi mig -lgi` shows.
pub fn gi_id(total_slices: u32, placement: Placement) -> u32 {
    let size = placement.size.max(1);
    (total_slices / size).saturating_sub(1) + placement.start / size
}

/// The compute-instance profile spanning `slices` compute slices
/// (`NVML_COMPUTE_INSTANCE_PROFILE_*`: 1, 2, 3, 4, 7, 8, 6 slices → 0..6).
pub fn ci_profile_id(slices: u32) -> u32 {
    match slices {
        1 => 0,
        2 => 1,
        3 => 2,
        4 => 3,
        7 => 4,
        8 => 5,
        6 => 6,
        other => other,
    }
}

/// "MIG-<uuid v5>" of the GPU, GI id, CI id and creation serial: stable for one
/// instance, new for an instance recreated at the same place (as on hardware).
pub fn mig_uuid(gpu_uuid: &str, gi_id: u32, ci_id: u32, serial: u64) -> String {
    let name = format!("{gpu_uuid}/{gi_id}/{ci_id}/{serial}");
    format!("MIG-{}", Uuid::new_v5(&MIG_UUID_NAMESPACE, name.as_bytes()))
}

/// A table row as the boundary's profile.
pub fn mig_profile(p: &GiProfile) -> MigProfile {
    MigProfile {
        name: p.name.to_owned(),
        index: p.index,
        id: p.id,
        memory_slices: p.memory_slices,
        compute_slices: p.compute_slices,
        multiprocessors: p.sm_count,
        memory_bytes: p.memory_mib.saturating_mul(1 << 20),
        copy_engines: p.engines.copy,
        decoders: p.engines.decoders,
        encoders: p.engines.encoders,
        jpegs: p.engines.jpeg,
        ofas: p.engines.ofa,
        max_count: p.max_count,
        placements: p.placements.to_vec(),
    }
}
