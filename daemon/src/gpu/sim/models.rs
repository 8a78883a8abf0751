//! The GPU models the simulator can play, and the shape of their data.
//!
//! Owns the [`SimModel`] names as they appear in the config, and the types of
//! the per-model tables ([`ModelSpec`], [`GiProfile`], [`Placement`]). The
//! numbers themselves live in `tables/`. Data only: no state, no I/O. The
//! MIG planner reads the same tables, so they must stay plain `'static` data.

use serde::{Deserialize, Serialize};

use super::tables;
use crate::gpu::MediaEngines;

/// A GPU model the simulator can present. Config strings are the serde names,
/// and the text is the same canonical string, e.g. "A100-40GB".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[derive(strum::Display, strum::IntoStaticStr)]
pub enum SimModel {
    /// NVIDIA A100-SXM4-40GB: AWS p4d.
    #[serde(rename = "A100-40GB")]
    #[strum(to_string = "A100-40GB")]
    A100_40GB,
    /// NVIDIA A100-SXM4-80GB: AWS p4de.
    #[serde(rename = "A100-80GB")]
    #[strum(to_string = "A100-80GB")]
    A100_80GB,
    /// NVIDIA A30 (24 GB).
    #[serde(rename = "A30", alias = "A30-24GB")]
    #[strum(to_string = "A30")]
    A30_24GB,
    /// NVIDIA H100 SXM5 80GB HBM3: AWS p5.
    #[serde(rename = "H100-80GB")]
    #[strum(to_string = "H100-80GB")]
    H100_80GB,
    /// NVIDIA H100 NVL (94 GB).
    #[expect(
        non_camel_case_types,
        reason = "variant names mirror the config strings"
    )]
    #[serde(rename = "H100-NVL-94GB")]
    #[strum(to_string = "H100-NVL-94GB")]
    H100_NVL_94GB,
    /// NVIDIA H200 SXM (141 GB): AWS p5e and p5en.
    #[serde(rename = "H200-141GB")]
    #[strum(to_string = "H200-141GB")]
    H200_141GB,
    /// NVIDIA H20 (96 GB, the GH100 with 78 SMs); on no AWS instance.
    #[serde(rename = "H20-96GB")]
    #[strum(to_string = "H20-96GB")]
    H20_96GB,
    /// NVIDIA B200 (HGX B200, 180 GB): AWS p6-b200.
    #[serde(rename = "B200-180GB")]
    #[strum(to_string = "B200-180GB")]
    B200_180GB,
    /// NVIDIA B300 SXM6 AC (HGX B300, 288 GB): AWS p6-b300.
    #[serde(rename = "B300-288GB")]
    #[strum(to_string = "B300-288GB")]
    B300_288GB,
    /// NVIDIA GB200 (the Blackwell GPU of a Grace Blackwell superchip, 186 GB):
    /// AWS p6e-gb200, arm64.
    #[serde(rename = "GB200-186GB")]
    #[strum(to_string = "GB200-186GB")]
    GB200_186GB,
    /// NVIDIA GB300 (the Blackwell Ultra GPU of a Grace Blackwell Ultra
    /// superchip, 288 GB): AWS p6e-gb300, arm64.
    #[serde(rename = "GB300-288GB")]
    #[strum(to_string = "GB300-288GB")]
    GB300_288GB,
    /// NVIDIA RTX PRO 6000 Blackwell Server Edition (96 GB, MIG in 4 slices):
    /// AWS g7e.
    #[expect(
        non_camel_case_types,
        reason = "variant names mirror the config strings"
    )]
    #[serde(rename = "RTX-PRO-6000-96GB")]
    #[strum(to_string = "RTX-PRO-6000-96GB")]
    RTX_PRO_6000_96GB,
    /// NVIDIA L40S (48 GB, no MIG): AWS g6e.
    #[serde(rename = "L40S-48GB")]
    #[strum(to_string = "L40S-48GB")]
    #[expect(
        non_camel_case_types,
        reason = "variant names mirror the config strings"
    )]
    L40S_48GB,
    /// NVIDIA L4 (24 GB, no MIG): AWS g6.
    #[serde(rename = "L4-24GB")]
    #[strum(to_string = "L4-24GB")]
    L4_24GB,
    /// NVIDIA A10G (24 GB, no MIG): AWS g5.
    #[serde(rename = "A10G-24GB")]
    #[strum(to_string = "A10G-24GB")]
    #[expect(
        non_camel_case_types,
        reason = "variant names mirror the config strings"
    )]
    A10G_24GB,
    /// NVIDIA Tesla T4 (16 GB, no MIG): AWS g4dn.
    #[serde(rename = "T4-16GB")]
    #[strum(to_string = "T4-16GB")]
    T4_16GB,
    /// NVIDIA T4G (16 GB, no MIG): AWS g5g, arm64 (Graviton2).
    #[serde(rename = "T4G-16GB")]
    #[strum(to_string = "T4G-16GB")]
    #[expect(
        non_camel_case_types,
        reason = "variant names mirror the config strings"
    )]
    T4G_16GB,
}

impl SimModel {
    /// Every model, in declaration order.
    pub const ALL: [SimModel; 17] = [
        SimModel::A100_40GB,
        SimModel::A100_80GB,
        SimModel::A30_24GB,
        SimModel::H100_80GB,
        SimModel::H100_NVL_94GB,
        SimModel::H200_141GB,
        SimModel::H20_96GB,
        SimModel::B200_180GB,
        SimModel::B300_288GB,
        SimModel::GB200_186GB,
        SimModel::GB300_288GB,
        SimModel::RTX_PRO_6000_96GB,
        SimModel::L40S_48GB,
        SimModel::L4_24GB,
        SimModel::A10G_24GB,
        SimModel::T4_16GB,
        SimModel::T4G_16GB,
    ];

    /// The models with MIG, in declaration order.
    pub fn with_mig() -> impl Iterator<Item = SimModel> {
        Self::ALL.into_iter().filter(|m| m.spec().has_mig())
    }

    /// The static facts of this model.
    pub fn spec(self) -> &'static ModelSpec {
        match self {
            SimModel::A100_40GB => &tables::A100_40GB,
            SimModel::A100_80GB => &tables::A100_80GB,
            SimModel::A30_24GB => &tables::A30_24GB,
            SimModel::H100_80GB => &tables::H100_80GB,
            SimModel::H100_NVL_94GB => &tables::H100_NVL_94GB,
            SimModel::H200_141GB => &tables::H200_141GB,
            SimModel::H20_96GB => &tables::H20_96GB,
            SimModel::B200_180GB => &tables::B200_180GB,
            SimModel::B300_288GB => &tables::B300_288GB,
            SimModel::GB200_186GB => &tables::GB200_186GB,
            SimModel::GB300_288GB => &tables::GB300_288GB,
            SimModel::RTX_PRO_6000_96GB => &tables::RTX_PRO_6000_96GB,
            SimModel::L40S_48GB => &tables::L40S_48GB,
            SimModel::L4_24GB => &tables::L4_24GB,
            SimModel::A10G_24GB => &tables::A10G_24GB,
            SimModel::T4_16GB => &tables::T4_16GB,
            SimModel::T4G_16GB => &tables::T4G_16GB,
        }
    }
}

/// What NVML would report about one GPU model, plus its MIG profile table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    /// `nvmlDeviceGetName`, e.g. "NVIDIA A100-SXM4-40GB".
    pub product_name: &'static str,
    /// Brand as NVIDIA's DRA driver publishes it (go-nvlib `GetBrandAsString`).
    pub brand: &'static str,
    /// Architecture name, e.g. "Ampere".
    pub architecture: &'static str,
    /// CUDA compute capability (major, minor).
    pub compute_capability: (u32, u32),
    /// `nvmlDeviceGetMemoryInfo().total` in bytes.
    pub memory_bytes: u64,
    /// PCI device id (the vendor is always 0x10de).
    pub pci_device_id: u16,
    /// Memory slices MIG divides the framebuffer into (placement units); 0
    /// on a GPU without MIG.
    pub memory_slices: u32,
    /// Compute slices (GPCs available to MIG); 0 on a GPU without MIG.
    pub compute_slices: u32,
    /// Streaming multiprocessors of the whole GPU.
    pub sm_count: u32,
    /// GPU-instance profiles, smallest first; empty on a GPU without MIG,
    /// where NVML answers every MIG query NOT_SUPPORTED.
    pub gi_profiles: &'static [GiProfile],
    /// Where the numbers come from: the documents, their versions and dates,
    /// and what no source confirms (docs/install.md's fleet table lists them).
    pub source: &'static str,
    /// The driver the per-profile figures were printed on (per-profile
    /// memory moves a little between releases), or, where the printout
    /// names none, what its source says of the date.
    pub driver: &'static str,
}

impl ModelSpec {
    /// Whether the GPU has MIG (NVML answers its MIG queries).
    pub fn has_mig(&self) -> bool {
        !self.gi_profiles.is_empty()
    }

    /// The profile with this name (e.g. "3g.40gb"), if the model has one.
    pub fn profile(&self, name: &str) -> Option<&'static GiProfile> {
        self.gi_profiles.iter().find(|p| p.name == name)
    }

    /// Every profile as the hardware boundary reports it (what `mig_profiles`
    /// answers for a GPU of this model in MIG mode).
    pub fn mig_profiles(&self) -> Vec<crate::gpu::MigProfile> {
        self.gi_profiles
            .iter()
            .map(super::numbering::mig_profile)
            .collect()
    }

    /// The profile with this NVML profile ID, if the model has one.
    pub fn profile_by_id(&self, id: u32) -> Option<&'static GiProfile> {
        self.gi_profiles.iter().find(|p| p.id == id)
    }
}

pub use crate::gpu::Placement;

/// Engines a GPU instance of a profile gets (`nvmlGpuInstanceProfileInfo_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Engines {
    /// Copy engines.
    pub copy: u32,
    /// NVDEC video decoders.
    pub decoders: u32,
    /// NVENC video encoders.
    pub encoders: u32,
    /// NVJPG engines.
    pub jpeg: u32,
    /// Optical flow accelerators.
    pub ofa: u32,
}

/// One GPU-instance profile of one model, as `nvidia-smi mig -lgip/-lgipp` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GiProfile {
    /// Profile name without the "MIG " prefix, e.g. "1g.10gb+me".
    pub name: &'static str,
    /// The NVML profile index constant (`NVML_GPU_INSTANCE_PROFILE_*`).
    pub index: u32,
    /// The device-specific profile ID (`info.id`) that create and placement calls take.
    pub id: u32,
    /// Memory slices an instance occupies (its placement size).
    pub memory_slices: u32,
    /// Compute slices an instance gets.
    pub compute_slices: u32,
    /// Streaming multiprocessors (`multiprocessorCount`).
    pub sm_count: u32,
    /// Memory of one instance in MiB (`memorySizeMB`).
    pub memory_mib: u64,
    /// Engines of one instance.
    pub engines: Engines,
    /// Most instances of this profile on one GPU (`instanceCount`).
    pub max_count: u32,
    /// Every placement NVML allows for this profile.
    pub placements: &'static [Placement],
}

impl GiProfile {
    /// Whether this is a media-extension ("+me") profile, at most one per GPU.
    pub fn media_extensions(&self) -> bool {
        self.media() == MediaEngines::Extensions
    }

    /// Which of the GPU's media engines its instances take.
    pub fn media(&self) -> MediaEngines {
        MediaEngines::of_name(self.name)
    }
}

/// `NVML_GPU_INSTANCE_PROFILE_*` index constants (nvml.h), mirrored here so the
/// simulator does not depend on the FFI crate; the nvml tests check they match.
pub mod profile_index {
    /// `NVML_GPU_INSTANCE_PROFILE_1_SLICE`.
    pub const SLICE_1: u32 = 0;
    /// `NVML_GPU_INSTANCE_PROFILE_2_SLICE`.
    pub const SLICE_2: u32 = 1;
    /// `NVML_GPU_INSTANCE_PROFILE_3_SLICE`.
    pub const SLICE_3: u32 = 2;
    /// `NVML_GPU_INSTANCE_PROFILE_4_SLICE`.
    pub const SLICE_4: u32 = 3;
    /// `NVML_GPU_INSTANCE_PROFILE_7_SLICE`.
    pub const SLICE_7: u32 = 4;
    /// `NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1`: the "+me" 1-slice profile.
    pub const SLICE_1_REV1: u32 = 7;
    /// `NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1`: the "+me" 2-slice profile (A30).
    pub const SLICE_2_REV1: u32 = 8;
    /// `NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2`: 1 compute slice, double memory.
    pub const SLICE_1_REV2: u32 = 9;
    /// `NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX`: graphics capable ("+gfx").
    pub const SLICE_1_GFX: u32 = 10;
    /// `NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX`.
    pub const SLICE_2_GFX: u32 = 11;
    /// `NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX`.
    pub const SLICE_4_GFX: u32 = 12;
    /// `NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME`: no media engines ("-me").
    pub const SLICE_1_NO_ME: u32 = 13;
    /// `NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME`.
    pub const SLICE_2_NO_ME: u32 = 14;
    /// `NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME`: every media engine of the
    /// GPU ("+me.all"); while one exists, only `_NO_ME` profiles can be made.
    pub const SLICE_1_ALL_ME: u32 = 15;
    /// `NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME`.
    pub const SLICE_2_ALL_ME: u32 = 16;
}

#[cfg(test)]
mod tests {
    use super::SimModel;

    #[test]
    fn model_names_round_trip() {
        for model in SimModel::ALL {
            let json = format!("\"{model}\"");
            let back: SimModel = serde_json::from_str(&json).unwrap();
            assert_eq!(back, model);
        }
    }

    #[test]
    fn a_model_prints_as_its_config_string() {
        for model in SimModel::ALL {
            assert_eq!(
                serde_json::to_string(&model).unwrap(),
                format!("\"{model}\"")
            );
        }
    }

    #[test]
    fn a30_alias_accepted() {
        let model: SimModel = serde_json::from_str("\"A30-24GB\"").unwrap();
        assert_eq!(model, SimModel::A30_24GB);
        assert_eq!(model.to_string(), "A30");
    }

    #[test]
    fn unknown_model_lists_the_choices() {
        let err = serde_json::from_str::<SimModel>("\"V100\"").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("unknown variant `V100`"), "{msg}");
        assert!(msg.contains("expected one of `A100-40GB`"), "{msg}");
        assert!(msg.contains("`H200-141GB`"), "{msg}");
        assert!(msg.contains("`L4-24GB`"), "{msg}");
    }
}
