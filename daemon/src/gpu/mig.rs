//! The MIG vocabulary of the hardware boundary: profiles, placements and
//! instances exactly as NVML reports them, shared by both backends, the pure
//! planner (`crate::mig`) and the claim engine. Plain data, no I/O; serde only so
//! the simulator can persist its "hardware" state.

use serde::{Deserialize, Serialize};

/// Where a GPU instance sits, in memory-slice units (NVML's `{start, size}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[derive(Deserialize)]
pub struct Placement {
    /// Index of the first occupied memory slice.
    pub start: u32,
    /// Number of memory slices occupied.
    pub size: u32,
}

impl Placement {
    /// The memory slices this placement occupies.
    pub fn slices(self) -> std::ops::Range<u32> {
        self.start..self.start.saturating_add(self.size)
    }

    /// Whether the two placements share a memory slice.
    pub fn overlaps(self, other: Placement) -> bool {
        self.start < other.start.saturating_add(other.size)
            && other.start < self.start.saturating_add(self.size)
    }
}

/// One GPU-instance profile of one GPU, as `nvmlDeviceGetGpuInstanceProfileInfo`
/// and `nvmlDeviceGetGpuInstancePossiblePlacements_v2` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigProfile {
    /// Profile name without the "MIG " prefix, e.g. "3g.40gb" or "1g.10gb+me".
    pub name: String,
    /// The NVML profile index constant (`NVML_GPU_INSTANCE_PROFILE_*`).
    pub index: u32,
    /// The device-specific profile ID (`info.id`) that create calls take.
    pub id: u32,
    /// Memory slices an instance occupies (its placement size).
    pub memory_slices: u32,
    /// Compute slices an instance gets (`sliceCount`).
    pub compute_slices: u32,
    /// Streaming multiprocessors (`multiprocessorCount`).
    pub multiprocessors: u32,
    /// Memory of one instance in bytes (`memorySizeMB` × 2^20).
    pub memory_bytes: u64,
    /// Copy engines.
    pub copy_engines: u32,
    /// NVDEC decoders.
    pub decoders: u32,
    /// NVENC encoders.
    pub encoders: u32,
    /// NVJPG engines.
    pub jpegs: u32,
    /// Optical flow accelerators.
    pub ofas: u32,
    /// Most instances of this profile on one GPU (`instanceCount`).
    pub max_count: u32,
    /// Every placement NVML allows for this profile, ascending by start.
    pub placements: Vec<Placement>,
}

impl MigProfile {
    /// Whether this is a media-extension ("+me") profile, at most one per GPU.
    pub fn media_extensions(&self) -> bool {
        self.media() == MediaEngines::Extensions
    }

    /// Which of the GPU's media engines its instances take.
    pub fn media(&self) -> MediaEngines {
        MediaEngines::of_name(&self.name)
    }
}

/// Memory slices of a GPU with these profiles: the end of the widest
/// placement any of them allows (0 without profiles).
pub fn memory_slices(profiles: &[MigProfile]) -> u32 {
    profiles
        .iter()
        .flat_map(|p| p.placements.iter())
        .map(|pl| pl.start.saturating_add(pl.size))
        .max()
        .unwrap_or(0)
}

/// Which of the GPU's media engines (NVDEC, NVENC, NVJPG, OFA) an instance
/// of a profile takes, from the suffix NVML names the profile with (go-nvlib
/// maps NVML's profile indices to these suffixes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MediaEngines {
    /// Its share of them: no suffix, or "+gfx".
    Share,
    /// The GPU's media extensions, "+me" (`_REV1`): one such instance per GPU.
    Extensions,
    /// Every one of them, "+me.all" (`_ALL_ME`): NVML's header says its
    /// instance "prevents allocation of all but _NO_ME profiles", so beside
    /// it only "-me" instances fit, and it fits only beside those.
    All,
    /// None, "-me" (`_NO_ME`).
    None,
}

impl MediaEngines {
    /// The media engines of a profile named `name` ("1g.24gb+me.all").
    pub fn of_name(name: &str) -> Self {
        if name.ends_with("+me.all") {
            Self::All
        } else if name.ends_with("+me") {
            Self::Extensions
        } else if name.ends_with("-me") {
            Self::None
        } else {
            Self::Share
        }
    }
}

/// Why NVML refuses one more instance for its media engines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaConflict {
    /// The GPU's one "+me" (or a "+me.all") instance exists.
    ExtensionsTaken,
    /// A "+me.all" instance holds every media engine.
    AllTaken,
    /// A "+me.all" instance needs every media engine, which instances other
    /// than "-me" ones hold.
    HeldByOthers,
}

/// The media engines a GPU's instances take, enough to apply NVML's rules
/// to one more.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MediaUse {
    extensions: bool,
    all: bool,
    holders: u32,
}

impl MediaUse {
    /// A GPU without instances.
    pub const NONE: MediaUse = MediaUse {
        extensions: false,
        all: false,
        holders: 0,
    };

    /// This use with one more instance taking `media`.
    #[must_use]
    pub fn with(self, media: MediaEngines) -> Self {
        Self {
            extensions: self.extensions || media == MediaEngines::Extensions,
            all: self.all || media == MediaEngines::All,
            holders: self.holders + u32::from(media != MediaEngines::None),
        }
    }

    /// The rule that refuses one more instance taking `media`, if any.
    pub fn refusal(&self, media: MediaEngines) -> Option<MediaConflict> {
        match media {
            MediaEngines::None => None,
            _ if self.all => Some(MediaConflict::AllTaken),
            MediaEngines::Extensions if self.extensions => Some(MediaConflict::ExtensionsTaken),
            MediaEngines::All if self.holders > 0 => Some(MediaConflict::HeldByOthers),
            _ => None,
        }
    }
}

/// A GPU instance that exists on a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuInstance {
    /// The GPU instance id (unique on its GPU).
    pub id: u32,
    /// The profile ID it was created with ([`MigProfile::id`]).
    pub profile_id: u32,
    /// Where it sits.
    pub placement: Placement,
    /// Its compute instances, ascending by id.
    pub compute_instances: Vec<ComputeInstance>,
}

/// A compute instance inside a GPU instance: what a container actually gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputeInstance {
    /// The compute instance id (unique within its GPU instance).
    pub id: u32,
    /// The compute-instance profile ID it was created with.
    pub profile_id: u32,
    /// The MIG device UUID, "MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
    pub uuid: String,
}

/// A GPU's compute mode (`nvmlComputeMode_t`); MPS wants `ExclusiveProcess`.
/// Its text is nvidia-smi's: "DEFAULT", "EXCLUSIVE_PROCESS", "PROHIBITED"
/// (the serde names, in the simulator's state file, are the variant names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[derive(strum::Display)]
#[strum(serialize_all = "SCREAMING_SNAKE_CASE")]
pub enum ComputeMode {
    /// Many contexts per device (NVML_COMPUTEMODE_DEFAULT).
    Default,
    /// One context per device, usable from many threads (EXCLUSIVE_PROCESS).
    ExclusiveProcess,
    /// No contexts allowed (PROHIBITED).
    Prohibited,
}

#[cfg(test)]
mod tests {
    use super::{MediaConflict, MediaEngines, MediaUse};

    #[test]
    fn suffixes_name_the_media_engines() {
        let of = MediaEngines::of_name;
        assert_eq!(of("1g.24gb"), MediaEngines::Share);
        assert_eq!(of("1g.24gb+gfx"), MediaEngines::Share);
        assert_eq!(of("1g.10gb+me"), MediaEngines::Extensions);
        assert_eq!(of("1g.24gb+me.all"), MediaEngines::All);
        assert_eq!(of("2g.48gb-me"), MediaEngines::None);
    }

    #[test]
    fn nvml_media_rules() {
        use MediaEngines::{All, Extensions, None, Share};
        let on = |taken: &[MediaEngines]| taken.iter().fold(MediaUse::default(), |u, m| u.with(*m));
        assert_eq!(on(&[]).refusal(All), Option::None);
        assert_eq!(
            on(&[Extensions]).refusal(Extensions),
            Some(MediaConflict::ExtensionsTaken)
        );
        assert_eq!(on(&[Share]).refusal(All), Some(MediaConflict::HeldByOthers));
        assert_eq!(on(&[None, None]).refusal(All), Option::None);
        assert_eq!(on(&[All]).refusal(Share), Some(MediaConflict::AllTaken));
        assert_eq!(
            on(&[All]).refusal(Extensions),
            Some(MediaConflict::AllTaken)
        );
        assert_eq!(on(&[All]).refusal(None), Option::None);
        assert_eq!(on(&[Share, Share]).refusal(Extensions), Option::None);
    }
}
