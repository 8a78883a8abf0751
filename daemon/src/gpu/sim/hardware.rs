//! What one simulated GPU remembers by itself, and the rules NVML applies to
//! changing it: MIG mode (current and pending), GPU and compute instances,
//! compute mode, and the counter that makes every MIG device UUID new.
//!
//! Pure: no I/O, no locks, no faults (what processes run is the caller's to
//! say, see `processes`). Every verb works on `&mut SimGpuState`
//! and answers with the [`GpuError`] real NVML would give; the backend runs it
//! on a copy and keeps the copy only if the new state could be persisted.
//! Invariants: instances ascending by id, placements never overlap, at most
//! `max_count` of a profile, one "+me" instance and only "-me" ones beside a
//! "+me.all", at most one compute instance per GPU instance.

use serde::{Deserialize, Serialize};

use super::models::{GiProfile, ModelSpec};
use super::numbering::{ci_profile_id, gi_id, mig_uuid};
use crate::gpu::{
    ComputeInstance, ComputeMode, GpuError, GpuInstance, MediaConflict, MediaUse, MigMode,
    MigProfile, MigSupport, Placement,
};

/// The simulated GPU a verb works on: index (for messages), model and UUID.
#[derive(Debug, Clone, Copy)]
pub struct GpuRef<'a> {
    /// NVML index.
    pub index: u32,
    /// The model's table.
    pub spec: &'static ModelSpec,
    /// "GPU-…", the seed of its MIG device UUIDs.
    pub uuid: &'a str,
}

impl GpuRef<'_> {
    /// Whether MIG mode switches at once and is lost at reboot (Hopper and
    /// newer) rather than waiting for an idle GPU and surviving reboot (Ampere).
    pub fn volatile_mig_mode(&self) -> bool {
        self.spec.compute_capability >= (9, 0)
    }

    fn what(&self, verb: &str) -> String {
        format!("GPU {} {verb}", self.index)
    }
}

/// The "hardware" state of one simulated GPU, persisted across daemon restarts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimGpuState {
    /// MIG mode in force.
    pub mig_current: MigMode,
    /// MIG mode after the next activation.
    pub mig_pending: MigMode,
    /// Compute mode.
    pub compute_mode: ComputeMode,
    /// GPU instances, ascending by id.
    pub gpu_instances: Vec<GpuInstance>,
    /// Compute instances ever created on this GPU (seeds MIG device UUIDs).
    pub mig_creations: u64,
}

impl SimGpuState {
    /// A GPU straight after its first boot: MIG disabled, nothing created.
    pub fn fresh() -> Self {
        Self {
            mig_current: MigMode::Disabled,
            mig_pending: MigMode::Disabled,
            compute_mode: ComputeMode::Default,
            gpu_instances: Vec::new(),
            mig_creations: 0,
        }
    }

    /// The state after a reboot: instances and compute mode are gone; Ampere
    /// keeps its MIG mode in the InfoROM (a pending change takes effect),
    /// Hopper comes back with MIG disabled.
    pub fn after_reboot(&self, gpu: GpuRef<'_>) -> Self {
        let mode = if gpu.volatile_mig_mode() {
            MigMode::Disabled
        } else {
            self.mig_pending
        };
        Self {
            mig_current: mode,
            mig_pending: mode,
            mig_creations: self.mig_creations,
            ..Self::fresh()
        }
    }

    /// MIG mode as `device_info` reports it: NOT_SUPPORTED on a GPU without
    /// MIG, as `nvmlDeviceGetMigMode` answers there.
    pub fn mig_support(&self, gpu: GpuRef<'_>) -> MigSupport {
        if !gpu.spec.has_mig() {
            return MigSupport::NotSupported;
        }
        MigSupport::Supported {
            current: self.mig_current,
            pending: self.mig_pending,
        }
    }

    /// `nvmlDeviceSetMigMode`. `busy`: processes hold the GPU.
    pub fn set_mig_mode(
        &mut self,
        gpu: GpuRef<'_>,
        mode: MigMode,
        busy: bool,
    ) -> Result<MigSupport, GpuError> {
        require_mig_capable(gpu, &format!("set MIG mode {mode:?}"))?;
        if mode == MigMode::Disabled && !self.gpu_instances.is_empty() {
            return Err(GpuError::InUse {
                what: gpu.what("disable MIG mode: destroy its GPU instances first"),
            });
        }
        if self.mig_current == mode && self.mig_pending == mode {
            return Ok(self.mig_support(gpu));
        }
        if busy {
            if !gpu.volatile_mig_mode() {
                // Ampere: the mode is recorded, the reset to activate it fails.
                self.mig_pending = mode;
            }
            return Err(GpuError::InUse {
                what: gpu.what(&format!(
                    "set MIG mode {mode:?} (processes hold the GPU; stop them and ask again)"
                )),
            });
        }
        self.mig_current = mode;
        self.mig_pending = mode;
        Ok(self.mig_support(gpu))
    }

    /// The profiles, ascending by profile index, in either MIG mode: real
    /// NVML answers the profile queries with MIG disabled too. NOT_SUPPORTED
    /// on a GPU without MIG.
    pub fn profiles(gpu: GpuRef<'_>) -> Result<Vec<MigProfile>, GpuError> {
        require_mig_capable(gpu, "MIG profiles")?;
        let mut profiles: Vec<MigProfile> = gpu.spec.mig_profiles();
        profiles.sort_by_key(|p| p.index);
        Ok(profiles)
    }

    /// The instances, ascending by id; none while MIG is disabled (real NVML
    /// lists none then, without an error). NOT_SUPPORTED on a GPU without MIG.
    pub fn instances(&self, gpu: GpuRef<'_>) -> Result<Vec<GpuInstance>, GpuError> {
        require_mig_capable(gpu, "GPU instances")?;
        Ok(self.gpu_instances.clone())
    }

    /// `nvmlDeviceCreateGpuInstanceWithPlacement`.
    pub fn create_gi(
        &mut self,
        gpu: GpuRef<'_>,
        profile_id: u32,
        placement: Placement,
    ) -> Result<GpuInstance, GpuError> {
        let verb = format!(
            "create GPU instance of profile {profile_id} at {}:{}",
            placement.start, placement.size
        );
        self.require_mig(gpu, &verb)?;
        let profile = (gpu.spec.profile_by_id(profile_id))
            .ok_or_else(|| invalid_argument(gpu, &verb, "no such profile on this GPU"))?;
        if !profile.placements.contains(&placement) {
            let allowed: Vec<String> = (profile.placements.iter())
                .map(|p| format!("{}:{}", p.start, p.size))
                .collect();
            let why = format!("{} allows only {}", profile.name, allowed.join(", "));
            return Err(invalid_argument(gpu, &verb, &why));
        }
        self.check_room(gpu, profile, placement, &verb)?;
        let instance = GpuInstance {
            id: gi_id(gpu.spec.memory_slices, placement),
            profile_id,
            placement,
            compute_instances: Vec::new(),
        };
        let at = self.gpu_instances.partition_point(|gi| gi.id < instance.id);
        self.gpu_instances.insert(at, instance.clone());
        Ok(instance)
    }

    /// INSUFFICIENT_RESOURCES: profile count used up, a second "+me", an
    /// overlapping placement, or not enough compute slices left.
    fn check_room(
        &self,
        gpu: GpuRef<'_>,
        profile: &GiProfile,
        placement: Placement,
        verb: &str,
    ) -> Result<(), GpuError> {
        let full = |why: &str| GpuError::InsufficientResources {
            what: gpu.what(&format!("{verb} ({why})")),
        };
        let profile_of = |gi: &GpuInstance| gpu.spec.profile_by_id(gi.profile_id);
        let same = (self.gpu_instances.iter())
            .filter(|gi| gi.profile_id == profile.id)
            .count();
        if u32::try_from(same).map_or(true, |n| n >= profile.max_count) {
            return Err(full(&format!("{} of {} already", same, profile.name)));
        }
        let media = (self.gpu_instances.iter())
            .filter_map(profile_of)
            .fold(MediaUse::NONE, |taken, p| taken.with(p.media()));
        match media.refusal(profile.media()) {
            Some(MediaConflict::ExtensionsTaken) => {
                return Err(full("the GPU's one media-extension instance exists"));
            }
            Some(MediaConflict::AllTaken) => {
                return Err(full("a +me.all instance holds every media engine"));
            }
            Some(MediaConflict::HeldByOthers) => {
                return Err(full("other instances hold media engines"));
            }
            None => {}
        }
        if let Some(gi) = (self.gpu_instances.iter()).find(|gi| gi.placement.overlaps(placement)) {
            return Err(full(&format!(
                "memory slices taken by GPU instance {}",
                gi.id
            )));
        }
        let used: u32 = (self.gpu_instances.iter())
            .filter_map(profile_of)
            .map(|p| p.compute_slices)
            .sum();
        if used.saturating_add(profile.compute_slices) > gpu.spec.compute_slices {
            return Err(full("compute slices used up"));
        }
        Ok(())
    }

    /// `nvmlGpuInstanceCreateComputeInstance` with the profile spanning the GI.
    pub fn create_ci(&mut self, gpu: GpuRef<'_>, gi_id: u32) -> Result<ComputeInstance, GpuError> {
        let verb = format!("create compute instance in GPU instance {gi_id}");
        self.require_mig(gpu, &verb)?;
        let serial = self.mig_creations.saturating_add(1);
        let gi = self.gi_mut(gpu, gi_id, &verb)?;
        if !gi.compute_instances.is_empty() {
            return Err(GpuError::InsufficientResources {
                what: gpu.what(&format!("{verb} (it already has one spanning it)")),
            });
        }
        let slices = gpu
            .spec
            .profile_by_id(gi.profile_id)
            .map_or(1, |p| p.compute_slices);
        let id = 0;
        let ci = ComputeInstance {
            id,
            profile_id: ci_profile_id(slices),
            uuid: mig_uuid(gpu.uuid, gi_id, id, serial),
        };
        gi.compute_instances.push(ci.clone());
        self.mig_creations = serial;
        Ok(ci)
    }

    /// `nvmlComputeInstanceDestroy`: IN_USE while processes (`running`,
    /// their pids) run on it.
    pub fn destroy_ci(
        &mut self,
        gpu: GpuRef<'_>,
        gi_id: u32,
        ci_id: u32,
        running: &[u32],
    ) -> Result<(), GpuError> {
        let verb = format!("destroy compute instance {ci_id} of GPU instance {gi_id}");
        self.require_mig(gpu, &verb)?;
        let gi = self.gi_mut(gpu, gi_id, &verb)?;
        if !gi.compute_instances.iter().any(|ci| ci.id == ci_id) {
            return Err(GpuError::NotFound {
                what: gpu.what(&verb),
            });
        }
        if !running.is_empty() {
            let pids: Vec<String> = running.iter().map(u32::to_string).collect();
            return Err(GpuError::InUse {
                what: gpu.what(&format!("{verb} (processes {} run on it)", pids.join(", "))),
            });
        }
        gi.compute_instances.retain(|ci| ci.id != ci_id);
        Ok(())
    }

    /// `nvmlGpuInstanceDestroy`: IN_USE while compute instances remain.
    pub fn destroy_gi(&mut self, gpu: GpuRef<'_>, gi_id: u32) -> Result<(), GpuError> {
        let verb = format!("destroy GPU instance {gi_id}");
        self.require_mig(gpu, &verb)?;
        let gi = self.gi_mut(gpu, gi_id, &verb)?;
        if !gi.compute_instances.is_empty() {
            return Err(GpuError::InUse {
                what: gpu.what(&format!("{verb} (destroy its compute instances first)")),
            });
        }
        self.gpu_instances.retain(|gi| gi.id != gi_id);
        Ok(())
    }

    fn gi_mut(
        &mut self,
        gpu: GpuRef<'_>,
        gi_id: u32,
        verb: &str,
    ) -> Result<&mut GpuInstance, GpuError> {
        (self.gpu_instances.iter_mut())
            .find(|gi| gi.id == gi_id)
            .ok_or_else(|| GpuError::NotFound {
                what: gpu.what(&format!("{verb}: no GPU instance {gi_id}")),
            })
    }

    fn require_mig(&self, gpu: GpuRef<'_>, verb: &str) -> Result<(), GpuError> {
        require_mig_capable(gpu, verb)?;
        match self.mig_current {
            MigMode::Enabled => Ok(()),
            MigMode::Disabled => Err(GpuError::NotSupported {
                what: gpu.what(&format!("{verb}: MIG mode is disabled")),
            }),
        }
    }
}

/// NVML's NOT_SUPPORTED for every MIG call on a GPU without MIG.
fn require_mig_capable(gpu: GpuRef<'_>, verb: &str) -> Result<(), GpuError> {
    if gpu.spec.has_mig() {
        return Ok(());
    }
    Err(GpuError::NotSupported {
        what: gpu.what(&format!("{verb}: the {} has no MIG", gpu.spec.product_name)),
    })
}

/// NVML's INVALID_ARGUMENT, as the NVML backend's error mapping reports it.
fn invalid_argument(gpu: GpuRef<'_>, verb: &str, why: &str) -> GpuError {
    GpuError::Nvml {
        call: "nvmlDeviceCreateGpuInstanceWithPlacement",
        message: format!("{}: invalid argument: {why}", gpu.what(verb)),
    }
}
