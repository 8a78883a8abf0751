//! The inference GPUs without MIG: L40S and L4 (Ada Lovelace), A10G
//! (Ampere), T4 and T4G (Turing). NVML answers their MIG queries
//! NOT_SUPPORTED (nvidia-smi prints "MIG M. N/A"), so they have no profile
//! table and no slices; they are offered whole, under MPS or time-sliced.
//! Names, memory (NVML's total) and SMs as nvidia-smi, CUDA and
//! `nvidia-smi -q` printed them on AWS instances; PCI ids from the PCI ID
//! repository (pci-ids.ucw.cz, 2026-08) and nvidia-smi.

use super::super::models::ModelSpec;
use super::BRAND;

/// L40S (PCI 0x26b9); NVML reports 46068 MiB and 142 SMs.
pub(in crate::gpu::sim) const L40S_48GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA L40S",
    brand: BRAND,
    architecture: "Ada Lovelace",
    compute_capability: (8, 9),
    memory_bytes: 48_305_799_168,
    pci_device_id: 0x26b9,
    memory_slices: 0,
    compute_slices: 0,
    sm_count: 142,
    gi_profiles: &[],
    source: "nvidia-smi and `nvidia-smi -q` on AWS g6e (name, 46068 MiB, brand NVIDIA, Ada Lovelace, \
             MIG N/A), CUDA's device properties (CC 8.9, 142 SMs), PCI ID repository (0x26B9, \
             2026-08); NVIDIA's L40S datasheet (no MIG)",
    driver: "no MIG profiles; the printouts of the whole GPU named no driver",
};

/// L4 (PCI 0x27b8); NVML reports 23034 MiB and 58 SMs.
pub(in crate::gpu::sim) const L4_24GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA L4",
    memory_bytes: 24_152_899_584,
    pci_device_id: 0x27b8,
    sm_count: 58,
    source: "nvidia-smi and `nvidia-smi -q` on AWS g6 and GCP g2 (name, 23034 MiB, brand NVIDIA, Ada \
             Lovelace, 'MIG Mode Current: N/A'), CUDA's device properties (CC 8.9, 58 SMs), lspci \
             (10de:27b8); NVIDIA's L4 datasheet (no MIG)",
    ..L40S_48GB
};

/// A10G (PCI 0x2237); NVML reports 23028 MiB and 80 SMs.
pub(in crate::gpu::sim) const A10G_24GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA A10G",
    architecture: "Ampere",
    compute_capability: (8, 6),
    memory_bytes: 24_146_608_128,
    pci_device_id: 0x2237,
    sm_count: 80,
    source: "`nvidia-smi -q` on AWS g5 (name, 23028 MiB, brand NVIDIA, Ampere, Device Id 0x223710DE, \
             'MIG Mode Current: N/A', 'Fabric State: N/A'), CUDA's device properties (CC 8.6, 80 SMs)",
    ..L40S_48GB
};

/// Tesla T4 (PCI 0x1eb8); NVML reports 15360 MiB and 40 SMs.
pub(in crate::gpu::sim) const T4_16GB: ModelSpec = ModelSpec {
    product_name: "Tesla T4",
    architecture: "Turing",
    compute_capability: (7, 5),
    memory_bytes: 16_106_127_360,
    pci_device_id: 0x1eb8,
    sm_count: 40,
    source: "nvidia-smi and `nvidia-smi -q` on AWS g4dn (name 'Tesla T4', 15360 MiB, brand NVIDIA, \
             Turing, 'MIG Mode Current: N/A'), CUDA's device properties (CC 7.5, 40 SMs), PCI ID \
             repository (0x1EB8, 2026-08)",
    ..L40S_48GB
};

/// T4G, the T4 of AWS g5g's Graviton2 nodes (PCI 0x1eb4); NVML reports
/// 15360 MiB and 40 SMs.
pub(in crate::gpu::sim) const T4G_16GB: ModelSpec = ModelSpec {
    product_name: "NVIDIA T4G",
    memory_bytes: 16_106_127_360,
    pci_device_id: 0x1eb4,
    source: "nvidia-smi on AWS g5g under EKS (name, 15360 MiB, MIG N/A; driver 570.195.03), CUDA's \
             deviceQuery (CC 7.5, 40 SMs), PCI ID repository (0x1EB4 'TU104GL [T4G]', 2026-08); \
             brand inferred",
    driver: "no MIG profiles; the whole GPU as driver 570.195.03 printed it",
    ..T4_16GB
};
