//! MIG devices as the node offers them: names, attributes, capacities and, in
//! partitionable mode, the shared counters that keep the scheduler from
//! picking overlapping slices.
//!
//! Pure: which (profile, placement) pairs are offered is decided by the
//! caller (every legal pair in partitionable mode, the planned layout
//! otherwise); this module only describes them. Attribute keys follow NVIDIA's
//! DRA driver (`type`="mig", `profile`, `parentUUID`, the parent's product
//! attributes) plus `parentIndex` and `placementStart`/`placementSize`.

use std::collections::BTreeMap;

use crate::gpu::{DriverInfo, MediaEngines, MigProfile, Placement};
use crate::inventory::{AttrValue, GpuDevice, gpu_attributes};

/// A MIG-managed GPU: the profiles it offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuMig {
    /// GPU-instance profiles with placements, as the backend reported them.
    pub profiles: Vec<MigProfile>,
    /// Memory slices of the GPU (the end of the widest placement).
    pub memory_slices: u32,
    /// Instances gpuslice did not make, as (profile id, placement): in
    /// partitionable mode they are taken out of the counter set
    /// ([`free_counters`]), since no allocation the scheduler knows of
    /// accounts for them.
    pub foreign: Vec<(u32, Placement)>,
}

impl GpuMig {
    /// Builds the description from the backend's profiles.
    pub fn new(profiles: Vec<MigProfile>) -> Self {
        let memory_slices = crate::gpu::memory_slices(&profiles);
        Self {
            profiles,
            memory_slices,
            foreign: Vec::new(),
        }
    }

    /// The profile with this name.
    pub fn profile(&self, name: &str) -> Option<&MigProfile> {
        self.profiles.iter().find(|p| p.name == name)
    }

    /// The profile with this NVML profile ID.
    pub fn profile_by_id(&self, id: u32) -> Option<&MigProfile> {
        self.profiles.iter().find(|p| p.id == id)
    }

    /// Profile names, for error messages.
    pub fn profile_names(&self) -> String {
        let names: Vec<&str> = self.profiles.iter().map(|p| p.name.as_str()).collect();
        names.join(", ")
    }
}

/// One MIG slice the node offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigDevice {
    /// Inventory name, a DNS label: "gpu-0-mig-3g40gb-4".
    pub name: String,
    /// Index into [`crate::inventory::Inventory::gpus`] of the parent GPU.
    pub parent: usize,
    /// The profile.
    pub profile: MigProfile,
    /// Where the slice sits.
    pub placement: Placement,
    /// The MIG device UUID when the slice exists ahead of any claim.
    pub uuid: Option<String>,
}

impl MigDevice {
    /// Whether the parent GPU has this UUID.
    pub fn parent_uuid_is(&self, inventory: &crate::inventory::Inventory, uuid: &str) -> bool {
        inventory
            .gpus
            .get(self.parent)
            .is_some_and(|g| g.info.uuid == uuid)
    }
}

/// "gpu-<index>-mig-<profile without dots or plus>-<start>", a "-me"
/// profile's suffix spelled "nome" ("gpu-0-mig-1g24gbnome-2").
pub fn mig_device_name(gpu_index: u32, profile: &str, start: u32) -> String {
    // "-me" would lose its sign and meet "+me": it is spelled "nome".
    let profile = match profile.strip_suffix("-me") {
        Some(base) => format!("{base}nome"),
        None => profile.to_owned(),
    };
    let label: String = profile
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    format!("gpu-{gpu_index}-mig-{label}-{start}")
}

/// The name of the counter set of the GPU named `gpu_name`.
pub fn counter_set_name(gpu_name: &str) -> String {
    format!("{gpu_name}-counters")
}

/// The attributes of a MIG slice: the parent's product attributes and its
/// place (the standard `pcieRoot` and `numaNode`: a slice sits where its GPU
/// does), then the slice's own.
pub fn mig_attributes(
    device: &MigDevice,
    parent: &GpuDevice,
    driver: &DriverInfo,
) -> BTreeMap<String, AttrValue> {
    let mut attrs = gpu_attributes(&parent.info, driver);
    for key in ["uuid", "index", "minor", "pcieBusID"] {
        attrs.remove(key);
    }
    let mut put = |key: &str, value: AttrValue| {
        attrs.insert(key.to_owned(), value);
    };
    put("type", AttrValue::Str("mig".into()));
    put("profile", AttrValue::Str(device.profile.name.clone()));
    put("parentUUID", AttrValue::Str(parent.info.uuid.clone()));
    put("parentIndex", AttrValue::Int(i64::from(parent.info.index)));
    put(
        "placementStart",
        AttrValue::Int(i64::from(device.placement.start)),
    );
    put(
        "placementSize",
        AttrValue::Int(i64::from(device.placement.size)),
    );
    if let Some(uuid) = &device.uuid {
        put("uuid", AttrValue::Str(uuid.clone()));
    }
    attrs
}

/// The capacities of a MIG slice, as NVIDIA's driver names them.
pub fn mig_capacity(profile: &MigProfile) -> BTreeMap<String, i64> {
    let int = |v: u32| i64::from(v);
    BTreeMap::from([
        (
            "memory".to_owned(),
            i64::try_from(profile.memory_bytes).unwrap_or(i64::MAX),
        ),
        ("multiprocessors".to_owned(), int(profile.multiprocessors)),
        ("copyEngines".to_owned(), int(profile.copy_engines)),
        ("decoders".to_owned(), int(profile.decoders)),
        ("encoders".to_owned(), int(profile.encoders)),
        ("jpegEngines".to_owned(), int(profile.jpegs)),
        ("ofaEngines".to_owned(), int(profile.ofas)),
    ])
}

/// Counter names: one per memory slice, compute slices, the one
/// media-extension unit a GPU has, and on a GPU with "+me.all" profiles its
/// media engines: [`ALL_MEDIA_ENGINES`] units, every one of which a
/// "+me.all" slice takes and one of which any slice but a "-me" one takes
/// (no GPU has that many slices).
fn slice_counter(i: u32) -> String {
    format!("memory-slice-{i}")
}
const COMPUTE_SLICES: &str = "compute-slices";
const MEDIA_EXTENSIONS: &str = "media-extensions";
const MEDIA_ENGINES: &str = "media-engines";
/// The media-engine units of a GPU with "+me.all" profiles: more than it
/// can have slices.
const ALL_MEDIA_ENGINES: i64 = 64;

/// The counter set of a MIG-managed GPU: what every slice draws from.
pub fn gpu_counters(mig: &GpuMig) -> BTreeMap<String, i64> {
    let mut counters: BTreeMap<String, i64> = (0..mig.memory_slices)
        .map(|i| (slice_counter(i), 1))
        .collect();
    let compute = mig
        .profiles
        .iter()
        .map(|p| p.compute_slices)
        .max()
        .unwrap_or(0);
    counters.insert(COMPUTE_SLICES.to_owned(), i64::from(compute));
    counters.insert(MEDIA_EXTENSIONS.to_owned(), 1);
    if has_all_media(mig) {
        counters.insert(MEDIA_ENGINES.to_owned(), ALL_MEDIA_ENGINES);
    }
    counters
}

/// The counter set as published: [`gpu_counters`] less what instances
/// gpuslice did not make occupy (never below 0). The whole GPU still
/// consumes the full [`gpu_counters`], so it cannot be allocated while one
/// is there, and neither can a slice that overlaps one.
pub fn free_counters(mig: &GpuMig) -> BTreeMap<String, i64> {
    let mut counters = gpu_counters(mig);
    for (profile_id, placement) in &mig.foreign {
        let Some(profile) = mig.profile_by_id(*profile_id) else {
            continue;
        };
        for (name, used) in slice_consumption(mig, profile, *placement) {
            if let Some(have) = counters.get_mut(&name) {
                *have = (*have - used).max(0);
            }
        }
    }
    counters
}

/// What a slice at `placement` of `profile` consumes from the set of its
/// GPU, `mig`.
pub fn slice_consumption(
    mig: &GpuMig,
    profile: &MigProfile,
    placement: Placement,
) -> BTreeMap<String, i64> {
    let mut used: BTreeMap<String, i64> =
        placement.slices().map(|i| (slice_counter(i), 1)).collect();
    used.insert(COMPUTE_SLICES.to_owned(), i64::from(profile.compute_slices));
    let media = profile.media();
    if matches!(media, MediaEngines::Extensions | MediaEngines::All) {
        used.insert(MEDIA_EXTENSIONS.to_owned(), 1);
    }
    if has_all_media(mig) {
        let engines = match media {
            MediaEngines::All => ALL_MEDIA_ENGINES,
            MediaEngines::Share | MediaEngines::Extensions => 1,
            MediaEngines::None => 0,
        };
        if engines > 0 {
            used.insert(MEDIA_ENGINES.to_owned(), engines);
        }
    }
    used
}

/// Whether a profile of the GPU takes every media engine ("+me.all"): its
/// set then counts the media engines, so that such a slice and any slice
/// but a "-me" one exclude each other.
fn has_all_media(mig: &GpuMig) -> bool {
    (mig.profiles.iter()).any(|p| p.media() == MediaEngines::All)
}

#[cfg(test)]
#[path = "devices_tests.rs"]
mod tests;
