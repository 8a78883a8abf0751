//! The per-model numbers: product facts and full MIG GPU-instance profile tables.
//!
//! Data only, transcribed from the profile tables of NVIDIA's MIG user guide
//! and `nvidia-smi mig -lgip/-lgipp` output. `memory_mib` is the lgip
//! "Memory GiB" × 1024, which varies a little by driver. Encoder counts are 0
//! throughout: none of these GPUs has NVENC. Rows no source confirms
//! are filled in all the same and say so in a comment.

use super::models::profile_index::{
    SLICE_1, SLICE_1_REV1, SLICE_1_REV2, SLICE_2, SLICE_2_REV1, SLICE_3, SLICE_4, SLICE_7,
};
use super::models::{Engines, GiProfile, ModelSpec, Placement};

const fn at(start: u32, size: u32) -> Placement {
    Placement { start, size }
}

const fn eng(copy: u32, decoders: u32, jpeg: u32, ofa: u32) -> Engines {
    Engines {
        copy,
        decoders,
        encoders: 0,
        jpeg,
        ofa,
    }
}

// Placements of the 8-memory-slice GPUs (A100, H100, H100 NVL, H200), §3.1.
const P8_1G: &[Placement] = &[
    at(0, 1),
    at(1, 1),
    at(2, 1),
    at(3, 1),
    at(4, 1),
    at(5, 1),
    at(6, 1),
];
const P8_1G_2M: &[Placement] = &[at(0, 2), at(2, 2), at(4, 2), at(6, 2)];
const P8_2G: &[Placement] = &[at(0, 2), at(2, 2), at(4, 2)];
const P8_3G: &[Placement] = &[at(0, 4), at(4, 4)];
const P8_4G: &[Placement] = &[at(0, 4)];
const P8_7G: &[Placement] = &[at(0, 8)];

// Placements of the 4-memory-slice A30, §3.1.
const P4_1G: &[Placement] = &[at(0, 1), at(1, 1), at(2, 1), at(3, 1)];
const P4_2G: &[Placement] = &[at(0, 2), at(2, 2)];
const P4_4G: &[Placement] = &[at(0, 4)];

const BRAND: &str = "Nvidia";

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

/// A100-SXM4-40GB (PCI 0x20b0).
pub(super) const A100_40GB: ModelSpec = ModelSpec {
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
};

/// A100-SXM4-80GB (PCI 0x20b2).
pub(super) const A100_80GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA A100-SXM4-80GB",
    memory_bytes: 85_899_345_920,
    pci_device_id: 0x20b2,
    gi_profiles: A100_80GB_PROFILES,
    ..A100_40GB
};

/// A30 (PCI 0x20b7).
pub(super) const A30_24GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA A30",
    memory_bytes: 25_769_803_776,
    pci_device_id: 0x20b7,
    memory_slices: 4,
    compute_slices: 4,
    sm_count: 56,
    gi_profiles: A30_24GB_PROFILES,
    ..A100_40GB
};

/// H100 SXM5 80GB HBM3 (PCI 0x2330); NVML reports 81559 MiB.
pub(super) const H100_80GB: ModelSpec = ModelSpec {
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
};

/// H100 NVL (PCI 0x2321); NVML reports 95830 MiB.
pub(super) const H100_NVL_94GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA H100 NVL",
    memory_bytes: 100_485_038_080,
    pci_device_id: 0x2321,
    gi_profiles: H100_NVL_94GB_PROFILES,
    ..H100_80GB
};

/// H200 SXM (PCI 0x2335); NVML reports 143771 MiB.
pub(super) const H200_141GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA H200",
    memory_bytes: 150_754_820_096,
    pci_device_id: 0x2335,
    gi_profiles: H200_141GB_PROFILES,
    ..H100_80GB
};
