//! The GPU models the simulator can play, and the shape of their data.
//!
//! Owns the [`SimModel`] names as they appear in the config, and the types of
//! the per-model tables ([`ModelSpec`], [`GiProfile`], [`Placement`]). The
//! numbers themselves live in `tables.rs`. Data only: no state, no I/O. The
//! MIG planner reads the same tables, so they must stay plain `'static` data.

use serde::{Deserialize, Serialize};

use super::tables;

/// A GPU model the simulator can present. Config strings are the serde names,
/// and the text is the same canonical string, e.g. "A100-40GB".
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::Display,
    strum::IntoStaticStr,
)]
pub enum SimModel {
    /// NVIDIA A100-SXM4-40GB.
    #[serde(rename = "A100-40GB")]
    #[strum(to_string = "A100-40GB")]
    A100_40GB,
    /// NVIDIA A100-SXM4-80GB.
    #[serde(rename = "A100-80GB")]
    #[strum(to_string = "A100-80GB")]
    A100_80GB,
    /// NVIDIA A30 (24 GB).
    #[serde(rename = "A30", alias = "A30-24GB")]
    #[strum(to_string = "A30")]
    A30_24GB,
    /// NVIDIA H100 SXM5 80GB HBM3.
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
    /// NVIDIA H200 SXM (141 GB).
    #[serde(rename = "H200-141GB")]
    #[strum(to_string = "H200-141GB")]
    H200_141GB,
}

impl SimModel {
    /// Every model, in declaration order.
    pub const ALL: [SimModel; 6] = [
        SimModel::A100_40GB,
        SimModel::A100_80GB,
        SimModel::A30_24GB,
        SimModel::H100_80GB,
        SimModel::H100_NVL_94GB,
        SimModel::H200_141GB,
    ];

    /// The static facts of this model.
    pub fn spec(self) -> &'static ModelSpec {
        match self {
            SimModel::A100_40GB => &tables::A100_40GB,
            SimModel::A100_80GB => &tables::A100_80GB,
            SimModel::A30_24GB => &tables::A30_24GB,
            SimModel::H100_80GB => &tables::H100_80GB,
            SimModel::H100_NVL_94GB => &tables::H100_NVL_94GB,
            SimModel::H200_141GB => &tables::H200_141GB,
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
    /// Memory slices MIG divides the framebuffer into (placement units).
    pub memory_slices: u32,
    /// Compute slices (GPCs available to MIG).
    pub compute_slices: u32,
    /// Streaming multiprocessors of the whole GPU.
    pub sm_count: u32,
    /// GPU-instance profiles, smallest first.
    pub gi_profiles: &'static [GiProfile],
}

impl ModelSpec {
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
        self.name.ends_with("+me")
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
    }
}
