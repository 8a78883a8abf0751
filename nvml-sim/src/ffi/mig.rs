//! GPU-instance and compute-instance calls (semantics in `crate::mig`).

use std::ffi::c_uint;

use gpuslice::gpu::{GpuInstance, MigProfile, Placement};
use nvml_wrapper_sys::bindings as sys;

use super::{Out, OutSlice, fixed, guard};
use crate::code::{ARGUMENT_VERSION_MISMATCH, Answer, INVALID_ARGUMENT, struct_version};
use crate::handle::Handle;
use crate::mig::CiProfile;
use crate::node::{Node, node};

/// The GPU a device handle names, which must be a whole GPU.
fn gpu_of(node: &Node, device: sys::nvmlDevice_t) -> Answer<u32> {
    node.whole(device)
}

/// (GPU index, GPU instance id) of a GPU-instance handle.
fn gi_of(handle: sys::nvmlGpuInstance_t) -> Answer<(u32, u32)> {
    match Handle::of(handle)? {
        Handle::GpuInstance { gpu, gi } => Ok((gpu, gi)),
        _ => Err(INVALID_ARGUMENT),
    }
}

/// (GPU index, GPU instance id, compute instance id) of a compute-instance
/// handle.
fn ci_of(handle: sys::nvmlComputeInstance_t) -> Answer<(u32, u32, u32)> {
    match Handle::of(handle)? {
        Handle::ComputeInstance { gpu, gi, ci } => Ok((gpu, gi, ci)),
        _ => Err(INVALID_ARGUMENT),
    }
}

fn v1_profile(p: &MigProfile) -> sys::nvmlGpuInstanceProfileInfo_t {
    sys::nvmlGpuInstanceProfileInfo_t {
        id: p.id,
        isP2pSupported: 0,
        sliceCount: p.compute_slices,
        instanceCount: p.max_count,
        multiprocessorCount: p.multiprocessors,
        copyEngineCount: p.copy_engines,
        decoderCount: p.decoders,
        encoderCount: p.encoders,
        jpegCount: p.jpegs,
        ofaCount: p.ofas,
        memorySizeMB: p.memory_bytes >> 20,
    }
}

/// `nvmlDeviceGetGpuInstanceProfileInfo` (no name).
///
/// # Safety
/// `info` is NULL or points to an `nvmlGpuInstanceProfileInfo_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceProfileInfo(
    device: sys::nvmlDevice_t,
    profile: c_uint,
    info: *mut sys::nvmlGpuInstanceProfileInfo_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(info) }?;
        let node = node()?;
        out.set(v1_profile(
            &node.profile_at(gpu_of(node, device)?, profile)?,
        ));
        Ok(())
    })
}

/// `nvmlDeviceGetGpuInstanceProfileInfoV`: v2 (with `isP2pSupported`) or
/// v3 (with `capabilities` in its place), by the version the caller wrote.
///
/// # Safety
/// `info` is NULL or points to the `nvmlGpuInstanceProfileInfo_v2_t` or
/// `_v3_t` its version names.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceProfileInfoV(
    device: sys::nvmlDevice_t,
    profile: c_uint,
    info: *mut sys::nvmlGpuInstanceProfileInfo_v2_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(info) }?;
        let version = out.version();
        let v2 = struct_version::<sys::nvmlGpuInstanceProfileInfo_v2_t>(2);
        let v3 = struct_version::<sys::nvmlGpuInstanceProfileInfo_v3_t>(3);
        if version != v2 && version != v3 {
            return Err(ARGUMENT_VERSION_MISMATCH);
        }
        let node = node()?;
        let p = node.profile_at(gpu_of(node, device)?, profile)?;
        let v1 = v1_profile(&p);
        let name = fixed(&format!("MIG {}", p.name));
        if version == v2 {
            out.set(sys::nvmlGpuInstanceProfileInfo_v2_t {
                version,
                id: v1.id,
                isP2pSupported: v1.isP2pSupported,
                sliceCount: v1.sliceCount,
                instanceCount: v1.instanceCount,
                multiprocessorCount: v1.multiprocessorCount,
                copyEngineCount: v1.copyEngineCount,
                decoderCount: v1.decoderCount,
                encoderCount: v1.encoderCount,
                jpegCount: v1.jpegCount,
                ofaCount: v1.ofaCount,
                memorySizeMB: v1.memorySizeMB,
                name,
            });
            return Ok(());
        }
        // SAFETY: the caller wrote v3's version: its struct is a v3 (the
        // same size as a v2).
        let out = unsafe { out.as_version::<sys::nvmlGpuInstanceProfileInfo_v3_t>() };
        out.set(sys::nvmlGpuInstanceProfileInfo_v3_t {
            version,
            id: v1.id,
            sliceCount: v1.sliceCount,
            instanceCount: v1.instanceCount,
            multiprocessorCount: v1.multiprocessorCount,
            copyEngineCount: v1.copyEngineCount,
            decoderCount: v1.decoderCount,
            encoderCount: v1.encoderCount,
            jpegCount: v1.jpegCount,
            ofaCount: v1.ofaCount,
            memorySizeMB: v1.memorySizeMB,
            name,
            capabilities: 0,
        });
        Ok(())
    })
}

/// `nvmlDeviceGetGpuInstancePossiblePlacements_v2`: with a NULL list, the
/// count only.
///
/// # Safety
/// `count` is NULL or points to an unsigned int; `placements` is NULL or
/// holds `*count` placements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    device: sys::nvmlDevice_t,
    profile_id: c_uint,
    placements: *mut sys::nvmlGpuInstancePlacement_t,
    count: *mut c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let count = unsafe { Out::new(count) }?;
        let node = node()?;
        let list = node
            .profile_by_id(gpu_of(node, device)?, profile_id)?
            .placements;
        let n = u32::try_from(list.len()).map_err(|_| INVALID_ARGUMENT)?;
        if !placements.is_null() {
            let room = usize::try_from(count.get()).map_err(|_| INVALID_ARGUMENT)?;
            // SAFETY: the caller's contract: `*count` placements.
            let out = unsafe { OutSlice::new(placements, room) }?;
            out.fill(list.iter().map(|p| sys::nvmlGpuInstancePlacement_t {
                start: p.start,
                size: p.size,
            }))?;
        }
        count.set(n);
        Ok(())
    })
}

/// Writes an unsigned int answer.
///
/// # Safety
/// `out` is NULL or points to an unsigned int.
unsafe fn put_uint(out: *mut c_uint, answer: impl FnOnce() -> Answer<u32>) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the function's contract.
        let out = unsafe { Out::new(out) }?;
        out.set(answer()?);
        Ok(())
    })
}

/// `nvmlDeviceGetGpuInstanceRemainingCapacity`.
///
/// # Safety
/// `count` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceRemainingCapacity(
    device: sys::nvmlDevice_t,
    profile_id: c_uint,
    count: *mut c_uint,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        put_uint(count, || {
            let node = node()?;
            node.remaining(gpu_of(node, device)?, profile_id)
        })
    }
}

/// Writes the handle of a GPU instance just made.
///
/// # Safety
/// `out` is NULL or points to an `nvmlGpuInstance_t`.
unsafe fn give_gi(
    out: *mut sys::nvmlGpuInstance_t,
    gpu: u32,
    made: impl FnOnce() -> Answer<GpuInstance>,
) -> Answer<()> {
    // SAFETY: the function's contract.
    let out = unsafe { Out::new(out) }?;
    let gi = made()?;
    out.set(Handle::GpuInstance { gpu, gi: gi.id }.address()?);
    Ok(())
}

/// `nvmlDeviceCreateGpuInstance`: where the driver would put it.
///
/// # Safety
/// `gpu_instance` is NULL or points to an `nvmlGpuInstance_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceCreateGpuInstance(
    device: sys::nvmlDevice_t,
    profile_id: c_uint,
    gpu_instance: *mut sys::nvmlGpuInstance_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        let gpu = gpu_of(node, device)?;
        // SAFETY: the caller's contract, passed on.
        unsafe { give_gi(gpu_instance, gpu, || node.create_anywhere(gpu, profile_id)) }
    })
}

/// `nvmlDeviceCreateGpuInstanceWithPlacement`.
///
/// # Safety
/// `placement` is NULL or points to a placement; `gpu_instance` is NULL or
/// points to an `nvmlGpuInstance_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceCreateGpuInstanceWithPlacement(
    device: sys::nvmlDevice_t,
    profile_id: c_uint,
    placement: *const sys::nvmlGpuInstancePlacement_t,
    gpu_instance: *mut sys::nvmlGpuInstance_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract: NULL or a placement it owns.
        let at = unsafe { placement.as_ref() }.ok_or(INVALID_ARGUMENT)?;
        let at = Placement {
            start: at.start,
            size: at.size,
        };
        let node = node()?;
        let gpu = gpu_of(node, device)?;
        // SAFETY: the caller's contract, passed on.
        unsafe { give_gi(gpu_instance, gpu, || node.create_at(gpu, profile_id, at)) }
    })
}

/// `nvmlDeviceGetGpuInstances` of one profile: `*count` is only written;
/// the list has room for the profile's instance count.
///
/// # Safety
/// `count` is NULL or points to an unsigned int; `gpu_instances` is NULL
/// or holds as many handles as the profile's `instanceCount`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstances(
    device: sys::nvmlDevice_t,
    profile_id: c_uint,
    gpu_instances: *mut sys::nvmlGpuInstance_t,
    count: *mut c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let count = unsafe { Out::new(count) }?;
        let node = node()?;
        let gpu = gpu_of(node, device)?;
        let room = node.profile_by_id(gpu, profile_id)?.max_count;
        let room = usize::try_from(room).map_err(|_| INVALID_ARGUMENT)?;
        // SAFETY: the caller's contract: room for the instance count.
        let out = unsafe { OutSlice::new(gpu_instances, room) }?;
        let found = node.instances_of(gpu, profile_id)?;
        let handles = (found.iter())
            .map(|gi| Handle::GpuInstance { gpu, gi: gi.id }.address())
            .collect::<Answer<Vec<_>>>()?;
        out.fill(handles.into_iter())?;
        count.set(u32::try_from(found.len()).map_err(|_| INVALID_ARGUMENT)?);
        Ok(())
    })
}

/// `nvmlDeviceGetGpuInstanceById`.
///
/// # Safety
/// `gpu_instance` is NULL or points to an `nvmlGpuInstance_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceById(
    device: sys::nvmlDevice_t,
    id: c_uint,
    gpu_instance: *mut sys::nvmlGpuInstance_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        let gpu = gpu_of(node, device)?;
        // SAFETY: the caller's contract, passed on.
        unsafe { give_gi(gpu_instance, gpu, || node.instance(gpu, id)) }
    })
}

/// `nvmlGpuInstanceGetInfo`.
///
/// # Safety
/// `info` is NULL or points to an `nvmlGpuInstanceInfo_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetInfo(
    gpu_instance: sys::nvmlGpuInstance_t,
    info: *mut sys::nvmlGpuInstanceInfo_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(info) }?;
        let (gpu, id) = gi_of(gpu_instance)?;
        let gi = node()?.live_instance(gpu, id)?;
        out.set(sys::nvmlGpuInstanceInfo_t {
            device: Handle::Gpu(gpu).device()?,
            id: gi.id,
            profileId: gi.profile_id,
            placement: sys::nvmlGpuInstancePlacement_t {
                start: gi.placement.start,
                size: gi.placement.size,
            },
        });
        Ok(())
    })
}

/// `nvmlGpuInstanceDestroy`.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlGpuInstanceDestroy(
    gpu_instance: sys::nvmlGpuInstance_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let (gpu, id) = gi_of(gpu_instance)?;
        node()?.destroy_instance(gpu, id)
    })
}

fn v1_ci_profile(p: &CiProfile) -> sys::nvmlComputeInstanceProfileInfo_t {
    let [copy, decoders, encoders, jpegs, ofas] = p.engines;
    sys::nvmlComputeInstanceProfileInfo_t {
        id: p.id,
        sliceCount: p.slices,
        instanceCount: p.count,
        multiprocessorCount: p.multiprocessors,
        sharedCopyEngineCount: copy,
        sharedDecoderCount: decoders,
        sharedEncoderCount: encoders,
        sharedJpegCount: jpegs,
        sharedOfaCount: ofas,
    }
}

/// `nvmlGpuInstanceGetComputeInstanceProfileInfo` (no name; what gpusliced
/// calls).
///
/// # Safety
/// `info` is NULL or points to an `nvmlComputeInstanceProfileInfo_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetComputeInstanceProfileInfo(
    gpu_instance: sys::nvmlGpuInstance_t,
    profile: c_uint,
    eng_profile: c_uint,
    info: *mut sys::nvmlComputeInstanceProfileInfo_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(info) }?;
        let (gpu, gi) = gi_of(gpu_instance)?;
        out.set(v1_ci_profile(&node()?.ci_profile_at(
            gpu,
            gi,
            profile,
            eng_profile,
        )?));
        Ok(())
    })
}

/// `nvmlGpuInstanceGetComputeInstanceProfileInfoV`: v2 (nvidia-smi 550's)
/// or v3, by the version the caller wrote.
///
/// # Safety
/// `info` is NULL or points to the `nvmlComputeInstanceProfileInfo_v2_t`
/// or `_v3_t` its version names.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    gpu_instance: sys::nvmlGpuInstance_t,
    profile: c_uint,
    eng_profile: c_uint,
    info: *mut sys::nvmlComputeInstanceProfileInfo_v2_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(info) }?;
        let version = out.version();
        let v2 = struct_version::<sys::nvmlComputeInstanceProfileInfo_v2_t>(2);
        let v3 = struct_version::<sys::nvmlComputeInstanceProfileInfo_v3_t>(3);
        if version != v2 && version != v3 {
            return Err(ARGUMENT_VERSION_MISMATCH);
        }
        let (gpu, gi) = gi_of(gpu_instance)?;
        let p = node()?.ci_profile_at(gpu, gi, profile, eng_profile)?;
        let v1 = v1_ci_profile(&p);
        let v2_info = sys::nvmlComputeInstanceProfileInfo_v2_t {
            version,
            id: v1.id,
            sliceCount: v1.sliceCount,
            instanceCount: v1.instanceCount,
            multiprocessorCount: v1.multiprocessorCount,
            sharedCopyEngineCount: v1.sharedCopyEngineCount,
            sharedDecoderCount: v1.sharedDecoderCount,
            sharedEncoderCount: v1.sharedEncoderCount,
            sharedJpegCount: v1.sharedJpegCount,
            sharedOfaCount: v1.sharedOfaCount,
            name: fixed(&p.name),
        };
        if version == v2 {
            out.set(v2_info);
            return Ok(());
        }
        // SAFETY: the caller wrote v3's version: its struct is a v3.
        let out = unsafe { out.as_version::<sys::nvmlComputeInstanceProfileInfo_v3_t>() };
        out.set(sys::nvmlComputeInstanceProfileInfo_v3_t {
            version,
            id: v2_info.id,
            sliceCount: v2_info.sliceCount,
            instanceCount: v2_info.instanceCount,
            multiprocessorCount: v2_info.multiprocessorCount,
            sharedCopyEngineCount: v2_info.sharedCopyEngineCount,
            sharedDecoderCount: v2_info.sharedDecoderCount,
            sharedEncoderCount: v2_info.sharedEncoderCount,
            sharedJpegCount: v2_info.sharedJpegCount,
            sharedOfaCount: v2_info.sharedOfaCount,
            name: v2_info.name,
            capabilities: 0,
        });
        Ok(())
    })
}

/// `nvmlGpuInstanceGetComputeInstanceRemainingCapacity`.
///
/// # Safety
/// `count` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetComputeInstanceRemainingCapacity(
    gpu_instance: sys::nvmlGpuInstance_t,
    profile_id: c_uint,
    count: *mut c_uint,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        put_uint(count, || {
            let (gpu, gi) = gi_of(gpu_instance)?;
            node()?.ci_remaining(gpu, gi, profile_id)
        })
    }
}

/// Writes a compute-instance handle.
///
/// # Safety
/// `out` is NULL or points to an `nvmlComputeInstance_t`.
unsafe fn give_ci(
    out: *mut sys::nvmlComputeInstance_t,
    (gpu, gi): (u32, u32),
    made: impl FnOnce() -> Answer<u32>,
) -> Answer<()> {
    // SAFETY: the function's contract.
    let out = unsafe { Out::new(out) }?;
    let ci = made()?;
    out.set(Handle::ComputeInstance { gpu, gi, ci }.address()?);
    Ok(())
}

/// `nvmlGpuInstanceCreateComputeInstance`.
///
/// # Safety
/// `compute_instance` is NULL or points to an `nvmlComputeInstance_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceCreateComputeInstance(
    gpu_instance: sys::nvmlGpuInstance_t,
    profile_id: c_uint,
    compute_instance: *mut sys::nvmlComputeInstance_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let (gpu, gi) = gi_of(gpu_instance)?;
        let node = node()?;
        // SAFETY: the caller's contract, passed on.
        unsafe {
            give_ci(compute_instance, (gpu, gi), || {
                node.create_compute(gpu, gi, profile_id)
            })
        }
    })
}

/// `nvmlGpuInstanceGetComputeInstances` of one profile: `*count` is only
/// written; the list has room for the profile's instance count.
///
/// # Safety
/// `count` is NULL or points to an unsigned int; `compute_instances` is
/// NULL or holds as many handles as the profile's `instanceCount`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetComputeInstances(
    gpu_instance: sys::nvmlGpuInstance_t,
    profile_id: c_uint,
    compute_instances: *mut sys::nvmlComputeInstance_t,
    count: *mut c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let count = unsafe { Out::new(count) }?;
        let (gpu, gi) = gi_of(gpu_instance)?;
        let node = node()?;
        let ids = node.computes_of(gpu, gi, profile_id)?;
        // One compute instance per GPU instance here: any list has room.
        // SAFETY: the caller's contract: room for the profile's count, at
        // least one.
        let out = unsafe { OutSlice::new(compute_instances, ids.len().max(1)) }?;
        let handles = (ids.iter())
            .map(|&ci| Handle::ComputeInstance { gpu, gi, ci }.address())
            .collect::<Answer<Vec<_>>>()?;
        out.fill(handles.into_iter())?;
        count.set(u32::try_from(ids.len()).map_err(|_| INVALID_ARGUMENT)?);
        Ok(())
    })
}

/// `nvmlGpuInstanceGetComputeInstanceById`: NOT_FOUND when absent.
///
/// # Safety
/// `compute_instance` is NULL or points to an `nvmlComputeInstance_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlGpuInstanceGetComputeInstanceById(
    gpu_instance: sys::nvmlGpuInstance_t,
    id: c_uint,
    compute_instance: *mut sys::nvmlComputeInstance_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let (gpu, gi) = gi_of(gpu_instance)?;
        let node = node()?;
        // SAFETY: the caller's contract, passed on.
        unsafe {
            give_ci(compute_instance, (gpu, gi), || {
                node.compute(gpu, gi, id, crate::code::NOT_FOUND)
                    .map(|_| id)
            })
        }
    })
}

/// `nvmlComputeInstanceGetInfo_v2`: `device` is the parent GPU.
///
/// # Safety
/// `info` is NULL or points to an `nvmlComputeInstanceInfo_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlComputeInstanceGetInfo_v2(
    compute_instance: sys::nvmlComputeInstance_t,
    info: *mut sys::nvmlComputeInstanceInfo_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(info) }?;
        let (gpu, gi, ci) = ci_of(compute_instance)?;
        let (_, profile) = node()?.compute(gpu, gi, ci, INVALID_ARGUMENT)?;
        out.set(sys::nvmlComputeInstanceInfo_t {
            device: Handle::Gpu(gpu).device()?,
            gpuInstance: Handle::GpuInstance { gpu, gi }.address()?,
            id: ci,
            profileId: profile.id,
            placement: sys::nvmlComputeInstancePlacement_t {
                start: 0,
                size: profile.slices,
            },
        });
        Ok(())
    })
}

/// `nvmlComputeInstanceDestroy`.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlComputeInstanceDestroy(
    compute_instance: sys::nvmlComputeInstance_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let (gpu, gi, ci) = ci_of(compute_instance)?;
        node()?.destroy_compute(gpu, gi, ci)
    })
}
