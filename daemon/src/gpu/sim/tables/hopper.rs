//! Hopper: H100 SXM 80 GB, H100 NVL 94 GB, H200 141 GB and H20 96 GB, all 8
//! memory and 7 compute slices with the same profile ids. No NVENC.

use super::super::models::profile_index::{
    SLICE_1, SLICE_1_REV1, SLICE_1_REV2, SLICE_2, SLICE_3, SLICE_4, SLICE_7,
};
use super::super::models::{GiProfile, ModelSpec};
use super::{BRAND, P8_1G, P8_1G_2M, P8_2G, P8_3G, P8_4G, P8_7G, eng};

#[rustfmt::skip]
const H100_80GB_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.10gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 9984, engines: eng(1, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.10gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 9984, engines: eng(1, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.20gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 26,
        memory_mib: 20096, engines: eng(1, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.20gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 32,
        memory_mib: 20096, engines: eng(2, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.40gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 60,
        memory_mib: 40448, engines: eng(3, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.40gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 64,
        memory_mib: 40448, engines: eng(4, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.80gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 132,
        memory_mib: 81152, engines: eng(8, 7, 7, 1), max_count: 1, placements: P8_7G },
];

// Rows 1g.12gb to 3g.47gb as NVIDIA's `nvidia-smi mig -lgip` printed them
// (NVIDIA/gpu-operator#900 and #903, 2024-08; mig-parted#101: 10.75, 21.62
// and 46.38 GiB, ids 19/20/15/14, SMs 16/26/32). 4g.47gb has 3g.47gb's four
// memory slices, so its memory, as on every printed Hopper and Blackwell
// table. 7g.94gb (94848 MiB) is the third-party printout's the table first
// used, whose other rows were 128-256 MiB below NVIDIA's, so another driver;
// no NVIDIA source shows the row: unconfirmed.
// Placements per NVIDIA's H100 NVL `-lgipp` quote.
#[rustfmt::skip]
const H100_NVL_94GB_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.12gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 11008, engines: eng(1, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.12gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 11008, engines: eng(1, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.24gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 26,
        memory_mib: 22144, engines: eng(1, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.24gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 32,
        memory_mib: 22144, engines: eng(2, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.47gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 60,
        memory_mib: 47488, engines: eng(3, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.47gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 64,
        memory_mib: 47488, engines: eng(4, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.94gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 132,
        memory_mib: 94848, engines: eng(8, 7, 7, 1), max_count: 1, placements: P8_7G },
];

// Every row as `nvidia-smi mig -lgip` printed it on an H200 node's GPUs
// (NVIDIA/mig-parted#120, 2024-09-04: ids, counts, SMs, engines and 16.00,
// 32.25, 69.50 and 139.75 GiB). Placements are not printed there: those of
// H100, whose profile ids and slice sizes these are.
#[rustfmt::skip]
const H200_141GB_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.18gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 16384, engines: eng(1, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.18gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 16384, engines: eng(1, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.35gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 26,
        memory_mib: 33024, engines: eng(1, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.35gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 32,
        memory_mib: 33024, engines: eng(2, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.71gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 60,
        memory_mib: 71168, engines: eng(3, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.71gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 64,
        memory_mib: 71168, engines: eng(4, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.141gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 132,
        memory_mib: 143104, engines: eng(8, 7, 7, 1), max_count: 1, placements: P8_7G },
];

// NVIDIA publishes the names and counts only (NVIDIA/mig-parted's config,
// filter 0x232910DE, in its "H100-96GB, PG506-96GB, GH200, H20" group: 1g.12gb
// ×7, 1g.12gb+me, 1g.24gb ×4, 2g.24gb ×3, 3g.48gb ×2, 4g.48gb, 7g.96gb) and
// the guide's "Supported GPUs" row (GH100, CC 9.0, 96GB, 7 instances); no
// `-lgip` of an H20 was found. So the rest is inferred: ids, engines and
// placements as every GH100 table has them; memory H100 NVL's (the GH100
// nearest in memory) scaled by 97871/95830 MiB, to 128 MiB; SMs H100's shares of
// its 132 scaled to the H20's 78, to the nearest even count.
#[rustfmt::skip]
const H20_96GB_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.12gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 10,
        memory_mib: 11264, engines: eng(1, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.12gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 10,
        memory_mib: 11264, engines: eng(1, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.24gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 16,
        memory_mib: 22656, engines: eng(1, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.24gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 18,
        memory_mib: 22656, engines: eng(2, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.48gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 36,
        memory_mib: 48512, engines: eng(3, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.48gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 38,
        memory_mib: 48512, engines: eng(4, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.96gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 78,
        memory_mib: 96896, engines: eng(8, 7, 7, 1), max_count: 1, placements: P8_7G },
];

/// H100 SXM5 80GB HBM3 (PCI 0x2330); NVML reports 81559 MiB.
pub(in crate::gpu::sim) const H100_80GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA H100 80GB HBM3",
    brand: BRAND,
    architecture: "Hopper",
    compute_capability: (9, 0),
    memory_bytes: 85_520_809_984,
    pci_device_id: 0x2330,
    memory_slices: 8,
    compute_slices: 7,
    sm_count: 132,
    gi_profiles: H100_80GB_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide, r580 edition (2025), H100 80GB table; memory, ids and placements from `nvidia-smi mig -lgip/-lgipp`",
    driver: "not recorded: the guide (r580) gives fractions, and the printouts of the MiB named no driver",
};

/// H100 NVL (PCI 0x2321); NVML reports 95830 MiB.
pub(in crate::gpu::sim) const H100_NVL_94GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA H100 NVL",
    memory_bytes: 100_485_038_080,
    pci_device_id: 0x2321,
    gi_profiles: H100_NVL_94GB_PROFILES,
    source: "`nvidia-smi mig -lgip` of an H100 NVL printed by NVIDIA (NVIDIA/gpu-operator#900, #903, \
             2024-08; NVIDIA/mig-parted#101, 2024-07): ids, counts, SMs, engines, memory of 1g.12gb \
             to 3g.47gb; placements per NVIDIA's H100 NVL `-lgipp`; names as NVIDIA/mig-parted's \
             H100 NVL config (filter 0x232110DE); 7g.94gb memory from a third-party printout \
             of another driver, unconfirmed",
    driver: "not printed in NVIDIA's threads (2024-07/08); 7g.94gb's printout names none either",
    ..H100_80GB
};

/// H200 SXM (PCI 0x2335); NVML reports 143771 MiB.
pub(in crate::gpu::sim) const H200_141GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA H200",
    memory_bytes: 150_754_820_096,
    pci_device_id: 0x2335,
    gi_profiles: H200_141GB_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide, r580 edition (2025), H200 141GB table (names, \
             counts, engines); `nvidia-smi mig -lgip` of an H200 node (NVIDIA/mig-parted#120, \
             2024-09-04: ids, SMs, memory of every profile); placements inferred from H100 \
             (same GH100 die and profile ids)",
    driver: "not printed in NVIDIA/mig-parted#120 (2024-09-04)",
    ..H100_80GB
};

/// H20 (PCI 0x2329); NVML reports 97871 MiB.
pub(in crate::gpu::sim) const H20_96GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA H20",
    memory_bytes: 102_625_181_696,
    pci_device_id: 0x2329,
    sm_count: 78,
    gi_profiles: H20_96GB_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide, r580 edition (2025), 'Supported GPUs' (H20: GH100, \
             CC 9.0, 96GB, 7 instances; no H20 profile table); profile names and counts from \
             NVIDIA/mig-parted's config (filter 0x232910DE, at bd7160f4, 2026-08-21); name and \
             97871 MiB as nvidia-smi printed them (NVIDIA/nccl-tests#338, driver 550.54.14); 78 \
             SMs as third-party CUDA code gives them; ids, SMs, memory, engines and placements of \
             every profile inferred",
    driver: "none: no H20 profile was seen printed (the whole-GPU figures are 550.54.14's)",
    ..H100_80GB
};
