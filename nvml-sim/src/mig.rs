//! NVML's MIG calls over the simulator, in safe code: GPU-instance profiles
//! by index, their placements and remaining capacity, GPU instances made
//! at a placement or where the driver would put them, compute-instance
//! profiles of a GPU instance, and compute instances.
//!
//! Semantics, as NVML documents them (and as real GPUs were seen answering,
//! where the header is silent):
//! * profile info and placements answer in either MIG mode (seen on an
//!   H100, driver 580); every instance call but the listings needs MIG
//!   enabled (NOT_SUPPORTED), and a GPU without MIG answers NOT_SUPPORTED
//!   to all of them;
//! * profile indices up to `NVML_GPU_INSTANCE_PROFILE_COUNT` the GPU lacks
//!   are NOT_SUPPORTED, beyond it INVALID_ARGUMENT (the end of the walk);
//!   an unknown profile id or a placement the profile does not list is
//!   INVALID_ARGUMENT; no room is INSUFFICIENT_RESOURCES;
//! * versioned structs are checked by their version (v2 and v3 of the
//!   GPU-instance profile info have one size and two layouts); another
//!   version is ARGUMENT_VERSION_MISMATCH;
//! * changes need root (NO_PERMISSION);
//! * the driver's own placement (`nvmlDeviceCreateGpuInstance`) is the free
//!   one with the highest start, which reproduces the MIG user guide's
//!   examples (`-cgi 19,14,5` puts the 1g at 6, the 2g at 4, the 4g at 0;
//!   `-cgi 19,19,14,9` fails at the 3g while `9,19,14,19` fits);
//! * remaining capacity is the planner's (`gpuslice::mig`'s score, which
//!   applies the same rules as a create).
//!
//! One limit of the simulator: a GPU instance holds at most one compute
//! instance, the one spanning it. The smaller compute-instance profiles are
//! listed (as NVML lists them), but making one is NOT_SUPPORTED.

use gpuslice::gpu::{GpuBackend, GpuInstance, MigProfile, Placement};
use gpuslice::mig::{MigGeometry, Occupancy, Occupant, Ownership};
use nvml_wrapper_sys::bindings as sys;

use crate::code::{Answer, INSUFFICIENT_RESOURCES, INVALID_ARGUMENT, NOT_FOUND, NOT_SUPPORTED};
use crate::device::{require_root, sim};
use crate::node::Node;

/// Compute slices of each compute-instance profile index
/// (`NVML_COMPUTE_INSTANCE_PROFILE_*`: 1, 2, 3, 4, 7, 8, 6 slices; the
/// `_REV1` one is not modelled).
const CI_SLICES: [u32; 7] = [1, 2, 3, 4, 7, 8, 6];

/// One compute-instance profile of a GPU instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiProfile {
    /// Its id (the profile index, as NVML numbers them).
    pub id: u32,
    /// Compute slices.
    pub slices: u32,
    /// How many fit in the GPU instance.
    pub count: u32,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// "MIG 1c.3g.40gb", or the GPU instance's own name when it spans it.
    pub name: String,
    /// The GPU instance's engines, shared.
    pub engines: [u32; 5],
}

impl Node {
    /// The GPU's MIG profiles; NOT_SUPPORTED on a GPU without MIG.
    pub fn profiles(&self, index: u32) -> Answer<Vec<MigProfile>> {
        self.answering(index)?;
        sim(self.sim.mig_profiles(index))
    }

    /// The profile at NVML profile index `profile_index`.
    pub fn profile_at(&self, index: u32, profile_index: u32) -> Answer<MigProfile> {
        let profiles = self.profiles(index)?;
        if let Some(found) = profiles.into_iter().find(|p| p.index == profile_index) {
            return Ok(found);
        }
        if profile_index < sys::NVML_GPU_INSTANCE_PROFILE_COUNT {
            Err(NOT_SUPPORTED)
        } else {
            Err(INVALID_ARGUMENT)
        }
    }

    /// The profile with id `profile_id`: INVALID_ARGUMENT if the GPU has none.
    pub fn profile_by_id(&self, index: u32, profile_id: u32) -> Answer<MigProfile> {
        (self.profiles(index)?.into_iter())
            .find(|p| p.id == profile_id)
            .ok_or(INVALID_ARGUMENT)
    }

    /// The GPU's instances, for a call that needs MIG enabled.
    fn instances_in_mig_mode(&self, index: u32) -> Answer<Vec<GpuInstance>> {
        self.profiles(index)?;
        if !self.mig_enabled(index)? {
            return Err(NOT_SUPPORTED);
        }
        sim(self.sim.gpu_instances(index))
    }

    /// `nvmlDeviceGetGpuInstances`: the instances of one profile (none while
    /// MIG is disabled).
    pub fn instances_of(&self, index: u32, profile_id: u32) -> Answer<Vec<GpuInstance>> {
        self.profile_by_id(index, profile_id)?;
        if !self.mig_enabled(index)? {
            return Ok(Vec::new());
        }
        let all = sim(self.sim.gpu_instances(index))?;
        Ok(all
            .into_iter()
            .filter(|gi| gi.profile_id == profile_id)
            .collect())
    }

    /// `nvmlDeviceGetGpuInstanceById`: NOT_FOUND when absent.
    pub fn instance(&self, index: u32, gi: u32) -> Answer<GpuInstance> {
        (self.instances_in_mig_mode(index)?.into_iter())
            .find(|i| i.id == gi)
            .ok_or(NOT_FOUND)
    }

    /// A GPU instance a handle names, while it exists: INVALID_ARGUMENT
    /// once it is gone (its handle is invalid then).
    pub fn live_instance(&self, index: u32, gi: u32) -> Answer<GpuInstance> {
        if index >= self.count()? {
            return Err(INVALID_ARGUMENT);
        }
        self.instance(index, gi).map_err(|code| {
            if code == NOT_FOUND || code == NOT_SUPPORTED {
                INVALID_ARGUMENT
            } else {
                code
            }
        })
    }

    /// The occupancy of the GPU's instances on its geometry.
    fn with_occupancy<T>(
        &self,
        index: u32,
        then: impl FnOnce(&Occupancy<'_>, &[MigProfile]) -> Answer<T>,
    ) -> Answer<T> {
        let profiles = self.profiles(index)?;
        let instances = self.instances_in_mig_mode(index)?;
        let geometry = MigGeometry::new(profiles.clone()).map_err(|_| INVALID_ARGUMENT)?;
        let occupants = (instances.iter())
            .map(|gi| Occupant::from_instance(gi, Ownership::Foreign))
            .collect();
        let occupancy = Occupancy::new(&geometry, occupants).map_err(|_| INVALID_ARGUMENT)?;
        then(&occupancy, &profiles)
    }

    /// `nvmlDeviceGetGpuInstanceRemainingCapacity`.
    pub fn remaining(&self, index: u32, profile_id: u32) -> Answer<u32> {
        let profile = self.profile_by_id(index, profile_id)?;
        self.with_occupancy(index, |occupancy, _| {
            let geometry = occupancy.geometry();
            let score = occupancy.score();
            let names = geometry.names_by_priority();
            let at = names.iter().position(|n| *n == profile.name);
            Ok(at
                .and_then(|at| score.remaining().get(at).copied())
                .map_or(0, u32::from))
        })
    }

    /// `nvmlDeviceCreateGpuInstanceWithPlacement`.
    pub fn create_at(&self, index: u32, profile_id: u32, at: Placement) -> Answer<GpuInstance> {
        let profile = self.profile_by_id(index, profile_id)?;
        if !self.mig_enabled(index)? {
            return Err(NOT_SUPPORTED);
        }
        require_root()?;
        if !profile.placements.contains(&at) {
            return Err(INVALID_ARGUMENT);
        }
        sim(self.sim.create_gpu_instance(index, profile_id, at))
    }

    /// `nvmlDeviceCreateGpuInstance`: at the free placement with the highest
    /// start that the rules admit; INSUFFICIENT_RESOURCES where none does.
    pub fn create_anywhere(&self, index: u32, profile_id: u32) -> Answer<GpuInstance> {
        let profile = self.profile_by_id(index, profile_id)?;
        require_root()?;
        let chosen = self.with_occupancy(index, |occupancy, _| {
            let fits = |at: &Placement| {
                let mut trial = occupancy.clone();
                let occupant = Occupant {
                    gi_id: u32::MAX,
                    profile_id,
                    placement: *at,
                    ownership: Ownership::Foreign,
                };
                trial.insert(occupant).is_ok()
            };
            Ok(profile.placements.iter().rev().copied().find(fits))
        })?;
        let at = chosen.ok_or(INSUFFICIENT_RESOURCES)?;
        sim(self.sim.create_gpu_instance(index, profile_id, at))
    }

    /// `nvmlGpuInstanceDestroy`.
    pub fn destroy_instance(&self, index: u32, gi: u32) -> Answer<()> {
        self.live_instance(index, gi)?;
        require_root()?;
        sim(self.sim.destroy_gpu_instance(index, gi))
    }

    /// The compute-instance profiles of GPU instance `gi`, by profile index:
    /// `None` for an index the instance does not offer.
    pub fn ci_profiles(&self, index: u32, gi: &GpuInstance) -> Answer<Vec<Option<CiProfile>>> {
        let profiles = self.profiles(index)?;
        let own = (profiles.iter())
            .find(|p| p.id == gi.profile_id)
            .ok_or(INVALID_ARGUMENT)?;
        let single_sm = (profiles.iter())
            .filter(|p| p.compute_slices == 1)
            .map(|p| p.multiprocessors)
            .min()
            .unwrap_or(own.multiprocessors / own.compute_slices.max(1));
        let offered = |slices: u32| {
            slices == own.compute_slices || (slices < own.compute_slices && slices <= 4)
        };
        Ok(CI_SLICES
            .iter()
            .zip(0u32..)
            .map(|(&slices, id)| {
                offered(slices).then(|| {
                    let spans = slices == own.compute_slices;
                    CiProfile {
                        id,
                        slices,
                        count: own.compute_slices / slices,
                        multiprocessors: if spans {
                            own.multiprocessors
                        } else {
                            single_sm * slices
                        },
                        name: if spans {
                            format!("MIG {}", own.name)
                        } else {
                            format!("MIG {slices}c.{}", own.name)
                        },
                        engines: [
                            own.copy_engines,
                            own.decoders,
                            own.encoders,
                            own.jpegs,
                            own.ofas,
                        ],
                    }
                })
            })
            .collect())
    }

    /// `nvmlGpuInstanceGetComputeInstanceProfileInfo(V)` at index
    /// `profile_index`, shared engines only.
    pub fn ci_profile_at(
        &self,
        index: u32,
        gi: u32,
        profile_index: u32,
        engines: u32,
    ) -> Answer<CiProfile> {
        let instance = self.live_instance(index, gi)?;
        if profile_index >= sys::NVML_COMPUTE_INSTANCE_PROFILE_COUNT {
            return Err(INVALID_ARGUMENT);
        }
        if engines != sys::NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED {
            return Err(NOT_SUPPORTED);
        }
        let all = self.ci_profiles(index, &instance)?;
        let at = usize::try_from(profile_index).map_err(|_| INVALID_ARGUMENT)?;
        all.into_iter().nth(at).flatten().ok_or(NOT_SUPPORTED)
    }

    /// The compute-instance profile with id `profile_id` in `gi`.
    fn ci_profile_by_id(&self, index: u32, gi: &GpuInstance, id: u32) -> Answer<CiProfile> {
        (self.ci_profiles(index, gi)?.into_iter().flatten())
            .find(|p| p.id == id)
            .ok_or(INVALID_ARGUMENT)
    }

    /// `nvmlGpuInstanceGetComputeInstanceRemainingCapacity`.
    pub fn ci_remaining(&self, index: u32, gi: u32, profile_id: u32) -> Answer<u32> {
        let instance = self.live_instance(index, gi)?;
        let profile = self.ci_profile_by_id(index, &instance, profile_id)?;
        let own = self.profile_by_id(index, instance.profile_id)?;
        let spans = profile.slices == own.compute_slices;
        Ok(u32::from(spans && instance.compute_instances.is_empty()))
    }

    /// `nvmlGpuInstanceCreateComputeInstance`: the profile spanning the GPU
    /// instance (a smaller one is NOT_SUPPORTED here); a second one is
    /// INSUFFICIENT_RESOURCES.
    pub fn create_compute(&self, index: u32, gi: u32, profile_id: u32) -> Answer<u32> {
        let instance = self.live_instance(index, gi)?;
        let profile = self.ci_profile_by_id(index, &instance, profile_id)?;
        require_root()?;
        let own = self.profile_by_id(index, instance.profile_id)?;
        if profile.slices != own.compute_slices {
            return Err(NOT_SUPPORTED);
        }
        sim(self.sim.create_compute_instance(index, gi)).map(|ci| ci.id)
    }

    /// `nvmlGpuInstanceGetComputeInstances` of one profile.
    pub fn computes_of(&self, index: u32, gi: u32, profile_id: u32) -> Answer<Vec<u32>> {
        let instance = self.live_instance(index, gi)?;
        self.ci_profile_by_id(index, &instance, profile_id)?;
        Ok((instance.compute_instances.iter())
            .filter(|ci| ci.profile_id == profile_id)
            .map(|ci| ci.id)
            .collect())
    }

    /// A compute instance, while it exists: `missing` when it does not.
    pub fn compute(
        &self,
        index: u32,
        gi: u32,
        ci: u32,
        missing: crate::code::Code,
    ) -> Answer<(GpuInstance, CiProfile)> {
        let instance = self.live_instance(index, gi)?;
        let found = (instance.compute_instances.iter()).find(|c| c.id == ci);
        let profile_id = found.ok_or(missing)?.profile_id;
        let profile = self.ci_profile_by_id(index, &instance, profile_id)?;
        Ok((instance, profile))
    }

    /// `nvmlComputeInstanceDestroy`: IN_USE while processes run on it.
    pub fn destroy_compute(&self, index: u32, gi: u32, ci: u32) -> Answer<()> {
        self.compute(index, gi, ci, INVALID_ARGUMENT)?;
        require_root()?;
        sim(self.sim.destroy_compute_instance(index, gi, ci))
    }
}
