//! Hopper: H100 SXM 80 GB, H100 NVL 94 GB and H200 141 GB, all 8 memory and
//! 7 compute slices with the same profile ids. No NVENC.

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

// From a 3rd-party lgip; placements per NVIDIA's H100 NVL lgipp quote.
#[rustfmt::skip]
const H100_NVL_94GB_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.12gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 10880, engines: eng(1, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.12gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 10880, engines: eng(1, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.24gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 26,
        memory_mib: 22016, engines: eng(1, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.24gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 32,
        memory_mib: 22016, engines: eng(2, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.47gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 60,
        memory_mib: 47232, engines: eng(3, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.47gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 64,
        memory_mib: 47232, engines: eng(4, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.94gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 132,
        memory_mib: 94848, engines: eng(8, 7, 7, 1), max_count: 1, placements: P8_7G },
];

// Unconfirmed, inferred from H100 (same GH100 die): the IDs, SMs and
// placements of 1g.35gb, 3g.71gb and 4g.71gb; 2g.35gb placements; and the
// memory of 1g.35gb (= 2g.35gb) and 3g/4g.71gb (= 2 × 2g + 256 MiB, as on H100).
#[rustfmt::skip]
const H200_141GB_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.18gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 16384, engines: eng(1, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.18gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 16,
        memory_mib: 16384, engines: eng(1, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.35gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 26,
        memory_mib: 33280, engines: eng(1, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.35gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 32,
        memory_mib: 33280, engines: eng(2, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.71gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 60,
        memory_mib: 66816, engines: eng(3, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.71gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 64,
        memory_mib: 66816, engines: eng(4, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.141gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 132,
        memory_mib: 143360, engines: eng(8, 7, 7, 1), max_count: 1, placements: P8_7G },
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
};

/// H100 NVL (PCI 0x2321); NVML reports 95830 MiB.
pub(in crate::gpu::sim) const H100_NVL_94GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA H100 NVL",
    memory_bytes: 100_485_038_080,
    pci_device_id: 0x2321,
    gi_profiles: H100_NVL_94GB_PROFILES,
    source: "published `nvidia-smi mig -lgip` of an H100 NVL; placements per NVIDIA's H100 NVL `-lgipp`; names as NVIDIA/mig-parted's H100 NVL config (filter 0x232110DE)",
    ..H100_80GB
};

/// H200 SXM (PCI 0x2335); NVML reports 143771 MiB.
pub(in crate::gpu::sim) const H200_141GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA H200",
    memory_bytes: 150_754_820_096,
    pci_device_id: 0x2335,
    gi_profiles: H200_141GB_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide, r580 edition (2025), H200 141GB table; 1g.35gb, 3g.71gb and 4g.71gb ids, SMs, memory and placements inferred from H100 (same GH100 die)",
    ..H100_80GB
};
