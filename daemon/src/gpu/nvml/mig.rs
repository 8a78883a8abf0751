//! The MIG and compute-mode verbs on real NVML, in safe code over `raw` and
//! nvml-wrapper. Owns the walks NVML needs: profiles by index until
//! INVALID_ARGUMENT, instances per profile, CI profiles per GI, and MIG
//! device UUIDs by matching GI/CI ids over the MIG device handles (the CI
//! info's device is the parent GPU, so its UUID is the wrong one).

use std::collections::HashMap;

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings as sys;

use super::convert::map_err;
use super::raw::{self, CiProfile, RawGi};
use crate::gpu::{ComputeInstance, GpuError, GpuInstance, MigProfile};

/// An error mapper for `call` on GPU `index` doing `verb`.
pub(super) fn on(call: &'static str, index: u32, verb: &str) -> impl FnOnce(NvmlError) -> GpuError {
    let what = format!("GPU {index} {verb}");
    move |err| map_err(call, what, err)
}

/// The profile name NVML gives ("MIG 1g.10gb"), without the prefix.
fn profile_name(raw_name: &[std::os::raw::c_char]) -> String {
    let bytes: Vec<u8> = (raw_name.iter())
        .take_while(|c| **c != 0)
        .map(|c| c.to_ne_bytes()[0])
        .collect();
    let name = String::from_utf8_lossy(&bytes);
    name.strip_prefix("MIG ").unwrap_or(&name).to_owned()
}

/// Every GPU-instance profile, by index until NVML says INVALID_ARGUMENT.
pub(super) fn profiles(
    nvml: &Nvml,
    dev: &Device<'_>,
    index: u32,
) -> Result<Vec<MigProfile>, GpuError> {
    let call = "nvmlDeviceGetGpuInstanceProfileInfoV";
    let mut out = Vec::new();
    for profile_index in 0..sys::NVML_GPU_INSTANCE_PROFILE_COUNT + 8 {
        let info = match raw::profile_info(nvml, dev, profile_index) {
            Ok(info) => info,
            Err(NvmlError::NotSupported) => continue,
            Err(NvmlError::InvalidArg) => break,
            Err(err) => return Err(on(call, index, "MIG profiles")(err)),
        };
        let placements = raw::possible_placements(nvml, dev, info.id).map_err(on(
            "nvmlDeviceGetGpuInstancePossiblePlacements_v2",
            index,
            "MIG placements",
        ))?;
        out.push(MigProfile {
            name: profile_name(&info.name),
            index: profile_index,
            id: info.id,
            memory_slices: placements.first().map_or(0, |p| p.size),
            compute_slices: info.sliceCount,
            multiprocessors: info.multiprocessorCount,
            memory_bytes: info.memorySizeMB.saturating_mul(1 << 20),
            copy_engines: info.copyEngineCount,
            decoders: info.decoderCount,
            encoders: info.encoderCount,
            jpegs: info.jpegCount,
            ofas: info.ofaCount,
            max_count: info.instanceCount,
            placements,
        });
    }
    if out.is_empty() {
        return Err(GpuError::NotSupported {
            what: format!("GPU {index} MIG profiles (MIG is disabled or not supported)"),
        });
    }
    Ok(out)
}

/// The compute-instance profiles a GI offers, by index.
fn ci_profiles(nvml: &Nvml, gi: &RawGi, index: u32) -> Result<Vec<CiProfile>, GpuError> {
    let mut out = Vec::new();
    for ci_index in 0..sys::NVML_COMPUTE_INSTANCE_PROFILE_COUNT + 4 {
        match raw::ci_profile(nvml, gi, ci_index) {
            Ok(p) => out.push(p),
            Err(NvmlError::NotSupported) => continue,
            Err(NvmlError::InvalidArg) => break,
            Err(err) => {
                let verb = format!("compute profiles of GPU instance {}", gi.id);
                return Err(on(
                    "nvmlGpuInstanceGetComputeInstanceProfileInfo",
                    index,
                    &verb,
                )(err));
            }
        }
    }
    Ok(out)
}

/// The compute-instance profile spanning the whole GI: the most slices,
/// lowest index on a tie (so the plain profile, not a REV1 variant).
pub(super) fn full_ci_profile(nvml: &Nvml, gi: &RawGi, index: u32) -> Result<CiProfile, GpuError> {
    let profiles = ci_profiles(nvml, gi, index)?;
    let mut best: Option<CiProfile> = None;
    for p in profiles {
        if best.is_none_or(|b| p.slices > b.slices) {
            best = Some(p);
        }
    }
    best.ok_or_else(|| GpuError::NotSupported {
        what: format!(
            "GPU {index} GPU instance {}: no compute-instance profile",
            gi.id
        ),
    })
}

/// MIG device UUIDs by (GI id, CI id), from the MIG device handles.
pub(super) fn mig_uuids(
    nvml: &Nvml,
    dev: &Device<'_>,
    index: u32,
) -> Result<HashMap<(u32, u32), String>, GpuError> {
    let count = (dev.mig_device_count()).map_err(on(
        "nvmlDeviceGetMaxMigDeviceCount",
        index,
        "MIG devices",
    ))?;
    let mut out = HashMap::new();
    for slot in 0..count {
        let mig = match dev.mig_device_by_index(slot) {
            Ok(mig) => mig,
            Err(NvmlError::NotFound) => continue,
            Err(err) => {
                return Err(on(
                    "nvmlDeviceGetMigDeviceHandleByIndex",
                    index,
                    "MIG devices",
                )(err));
            }
        };
        let ids = raw::mig_device_ids(nvml, &mig).map_err(on(
            "nvmlDeviceGetGpuInstanceId",
            index,
            "MIG device ids",
        ))?;
        let uuid = mig
            .uuid()
            .map_err(on("nvmlDeviceGetUUID", index, "MIG device UUID"))?;
        out.insert(ids, uuid);
    }
    Ok(out)
}

/// Every GI with its CIs, ascending by id.
pub(super) fn instances(
    nvml: &Nvml,
    dev: &Device<'_>,
    index: u32,
) -> Result<Vec<GpuInstance>, GpuError> {
    let profiles = profiles(nvml, dev, index)?;
    let uuids = mig_uuids(nvml, dev, index)?;
    let mut out = Vec::new();
    for p in &profiles {
        let gis = raw::gpu_instances(nvml, dev, p.id, p.max_count).map_err(on(
            "nvmlDeviceGetGpuInstances",
            index,
            "list GPU instances",
        ))?;
        for gi in gis {
            let mut cis = Vec::new();
            for cp in ci_profiles(nvml, &gi, index)? {
                let found = raw::compute_instances(nvml, &gi, cp).map_err(on(
                    "nvmlGpuInstanceGetComputeInstances",
                    index,
                    "list compute instances",
                ))?;
                cis.extend(found.into_iter().map(|ci| ComputeInstance {
                    uuid: uuids.get(&(gi.id, ci.id)).cloned().unwrap_or_default(),
                    id: ci.id,
                    profile_id: ci.profile_id,
                }));
            }
            cis.sort_by_key(|ci| ci.id);
            out.push(GpuInstance {
                id: gi.id,
                profile_id: gi.profile_id,
                placement: gi.placement,
                compute_instances: cis,
            });
        }
    }
    out.sort_by_key(|gi| gi.id);
    Ok(out)
}
