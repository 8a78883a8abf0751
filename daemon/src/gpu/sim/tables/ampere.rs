//! Ampere: A100 40 GB and 80 GB (8 memory, 7 compute slices) and A30 (4 and
//! 4). Encoder counts are 0: none of them has NVENC.

use super::super::models::profile_index::{
    SLICE_1, SLICE_1_REV1, SLICE_1_REV2, SLICE_2, SLICE_2_REV1, SLICE_3, SLICE_4, SLICE_7,
};
use super::super::models::{GiProfile, ModelSpec};
use super::{BRAND, P4_1G, P4_2G, P4_4G, P8_1G, P8_1G_2M, P8_2G, P8_3G, P8_4G, P8_7G, eng};

#[rustfmt::skip]
const A100_40GB_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.5gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 14,
        memory_mib: 4864, engines: eng(1, 0, 0, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.5gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 14,
        memory_mib: 4864, engines: eng(1, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.10gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 14,
        memory_mib: 9856, engines: eng(1, 1, 0, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.10gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 28,
        memory_mib: 9856, engines: eng(2, 1, 0, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.20gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 42,
        memory_mib: 19968, engines: eng(3, 2, 0, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.20gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 56,
        memory_mib: 19968, engines: eng(4, 2, 0, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.40gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 98,
        memory_mib: 40192, engines: eng(7, 5, 1, 1), max_count: 1, placements: P8_7G },
];

// Same IDs, placements, SMs and engines as the 40GB part (MIG guide note);
// memory from a 3rd-party lgip (mig-parted#97).
#[rustfmt::skip]
const A100_80GB_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.10gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 14,
        memory_mib: 9728, engines: eng(1, 0, 0, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.10gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 14,
        memory_mib: 9728, engines: eng(1, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.20gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 14,
        memory_mib: 19968, engines: eng(1, 1, 0, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.20gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 28,
        memory_mib: 19968, engines: eng(2, 1, 0, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.40gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 42,
        memory_mib: 40192, engines: eng(3, 2, 0, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.40gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 56,
        memory_mib: 40192, engines: eng(4, 2, 0, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.80gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 98,
        memory_mib: 80384, engines: eng(7, 5, 1, 1), max_count: 1, placements: P8_7G },
];

// A30 has 4 memory and 4 compute slices, and two "+me" profiles. The 1g.6gb
// decoder count conflicts between the MIG guide (0) and a 3rd-party lgip (1):
// the guide's 0 is used. 2g.12gb+me engines are the R525+ values.
#[rustfmt::skip]
const A30_24GB_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.6gb", index: SLICE_1, id: 14, memory_slices: 1, compute_slices: 1, sm_count: 14,
        memory_mib: 5952, engines: eng(1, 0, 0, 0), max_count: 4, placements: P4_1G },
    GiProfile { name: "1g.6gb+me", index: SLICE_1_REV1, id: 21, memory_slices: 1, compute_slices: 1, sm_count: 14,
        memory_mib: 5952, engines: eng(1, 1, 1, 1), max_count: 1, placements: P4_1G },
    GiProfile { name: "2g.12gb", index: SLICE_2, id: 5, memory_slices: 2, compute_slices: 2, sm_count: 28,
        memory_mib: 11968, engines: eng(2, 2, 0, 0), max_count: 2, placements: P4_2G },
    GiProfile { name: "2g.12gb+me", index: SLICE_2_REV1, id: 6, memory_slices: 2, compute_slices: 2, sm_count: 28,
        memory_mib: 11968, engines: eng(2, 2, 1, 1), max_count: 1, placements: P4_2G },
    GiProfile { name: "4g.24gb", index: SLICE_4, id: 0, memory_slices: 4, compute_slices: 4, sm_count: 56,
        memory_mib: 24064, engines: eng(4, 4, 1, 1), max_count: 1, placements: P4_4G },
];

/// A100-SXM4-40GB (PCI 0x20b0).
pub(in crate::gpu::sim) const A100_40GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA A100-SXM4-40GB",
    brand: BRAND,
    architecture: "Ampere",
    compute_capability: (8, 0),
    memory_bytes: 42_949_672_960,
    pci_device_id: 0x20b0,
    memory_slices: 8,
    compute_slices: 7,
    sm_count: 108,
    gi_profiles: A100_40GB_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide (docs.nvidia.com/datacenter/tesla/mig-user-guide), r580 edition (2025), 'Supported MIG Profiles', A100 40GB table; memory, ids and placements from `nvidia-smi mig -lgip/-lgipp`",
    driver: "not recorded: the printouts of the MiB named no driver (1g.10gb moves between 9.62 and \
             9.75 GiB across releases)",
};

/// A100-SXM4-80GB (PCI 0x20b2).
pub(in crate::gpu::sim) const A100_80GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA A100-SXM4-80GB",
    memory_bytes: 85_899_345_920,
    pci_device_id: 0x20b2,
    gi_profiles: A100_80GB_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide, r580 edition (2025), A100 80GB note (same ids, SMs and placements as the 40GB part); memory from a published `nvidia-smi mig -lgip` (NVIDIA/mig-parted#97)",
    driver: "not printed in NVIDIA/mig-parted#97",
    ..A100_40GB
};

/// A30 (PCI 0x20b7).
pub(in crate::gpu::sim) const A30_24GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA A30",
    memory_bytes: 25_769_803_776,
    pci_device_id: 0x20b7,
    memory_slices: 4,
    compute_slices: 4,
    sm_count: 56,
    gi_profiles: A30_24GB_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide, r580 edition (2025), A30 24GB table; ids and placements from a published `nvidia-smi mig -lgipp`",
    driver: "not recorded: the printout named no driver",
    ..A100_40GB
};
