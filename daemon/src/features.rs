//! What gpuslice can do with one GPU, from what NVML reports of it, and the
//! words that tell a user what a GPU lacks and what to use instead.
//!
//! - **MIG**: where NVML answers the GPU's MIG queries (MIG mode supported);
//!   its profiles are the model's table, whatever the MIG mode now.
//! - **MPS**: compute capability 3.5 and up (NVIDIA's MPS guide, "System
//!   Requirements"); its per-client limits (active thread percentage, pinned
//!   device memory) from Volta, 7.0 (the guide's "Volta MPS").
//! - **Time-slice settings** (`nvidia-smi compute-policy --set-timeslice`):
//!   NVML cannot tell; nvidia-smi answers "Not Supported" on a GPU without
//!   them (Tesla P4, in NVIDIA's DRA driver issues). gpuslice learns it at
//!   the first interval it sets, and keeps it ([`TimeSliceSettings`]).
//!   Time-slicing itself, at the driver's own interval, works everywhere.
//! - **NVLink fabric**: the GPU's clique in a multi-node NVLink domain
//!   (GB200), from NVML's fabric info.
//!
//! Pure: the inventory calls [`GpuFeatures::of`], the claim engine and the
//! sharing configs refuse with a [`Missing`].

use crate::gpu::{GpuInfo, MigProfile, MigSupport};

/// The first compute capability MPS runs on.
pub const MPS_MIN_CC: (u32, u32) = (3, 5);
/// The first compute capability with MPS client limits (Volta).
pub const MPS_LIMITS_MIN_CC: (u32, u32) = (7, 0);

/// What the GPU has, as NVML reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuFeatures {
    /// MIG: NVML answers its MIG queries.
    pub mig: bool,
    /// MPS runs on it.
    pub mps: bool,
    /// MPS client limits (threads, pinned memory) work on it.
    pub mps_limits: bool,
    /// Active NVLink links.
    pub nvlink_links: u32,
    /// Its clique in a multi-node NVLink fabric, `<cluster UUID>.<clique id>`.
    pub clique: Option<String>,
}

impl GpuFeatures {
    /// The features of the GPU `info` describes.
    pub fn of(info: &GpuInfo) -> Self {
        Self {
            mig: info.mig != MigSupport::NotSupported,
            mps: info.compute_capability >= MPS_MIN_CC,
            mps_limits: info.compute_capability >= MPS_LIMITS_MIN_CC,
            nvlink_links: info.nvlink_links,
            clique: info.fabric.as_ref().and_then(|f| f.clique()),
        }
    }
}

/// The names of `profiles`, smallest first (memory slices, then compute
/// slices, then the name): how users read a model's forms.
pub fn profile_names(profiles: &[MigProfile]) -> Vec<String> {
    let mut sorted: Vec<&MigProfile> = profiles.iter().collect();
    sorted.sort_by(|a, b| {
        (a.memory_slices, a.compute_slices, &a.name).cmp(&(
            b.memory_slices,
            b.compute_slices,
            &b.name,
        ))
    });
    sorted.into_iter().map(|p| p.name.clone()).collect()
}

/// Whether a GPU takes time-slice intervals, as gpuslice knows it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TimeSliceSettings {
    /// No interval was set on it yet.
    #[default]
    Untried,
    /// nvidia-smi set an interval.
    Supported,
    /// nvidia-smi answered that the GPU does not support it.
    NotSupported {
        /// What nvidia-smi said.
        message: String,
    },
}

impl std::fmt::Display for TimeSliceSettings {
    /// "untried", "yes", or "no (<nvidia-smi's words>)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Untried => f.write_str("untried"),
            Self::Supported => f.write_str("yes"),
            Self::NotSupported { message } => write!(f, "no ({message})"),
        }
    }
}

/// A feature a claim may ask of a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
pub enum Feature {
    /// MIG slices.
    #[strum(to_string = "MIG")]
    Mig,
    /// MPS sharing.
    #[strum(to_string = "MPS")]
    Mps,
    /// MPS client limits: an active thread percentage, a pinned memory
    /// limit or a memory share.
    #[strum(to_string = "MPS client limits")]
    MpsLimits,
    /// A time-slice interval other than the driver's default.
    #[strum(to_string = "time-slice settings")]
    TimeSliceSettings,
}

/// A claim asked a GPU for a feature it lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{gpu} is {article} {product}, which has no {feature}{why}; {instead}",
    article = article(product),
    why = self.why(),
    instead = self.instead()
)]
pub struct Missing {
    /// What it lacks.
    pub feature: Feature,
    /// The GPU: its inventory name or UUID.
    pub gpu: String,
    /// Its product name.
    pub product: String,
    /// What was asked of it, e.g. "gpu-0-mig-1g24gb-0" or "interval Long".
    pub asked: String,
    /// Where the answer comes from, e.g. nvidia-smi's message.
    pub evidence: Option<String>,
}

/// "an" before "NVIDIA" (en-vidia) and vowels, else "a".
fn article(product: &str) -> &'static str {
    let vowel = product.starts_with(['A', 'E', 'I', 'O', 'U']);
    if vowel || product.starts_with("NVIDIA") {
        "an"
    } else {
        "a"
    }
}

impl Missing {
    fn why(&self) -> String {
        let evidence = match (&self.evidence, self.feature) {
            (Some(evidence), _) => evidence.clone(),
            (None, Feature::Mig) => "NVML: MIG not supported".to_owned(),
            (None, Feature::Mps) => format!(
                "MPS needs compute capability {}.{} or later",
                MPS_MIN_CC.0, MPS_MIN_CC.1
            ),
            (None, Feature::MpsLimits) => format!(
                "MPS client limits need Volta, compute capability {}.{}, or later",
                MPS_LIMITS_MIN_CC.0, MPS_LIMITS_MIN_CC.1
            ),
            (None, Feature::TimeSliceSettings) => "nvidia-smi: not supported".to_owned(),
        };
        format!(" ({evidence}), so {} cannot be had", self.asked)
    }

    fn instead(&self) -> &'static str {
        match self.feature {
            Feature::Mig => {
                "ask for the whole GPU (DeviceClass gpu.nvidia.com), or share it with MPS or \
                 time-slicing (a GpuConfig with sharing.strategy MPS or TimeSlicing)"
            }
            Feature::Mps => {
                "share it with time-slicing instead (sharing.strategy TimeSlicing), or ask for \
                 the whole GPU"
            }
            Feature::MpsLimits => {
                "leave out defaultActiveThreadPercentage, the pinned memory limits and the memory \
                 share, or use time-slicing"
            }
            Feature::TimeSliceSettings => {
                "ask for interval Default (the driver's own time-slice), or share it with MPS"
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Feature, GpuFeatures, Missing, TimeSliceSettings};
    use crate::gpu::sim::{SimBackend, SimModel};
    use crate::gpu::{FabricState, GpuBackend, GpuFabric};

    fn info(model: SimModel) -> crate::gpu::GpuInfo {
        SimBackend::new(vec![model], "features")
            .device_info(0)
            .unwrap()
    }

    #[test]
    fn the_fleet_has_mps_and_its_limits_everywhere_and_mig_where_nvml_answers() {
        for model in SimModel::ALL {
            let features = GpuFeatures::of(&info(model));
            assert!(features.mps && features.mps_limits, "{model}");
            assert_eq!(features.mig, model.spec().has_mig(), "{model}");
        }
    }

    #[test]
    fn mps_and_its_limits_follow_the_compute_capability() {
        let mut gpu = info(SimModel::T4_16GB);
        for (cc, mps, limits) in [
            ((3, 0), false, false),
            ((3, 5), true, false),
            ((6, 1), true, false),
            ((7, 0), true, true),
        ] {
            gpu.compute_capability = cc;
            let features = GpuFeatures::of(&gpu);
            assert_eq!((features.mps, features.mps_limits), (mps, limits), "{cc:?}");
        }
    }

    #[test]
    fn a_clique_only_from_an_attached_fabric() {
        let mut gpu = info(SimModel::GB200_186GB);
        assert_eq!(GpuFeatures::of(&gpu).clique, None);
        gpu.fabric = Some(GpuFabric {
            cluster_uuid: "5a2c6f1e-8b3d-4c7a-9e0f-1d2b3c4d5e6f".into(),
            clique_id: 3,
            state: FabricState::Completed,
            error: None,
        });
        assert_eq!(
            GpuFeatures::of(&gpu).clique.as_deref(),
            Some("5a2c6f1e-8b3d-4c7a-9e0f-1d2b3c4d5e6f.3")
        );
    }

    #[test]
    fn a_missing_feature_names_the_gpu_what_it_lacks_and_what_to_use() {
        let missing = Missing {
            feature: Feature::Mig,
            gpu: "gpu-0".into(),
            product: "NVIDIA L4".into(),
            asked: "gpu-0-mig-1g24gb-0".into(),
            evidence: None,
        };
        assert_eq!(
            missing.to_string(),
            "gpu-0 is an NVIDIA L4, which has no MIG (NVML: MIG not supported), so \
             gpu-0-mig-1g24gb-0 cannot be had; ask for the whole GPU (DeviceClass \
             gpu.nvidia.com), or share it with MPS or time-slicing (a GpuConfig with \
             sharing.strategy MPS or TimeSlicing)"
        );
        let timeslice = Missing {
            feature: Feature::TimeSliceSettings,
            gpu: "GPU-1".into(),
            product: "Tesla P4".into(),
            asked: "interval Long".into(),
            evidence: Some("nvidia-smi: Not Supported".into()),
        };
        let text = timeslice.to_string();
        assert!(text.starts_with("GPU-1 is a Tesla P4, which"), "{text}");
        assert!(
            text.contains("has no time-slice settings (nvidia-smi: Not Supported)"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "ask for interval Default (the driver's own time-slice), or share it with MPS"
            ),
            "{text}"
        );
        assert_eq!(TimeSliceSettings::default().to_string(), "untried");
    }
}
