//! Building the inventory from the backend: whole GPUs, and for each GPU the
//! config puts in MIG mode, the slices it offers.
//!
//! Partitionable mode offers every legal (profile, placement), in publication
//! order (`publish_order`: the order the scheduler tries them in), and notes the
//! instances gpuslice did not make, which the published counter set leaves
//! out ([`super::free_counters`]). Layout mode
//! offers the configured profiles at the placements the planner chooses,
//! keeping slices that already exist where they are, so the offer does not
//! move under running workloads. A layout a GPU cannot take is reported as a
//! problem, and what fits is still offered.
//!
//! One GPU that cannot be read (its device info, or the MIG profiles and
//! instances of a GPU the config puts in MIG mode) never fails the scan: it
//! is left out of the offer and listed in [`Inventory::unreadable`], and
//! every other GPU is offered. Only a node-wide failure (driver info, device
//! count) fails it.
//!
//! A GPU whose MIG mode a whole-GPU claim switched off keeps its MIG
//! description and offer (its profiles read with MIG off, the layout planned
//! on the empty GPU): its slices keep their names, blocked by the claim, and
//! take claims again once it goes and MIG is back on. Any other GPU the
//! config puts in MIG mode with MIG off is a problem and offers no slice.

use super::{GpuDevice, Inventory, UnreadableGpu, gpu_device_name};
use crate::config::{MigConfig, MigOffering};
use crate::gpu::{GpuBackend, GpuError, GpuInstance, MigMode, MigSupport, Placement};
use crate::inventory::mig::devices::{GpuMig, MigDevice, mig_device_name};
use crate::inventory::mig::offer::plan_offer;
use crate::inventory::mig::publish_order::publication_order;
use crate::mig::Ownership;

impl Inventory {
    /// Asks the backend for every GPU and, per `mig`, the slices to offer.
    /// `owner` says who owns an instance of a GPU (by UUID): held slices
    /// keep their place in a layout, slices made ahead are reused.
    pub fn from_backend(
        backend: &dyn GpuBackend,
        mig: &MigConfig,
        owner: &dyn Fn(&str, &GpuInstance) -> Ownership,
    ) -> Result<Self, GpuError> {
        Self::scan(backend, mig, owner, &|_| false)
    }

    /// [`Inventory::from_backend`], where `held_whole` says (by UUID) which
    /// GPUs a claim holds whole, MIG switched off for it.
    pub fn scan(
        backend: &dyn GpuBackend,
        mig: &MigConfig,
        owner: &dyn Fn(&str, &GpuInstance) -> Ownership,
        held_whole: &dyn Fn(&str) -> bool,
    ) -> Result<Self, GpuError> {
        let driver = backend.driver_info()?;
        let count = backend.device_count()?;
        let mut gpus = Vec::new();
        let mut slices = Vec::new();
        let mut problems = Vec::new();
        let mut unreadable = Vec::new();
        let now = unix_now();
        for index in 0..count {
            let info = match backend.device_info(index) {
                Ok(info) => info,
                Err(error) => {
                    unreadable.push(UnreadableGpu::new(index, None, "device info", error, now));
                    continue;
                }
            };
            let model_profiles = match info.mig {
                MigSupport::NotSupported => Vec::new(),
                MigSupport::Supported { .. } => match backend.mig_profiles(index) {
                    Ok(profiles) => profiles,
                    Err(error) => {
                        problems.push(format!(
                            "{} ({}): its MIG profiles could not be read ({error}); advice and \
                             gpuslicectl match know no MIG form for it",
                            gpu_device_name(index),
                            info.uuid
                        ));
                        Vec::new()
                    }
                },
            };
            let mut gpu = GpuDevice::new(info, model_profiles);
            if let Some(wanted) = mig.for_gpu(gpu.info.index, &gpu.info.uuid) {
                match mig_of(backend, &gpu, held_whole(&gpu.info.uuid)) {
                    Ok(None) if gpu.info.mig == MigSupport::NotSupported => problems.push(format!(
                        "{} ({}): the config asks for MIG, but the {} has no MIG (NVML: not \
                         supported); remove it from [[mig.gpu]]",
                        gpu.name, gpu.info.uuid, gpu.info.product_name
                    )),
                    Ok(Some((mut gpu_mig, instances))) => {
                        let parent = gpus.len();
                        let owner_here = |gi: &GpuInstance| owner(&gpu.info.uuid, gi);
                        let offer = offer_of(
                            &mut gpu_mig,
                            &instances,
                            mig.offering(),
                            &owner_here,
                            &wanted.layout,
                            &mut |miss| {
                                problems.push(format!("{} ({}): {miss}", gpu.name, gpu.info.uuid))
                            },
                        );
                        slices.extend(offer.into_iter().filter_map(|(profile_id, placement)| {
                            let profile = gpu_mig.profile_by_id(profile_id)?.clone();
                            let uuid = instance_uuid(&instances, profile_id, placement);
                            Some(MigDevice {
                                name: mig_device_name(
                                    gpu.info.index,
                                    &profile.name,
                                    placement.start,
                                ),
                                parent,
                                profile,
                                placement,
                                uuid,
                            })
                        }));
                        gpu.mig = Some(gpu_mig);
                    }
                    Ok(None) => problems.push(format!(
                        "{} ({}): the config asks for MIG but MIG mode is not enabled on it",
                        gpu.name, gpu.info.uuid
                    )),
                    Err(error) => {
                        // In MIG mode and unreadable as such: offering it whole
                        // would hand out a GPU whose memory may be sliced.
                        let uuid = Some(gpu.info.uuid.clone());
                        let what = "MIG profiles and instances";
                        unreadable.push(UnreadableGpu::new(index, uuid, what, error, now));
                        continue;
                    }
                }
            }
            gpus.push(gpu);
        }
        let offering = mig.offering();
        if offering == MigOffering::Partitionable {
            publication_order(&mut slices);
        }
        let mut inventory = Self::new(driver, gpus, slices);
        inventory.mig_offering = offering;
        inventory.problems = problems;
        inventory.unreadable = unreadable;
        Ok(inventory)
    }
}

/// The profiles and instances of a GPU in MIG mode; `None` when MIG is off,
/// unless a claim holding it whole switched it off (`held_whole`): then its
/// profiles, and no instance. The profiles are read again when the scan
/// could not read them before.
fn mig_of(
    backend: &dyn GpuBackend,
    gpu: &GpuDevice,
    held_whole: bool,
) -> Result<Option<(GpuMig, Vec<GpuInstance>)>, GpuError> {
    let profiles = || {
        if gpu.model_profiles.is_empty() {
            backend.mig_profiles(gpu.info.index)
        } else {
            Ok(gpu.model_profiles.clone())
        }
    };
    match gpu.info.mig {
        MigSupport::Supported {
            current: MigMode::Enabled,
            ..
        } => {
            let profiles = profiles()?;
            let instances = backend.gpu_instances(gpu.info.index)?;
            Ok(Some((GpuMig::new(profiles), instances)))
        }
        MigSupport::Supported { .. } if held_whole => {
            Ok(Some((GpuMig::new(profiles()?), Vec::new())))
        }
        _ => Ok(None),
    }
}

/// The (profile, placement) pairs one GPU in MIG mode offers under
/// `offering`: every legal one (partitionable; the instances gpuslice did
/// not make noted as foreign on `gpu_mig`) or the layout's plan around the
/// instances there (each part of `wanted` that does not fit told to
/// `missing`). "auto" reaches the scan resolved (`mig_offering`);
/// unresolved, it is the layout.
fn offer_of(
    gpu_mig: &mut GpuMig,
    instances: &[GpuInstance],
    offering: MigOffering,
    owner: &dyn Fn(&GpuInstance) -> Ownership,
    wanted: &[String],
    missing: &mut dyn FnMut(String),
) -> Vec<(u32, Placement)> {
    match offering {
        MigOffering::Partitionable => {
            gpu_mig.foreign = instances
                .iter()
                .filter(|gi| owner(gi) == Ownership::Foreign)
                .map(|gi| (gi.profile_id, gi.placement))
                .collect();
            every_placement(gpu_mig)
        }
        MigOffering::Layout => {
            let (offer, misses) = plan_offer(&gpu_mig.profiles, instances, owner, wanted);
            misses.into_iter().for_each(|m| missing(m.to_string()));
            offer
        }
    }
}

/// Every (profile, placement); [`publication_order`] orders them.
fn every_placement(mig: &GpuMig) -> Vec<(u32, Placement)> {
    mig.profiles
        .iter()
        .flat_map(|p| p.placements.iter().map(move |&pl| (p.id, pl)))
        .collect()
}

fn instance_uuid(
    instances: &[GpuInstance],
    profile_id: u32,
    placement: Placement,
) -> Option<String> {
    instances
        .iter()
        .find(|gi| gi.profile_id == profile_id && gi.placement == placement)
        .and_then(|gi| gi.compute_instances.first())
        .map(|ci| ci.uuid.clone())
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
