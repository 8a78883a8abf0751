//! Blackwell: B200, B300, GB200 and GB300 (8 memory and 7 compute slices,
//! the profile ids of Hopper) and the RTX PRO 6000 Blackwell Server Edition
//! (4 memory and 4 compute slices, its own profile ids, NVENC, and graphics
//! "+gfx", "+me.all" and "-me" profiles).
//!
//! Where NVIDIA's MIG user guide and NVIDIA's own `nvidia-smi mig -lgip`
//! printouts disagree, the printout wins. The guide's B200 table gives one
//! NVDEC and one NVJPG on every row, the full GPU's included, and 3 copy
//! engines to 2g.45gb; the B200 that NVIDIA printed (NVIDIA/gpu-operator#1351,
//! mig-parted#166 and #187) has 2 NVDEC, 2 NVJPG and 4 copy engines on
//! 2g.45gb, the only B200 row with more than one compute slice found printed.
//! A table in which every instance, the whole-GPU 7g.180gb too, gets one
//! decoder reads like a column copied down; where the hardware was asked, it
//! answered one NVDEC and one NVJPG per compute slice, as every Hopper table
//! of the same guide has it. So 3g/4g/7g take 3/4/7 of each (inferred, no
//! printout), and the guide's 6/8/16 copy engines, which agree with the
//! printed two per compute slice.
//!
//! The 3g, 4g and 7g rows of B200 and GB200, and all of B300 and GB300, are
//! seen nowhere printed: their SMs scale H100's 3g/4g share of the GPU (60
//! and 64 of 132), their memory follows H100's rule (two of the next smaller
//! profile plus 256 MiB) or scales a sibling's, and their engines are as
//! above.

use super::super::models::profile_index::{
    SLICE_1, SLICE_1_ALL_ME, SLICE_1_GFX, SLICE_1_NO_ME, SLICE_1_REV1, SLICE_1_REV2, SLICE_2,
    SLICE_2_ALL_ME, SLICE_2_GFX, SLICE_2_NO_ME, SLICE_3, SLICE_4, SLICE_4_GFX, SLICE_7,
};
use super::super::models::{GiProfile, ModelSpec};
use super::{
    BRAND, P4_1G, P4_2G, P4_4G, P8_1G, P8_1G_2M, P8_2G, P8_3G, P8_4G, P8_7G, eng, eng_enc,
};

// Rows 1-4 as `nvidia-smi mig -lgip` printed them (NVIDIA/gpu-operator#1351
// and mig-parted#187, 2025-03-20: 20.50 and 44.25 GiB; #2155, R580: 20992 and
// 45312 MiB devices; the January 2025 driver of mig-parted#166 printed 22.00
// for 1g.23gb); 3g/4g/7g inferred (module doc); ids 9/5/0 as GKE's
// partitioner maps them.
#[rustfmt::skip]
const B200_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.23gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 18,
        memory_mib: 20992, engines: eng(2, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.23gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 18,
        memory_mib: 20992, engines: eng(2, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.45gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 30,
        memory_mib: 45312, engines: eng(2, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.45gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 36,
        memory_mib: 45312, engines: eng(4, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.90gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 68,
        memory_mib: 90880, engines: eng(6, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.90gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 72,
        memory_mib: 90880, engines: eng(8, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.180gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 148,
        memory_mib: 182016, engines: eng(16, 7, 7, 1), max_count: 1, placements: P8_7G },
];

// Names and counts from NVIDIA/mig-parted's B300 config (filter 0x318210DE,
// 2025-10) and the GPU Operator v25.10 release notes; no table or printout
// of the rest: ids as every Hopper and Blackwell datacenter part, SMs as
// B200's (B200 is to GB200 as 148 SMs to 152, and GB300 printed 152),
// memory scaled from B200's to the B300's 275040 MiB, engines as B200's.
#[rustfmt::skip]
const B300_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.34gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 18,
        memory_mib: 31488, engines: eng(2, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.34gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 18,
        memory_mib: 31488, engines: eng(2, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.67gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 30,
        memory_mib: 67968, engines: eng(2, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.67gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 36,
        memory_mib: 67968, engines: eng(4, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.135gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 68,
        memory_mib: 136192, engines: eng(6, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.135gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 72,
        memory_mib: 136192, engines: eng(8, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.269gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 148,
        memory_mib: 272640, engines: eng(16, 7, 7, 1), max_count: 1, placements: P8_7G },
];

// Production boards (names as NVIDIA/mig-parted since its 2025-08 fix
// "values do not match the setting from the production boards"); rows 1-4
// as `nvidia-smi mig -lgip` printed them (NVIDIA/mig-parted#227: 22.00 and
// 45.50 GiB, SMs 18/18/32/38, 2g engines from gpu-operator#1303); 3g/4g/7g
// inferred (module doc), ids 9/5/0 as GKE's partitioner maps them.
#[rustfmt::skip]
const GB200_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.23gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 18,
        memory_mib: 22528, engines: eng(2, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.23gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 18,
        memory_mib: 22528, engines: eng(2, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.47gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 32,
        memory_mib: 46592, engines: eng(2, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.47gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 38,
        memory_mib: 46592, engines: eng(4, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.93gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 70,
        memory_mib: 93440, engines: eng(6, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.93gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 76,
        memory_mib: 93440, engines: eng(8, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.186gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 152,
        memory_mib: 187136, engines: eng(16, 7, 7, 1), max_count: 1, placements: P8_7G },
];

// Names and counts from NVIDIA/mig-parted's GB300 config (filter 0x31C210DE,
// "add the mig profiles for GB300", 2025-10-08); no `-lgip` of a GB300 was
// found and the guide has no GB300 row. The rest is inferred: ids as every
// Hopper and Blackwell datacenter part, SMs and engines as GB200's (152 SMs
// on both), memory GB200's scaled by 284208/189471 MiB (the two NVML totals),
// to 128 MiB. The names come out of that memory as go-nvlib derives them.
#[rustfmt::skip]
const GB300_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.35gb", index: SLICE_1, id: 19, memory_slices: 1, compute_slices: 1, sm_count: 18,
        memory_mib: 33792, engines: eng(2, 1, 1, 0), max_count: 7, placements: P8_1G },
    GiProfile { name: "1g.35gb+me", index: SLICE_1_REV1, id: 20, memory_slices: 1, compute_slices: 1, sm_count: 18,
        memory_mib: 33792, engines: eng(2, 1, 1, 1), max_count: 1, placements: P8_1G },
    GiProfile { name: "1g.70gb", index: SLICE_1_REV2, id: 15, memory_slices: 2, compute_slices: 1, sm_count: 32,
        memory_mib: 69888, engines: eng(2, 1, 1, 0), max_count: 4, placements: P8_1G_2M },
    GiProfile { name: "2g.70gb", index: SLICE_2, id: 14, memory_slices: 2, compute_slices: 2, sm_count: 38,
        memory_mib: 69888, engines: eng(4, 2, 2, 0), max_count: 3, placements: P8_2G },
    GiProfile { name: "3g.139gb", index: SLICE_3, id: 9, memory_slices: 4, compute_slices: 3, sm_count: 70,
        memory_mib: 140160, engines: eng(6, 3, 3, 0), max_count: 2, placements: P8_3G },
    GiProfile { name: "4g.139gb", index: SLICE_4, id: 5, memory_slices: 4, compute_slices: 4, sm_count: 76,
        memory_mib: 140160, engines: eng(8, 4, 4, 0), max_count: 1, placements: P8_4G },
    GiProfile { name: "7g.278gb", index: SLICE_7, id: 0, memory_slices: 8, compute_slices: 7, sm_count: 152,
        memory_mib: 280704, engines: eng(16, 7, 7, 1), max_count: 1, placements: P8_7G },
];

// The guide's RTX PRO 6000 Blackwell table (engines, counts; the same for
// the Server, Workstation and Max-Q editions) and a Server Edition's
// `nvidia-smi mig -lgip` on driver 580.105.06 (bigstack-oss/cubecos#312,
// 2026-01: ids, SMs, 23.12, 46.50 and 93.38 GiB); GKE's printout of 2026-02
// (container-engine-accelerators#564) has 23.62 for 1g.24gb, another
// driver. Placements as the A30's, unconfirmed. NVML index of each variant
// from go-nvlib's naming: +gfx is *_GFX, -me *_NO_ME, +me.all *_ALL_ME.
#[rustfmt::skip]
const RTX_PRO_6000_PROFILES: &[GiProfile] = &[
    GiProfile { name: "1g.24gb", index: SLICE_1, id: 14, memory_slices: 1, compute_slices: 1, sm_count: 46,
        memory_mib: 23680, engines: eng_enc(1, 1, 1, 1, 0), max_count: 4, placements: P4_1G },
    GiProfile { name: "1g.24gb+me", index: SLICE_1_REV1, id: 21, memory_slices: 1, compute_slices: 1, sm_count: 46,
        memory_mib: 23680, engines: eng_enc(1, 1, 1, 1, 1), max_count: 1, placements: P4_1G },
    GiProfile { name: "1g.24gb+gfx", index: SLICE_1_GFX, id: 47, memory_slices: 1, compute_slices: 1, sm_count: 46,
        memory_mib: 23680, engines: eng_enc(1, 1, 1, 1, 0), max_count: 4, placements: P4_1G },
    GiProfile { name: "1g.24gb+me.all", index: SLICE_1_ALL_ME, id: 65, memory_slices: 1, compute_slices: 1, sm_count: 46,
        memory_mib: 23680, engines: eng_enc(1, 4, 4, 4, 1), max_count: 1, placements: P4_1G },
    GiProfile { name: "1g.24gb-me", index: SLICE_1_NO_ME, id: 67, memory_slices: 1, compute_slices: 1, sm_count: 46,
        memory_mib: 23680, engines: eng_enc(1, 0, 0, 0, 0), max_count: 4, placements: P4_1G },
    GiProfile { name: "2g.48gb", index: SLICE_2, id: 5, memory_slices: 2, compute_slices: 2, sm_count: 94,
        memory_mib: 47616, engines: eng_enc(2, 2, 2, 2, 0), max_count: 2, placements: P4_2G },
    GiProfile { name: "2g.48gb+gfx", index: SLICE_2_GFX, id: 35, memory_slices: 2, compute_slices: 2, sm_count: 94,
        memory_mib: 47616, engines: eng_enc(2, 2, 2, 2, 0), max_count: 2, placements: P4_2G },
    GiProfile { name: "2g.48gb+me.all", index: SLICE_2_ALL_ME, id: 64, memory_slices: 2, compute_slices: 2, sm_count: 94,
        memory_mib: 47616, engines: eng_enc(2, 4, 4, 4, 1), max_count: 1, placements: P4_2G },
    GiProfile { name: "2g.48gb-me", index: SLICE_2_NO_ME, id: 66, memory_slices: 2, compute_slices: 2, sm_count: 94,
        memory_mib: 47616, engines: eng_enc(2, 0, 0, 0, 0), max_count: 2, placements: P4_2G },
    GiProfile { name: "4g.96gb", index: SLICE_4, id: 0, memory_slices: 4, compute_slices: 4, sm_count: 188,
        memory_mib: 95616, engines: eng_enc(4, 4, 4, 4, 1), max_count: 1, placements: P4_4G },
    GiProfile { name: "4g.96gb+gfx", index: SLICE_4_GFX, id: 32, memory_slices: 4, compute_slices: 4, sm_count: 188,
        memory_mib: 95616, engines: eng_enc(4, 4, 4, 4, 1), max_count: 1, placements: P4_4G },
];

/// B200 (HGX B200, PCI 0x2901); NVML reports 183359 MiB and 148 SMs.
pub(in crate::gpu::sim) const B200_180GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA B200",
    brand: BRAND,
    architecture: "Blackwell",
    compute_capability: (10, 0),
    memory_bytes: 192_265_846_784,
    pci_device_id: 0x2901,
    memory_slices: 8,
    compute_slices: 7,
    sm_count: 148,
    gi_profiles: B200_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide (docs.nvidia.com/datacenter/tesla/mig-user-guide), \
             r580 edition (2025), 'Supported MIG Profiles', B200 180GB table, and 'Supported GPUs' \
             (GB100, CC 10.0, 7 instances); `nvidia-smi mig -lgip` rows of 1g.23gb to 2g.45gb \
             (NVIDIA/gpu-operator#1351, #2155, R580); `nvidia-smi -q -x` of a B200 (NVIDIA/k8s-test-infra, \
             2026-08, driver 580.105.08: name, PCI id, memory); 3g/4g/7g SMs, memory, NVDEC/NVJPG and \
             all placements inferred; the guide's one NVDEC/NVJPG per row and 3 copy engines on \
             2g.45gb set aside for NVIDIA's printout (module doc)",
    driver: "R580 (NVIDIA/gpu-operator#2155), the figures of March 2025 (#1351); January 2025's \
             driver printed 22.00 GiB for 1g.23gb (mig-parted#166)",
};

/// B300 SXM6 AC (HGX B300, PCI 0x3182); NVML reports 275040 MiB.
pub(in crate::gpu::sim) const B300_288GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA B300 SXM6 AC",
    compute_capability: (10, 3),
    memory_bytes: 288_400_343_040,
    pci_device_id: 0x3182,
    gi_profiles: B300_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide, r620 edition (2026), 'Deployment Considerations' \
             (B300: R580 >= 580.82.07), no B300 profile table as of 2026-09; profile names and counts \
             from NVIDIA/mig-parted's config (filter 0x318210DE, 2025-10-06) and the GPU Operator \
             v25.10 release notes; name and memory as nvidia-smi printed them (driver 580.95.05, \
             2026-09); SMs, ids, memory per profile, engines and placements inferred",
    driver: "none: no B300 profile was seen printed (the whole-GPU figures are 580.95.05's)",
    ..B200_180GB
};

/// GB200 (the Blackwell GPU of a GB200 superchip, PCI 0x2941); NVML
/// reports 189471 MiB and 152 SMs.
pub(in crate::gpu::sim) const GB200_186GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA GB200",
    memory_bytes: 198_674_743_296,
    pci_device_id: 0x2941,
    sm_count: 152,
    gi_profiles: GB200_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide, r580 edition (2025), 'Supported GPUs' (GB200: GB100, \
             CC 10.0, 186GB, 7 instances; the guide has no GB200 profile table); names from \
             NVIDIA/mig-parted (2025-08-07, production boards); `nvidia-smi mig -lgip` rows of 1g.23gb \
             to 2g.47gb (NVIDIA/mig-parted#227, gpu-operator#1303); `nvidia-smi -q -x` of a GB200 \
             (NVIDIA/k8s-test-infra, 2026-08, driver 580.173.02: name, PCI id, memory); 3g/4g/7g \
             SMs, memory, NVDEC/NVJPG and all placements inferred",
    driver: "not printed in NVIDIA/mig-parted#227 (2025-08-07, production boards); the earlier \
             boards of gpu-operator#1303 (2025-03) printed 20.00 GiB for 1g.23gb",
    ..B200_180GB
};

/// GB300 (the Blackwell Ultra GPU of a GB300 superchip, PCI 0x31C2); NVML
/// reports 284208 MiB.
pub(in crate::gpu::sim) const GB300_288GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA GB300",
    compute_capability: (10, 3),
    memory_bytes: 298_013_687_808,
    pci_device_id: 0x31c2,
    sm_count: 152,
    gi_profiles: GB300_PROFILES,
    source: "`nvidia-smi -q -x` of a 4-GPU GB300 node (NVIDIA/k8s-test-infra \
             tests/e2e/go/assertions/nvidiasmi/testdata/hardware/qx-gb300.xml, 2026-08-21, driver \
             580.173.02: name, Blackwell, PCI id 0x31C2, 284208 MiB, fabric clique); profile names \
             and counts from NVIDIA/mig-parted's config (filter 0x31C210DE, 2025-10-08); CC 10.3 as \
             the B300 it carries (NVIDIA/NV-Kernels#199: 'Grace Blackwell Ultra Superchips with B300 \
             GPU'); 152 SMs as third-party CUDA code gives them; the guide (r580, r610) lists no \
             GB300; ids, SMs, memory, engines and placements of every profile inferred",
    driver: "none: no GB300 profile was seen printed (the whole-GPU figures are 580.173.02's)",
    ..B200_180GB
};

/// RTX PRO 6000 Blackwell Server Edition (PCI 0x2bb5); NVML reports
/// 97887 MiB and 188 SMs; MIG in 4 memory and 4 compute slices.
pub(in crate::gpu::sim) const RTX_PRO_6000_96GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    brand: BRAND,
    architecture: "Blackwell",
    compute_capability: (12, 0),
    memory_bytes: 102_641_958_912,
    pci_device_id: 0x2bb5,
    memory_slices: 4,
    compute_slices: 4,
    sm_count: 188,
    gi_profiles: RTX_PRO_6000_PROFILES,
    source: "NVIDIA Multi-Instance GPU User Guide, r580 edition (2025), 'Supported MIG Profiles', RTX PRO \
             6000 Blackwell table, and 'Supported GPUs' (GB202, CC 12.0, 4 instances); \
             `nvidia-smi mig -lgip` of a Server Edition (bigstack-oss/cubecos#312, driver 580.105.06, \
             2026-01: ids, SMs, memory of every size) and of a Max-Q (driver 580.105.08, 2026-02); \
             PCI id 0x2BB5 as NVIDIA/mig-parted's filter and an AWS host's nvidia-smi \
             (bottlerocket-kernel-kit#300, 2025-10); brand and placements inferred",
    driver: "580.105.06 (bigstack-oss/cubecos#312); GKE's printout of 2026-02 has 1g.24gb at \
             23.62 GiB, another driver",
};
