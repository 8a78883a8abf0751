//! Raw NVML calls nvml-wrapper 0.13 lacks or gets wrong: GPU- and
//! compute-instance enumerate/create/destroy, profile info with names, a
//! GPU's NVLink fabric info (`nvmlDeviceGetGpuFabricInfoV`, v3, else v2), the
//! possible placements (the wrapper's never sets its vector's length), the
//! GI/CI ids of a MIG device handle, and an event-set wait that keeps the
//! GI/CI ids of the event (the wrapper's `EventSet::wait` drops them).
//!
//! The only file of the crate with `unsafe`. Each function is a safe wrapper
//! around one NVML call through the loaded library's function table
//! (`Nvml::lib()`): out-parameters are initialised locals or vectors whose
//! length is set only to what NVML reports written. GI and CI handles are raw
//! pointers valid until destroy or reset; they never leave this module's
//! callers' stack frames (the types are `!Send`) and are looked up again by id.
//! Errors are nvml-wrapper's `NvmlError`, mapped by `convert::map_err`.
#![allow(
    unsafe_code,
    reason = "the NVML FFI calls nvml-wrapper does not wrap; confined to this file"
)]

use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::{Device, EventSet, Nvml};
use nvml_wrapper_sys::bindings as sys;

use super::convert::ARGUMENT_VERSION_MISMATCH;
use crate::gpu::Placement;

/// `NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2)`: size | (2 << 24).
fn profile_info_v2_version() -> u32 {
    let size = u32::try_from(std::mem::size_of::<sys::nvmlGpuInstanceProfileInfo_v2_t>());
    size.unwrap_or(0) | (2 << 24)
}

/// A GPU instance handle with its info.
#[derive(Debug)]
pub(super) struct RawGi {
    handle: sys::nvmlGpuInstance_t,
    /// GPU instance id.
    pub id: u32,
    /// GPU-instance profile id.
    pub profile_id: u32,
    /// Memory-slice placement.
    pub placement: Placement,
}

/// A compute instance handle with its ids.
#[derive(Debug)]
pub(super) struct RawCi {
    handle: sys::nvmlComputeInstance_t,
    /// Compute instance id.
    pub id: u32,
    /// Compute-instance profile id.
    pub profile_id: u32,
}

/// A compute-instance profile available in a GPU instance.
#[derive(Debug, Clone, Copy)]
pub(super) struct CiProfile {
    /// Profile id that create takes.
    pub id: u32,
    /// Compute slices it spans.
    pub slices: u32,
    /// Most instances of it in the GPU instance.
    pub max_count: u32,
}

fn handle(dev: &Device<'_>) -> sys::nvmlDevice_t {
    // SAFETY: the handle is only passed to NVML while `dev` (and so the Nvml
    // it borrows) is alive; it is never dereferenced here.
    unsafe { dev.handle() }
}

/// `nvmlDeviceGetGpuInstanceProfileInfoV` (v2, with the name).
pub(super) fn profile_info(
    nvml: &Nvml,
    dev: &Device<'_>,
    profile_index: u32,
) -> Result<sys::nvmlGpuInstanceProfileInfo_v2_t, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlDeviceGetGpuInstanceProfileInfoV.as_ref())?;
    // SAFETY: the struct is plain C data (integers and a char array); all-zero
    // is a valid value.
    let mut info: sys::nvmlGpuInstanceProfileInfo_v2_t = unsafe { std::mem::zeroed() };
    info.version = profile_info_v2_version();
    // SAFETY: valid device handle and a pointer to a live, versioned struct.
    nvml_try(unsafe { sym(handle(dev), profile_index, &mut info) })?;
    Ok(info)
}

/// `NVML_STRUCT_VERSION(GpuFabricInfo, n)` for v2 and v3: size | (n << 24).
fn fabric_info_version(v3: bool) -> u32 {
    let (size, n) = if v3 {
        (std::mem::size_of::<sys::nvmlGpuFabricInfo_v3_t>(), 3)
    } else {
        (std::mem::size_of::<sys::nvmlGpuFabricInfo_v2_t>(), 2)
    };
    u32::try_from(size).unwrap_or(0) | (n << 24)
}

/// `nvmlDeviceGetGpuFabricInfoV`: the GPU's NVLink fabric membership, as
/// v3; from v2 (`healthSummary` 0, "not supported") where the driver
/// predates v3 and answers ARGUMENT_VERSION_MISMATCH (CUDA 12.4's header,
/// the 550 drivers', has v2 as its latest, and nvidia-smi 550 asks for v2).
pub(super) fn fabric_info(
    nvml: &Nvml,
    dev: &Device<'_>,
) -> Result<sys::nvmlGpuFabricInfo_v3_t, NvmlError> {
    match fabric_info_as(nvml, dev, true) {
        Err(NvmlError::UnexpectedVariant(ARGUMENT_VERSION_MISMATCH)) => {
            fabric_info_as(nvml, dev, false)
        }
        answer => answer,
    }
}

/// One fabric-info call with v3's version or v2's. v2's layout is v3's
/// without its last field, so a v3 struct holds either answer.
fn fabric_info_as(
    nvml: &Nvml,
    dev: &Device<'_>,
    v3: bool,
) -> Result<sys::nvmlGpuFabricInfo_v3_t, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlDeviceGetGpuFabricInfoV.as_ref())?;
    // SAFETY: the struct is plain C data (integers and a byte array); all-zero
    // is a valid value.
    let mut info: sys::nvmlGpuFabricInfo_v3_t = unsafe { std::mem::zeroed() };
    info.version = fabric_info_version(v3);
    // SAFETY: valid device handle and a pointer to a live, versioned struct
    // at least as large as the version it names.
    nvml_try(unsafe { sym(handle(dev), &mut info) })?;
    Ok(info)
}

/// `nvmlDeviceGetGpuInstancePossiblePlacements_v2`, count first, then the list.
pub(super) fn possible_placements(
    nvml: &Nvml,
    dev: &Device<'_>,
    profile_id: u32,
) -> Result<Vec<Placement>, NvmlError> {
    let sym = nvml_sym(
        nvml.lib()
            .nvmlDeviceGetGpuInstancePossiblePlacements_v2
            .as_ref(),
    )?;
    let mut count: u32 = 0;
    // SAFETY: a null list asks only for the count, written to a live local.
    nvml_try(unsafe { sym(handle(dev), profile_id, std::ptr::null_mut(), &mut count) })?;
    let empty = sys::nvmlGpuInstancePlacement_t { start: 0, size: 0 };
    let mut list = vec![empty; usize::try_from(count).unwrap_or(0)];
    // SAFETY: `list` holds `count` initialised elements; NVML writes at most
    // `count` and updates `count` to the number written.
    nvml_try(unsafe { sym(handle(dev), profile_id, list.as_mut_ptr(), &mut count) })?;
    list.truncate(usize::try_from(count).unwrap_or(0));
    Ok(list
        .into_iter()
        .map(|p| Placement {
            start: p.start,
            size: p.size,
        })
        .collect())
}

fn gi_info(nvml: &Nvml, gi: sys::nvmlGpuInstance_t) -> Result<RawGi, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlGpuInstanceGetInfo.as_ref())?;
    let mut info = sys::nvmlGpuInstanceInfo_t {
        device: std::ptr::null_mut(),
        id: 0,
        profileId: 0,
        placement: sys::nvmlGpuInstancePlacement_t { start: 0, size: 0 },
    };
    // SAFETY: `gi` came from NVML for a live device; `info` is a live local.
    nvml_try(unsafe { sym(gi, &mut info) })?;
    Ok(RawGi {
        handle: gi,
        id: info.id,
        profile_id: info.profileId,
        placement: Placement {
            start: info.placement.start,
            size: info.placement.size,
        },
    })
}

/// `nvmlDeviceGetGpuInstances` for one profile; `max` is its instance count.
pub(super) fn gpu_instances(
    nvml: &Nvml,
    dev: &Device<'_>,
    profile_id: u32,
    max: u32,
) -> Result<Vec<RawGi>, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlDeviceGetGpuInstances.as_ref())?;
    let mut handles = vec![std::ptr::null_mut(); usize::try_from(max.max(1)).unwrap_or(1)];
    let mut count: u32 = 0;
    // SAFETY: `handles` has room for `max` handles, the documented buffer size.
    nvml_try(unsafe { sym(handle(dev), profile_id, handles.as_mut_ptr(), &mut count) })?;
    handles.truncate(usize::try_from(count).unwrap_or(0));
    handles.into_iter().map(|gi| gi_info(nvml, gi)).collect()
}

/// `nvmlDeviceGetGpuInstanceById`; NOT_FOUND when absent.
pub(super) fn gpu_instance_by_id(
    nvml: &Nvml,
    dev: &Device<'_>,
    id: u32,
) -> Result<RawGi, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlDeviceGetGpuInstanceById.as_ref())?;
    let mut gi: sys::nvmlGpuInstance_t = std::ptr::null_mut();
    // SAFETY: valid device handle; `gi` is a live local out-parameter.
    nvml_try(unsafe { sym(handle(dev), id, &mut gi) })?;
    gi_info(nvml, gi)
}

/// `nvmlDeviceCreateGpuInstanceWithPlacement`.
pub(super) fn create_gpu_instance(
    nvml: &Nvml,
    dev: &Device<'_>,
    profile_id: u32,
    placement: Placement,
) -> Result<RawGi, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlDeviceCreateGpuInstanceWithPlacement.as_ref())?;
    let at = sys::nvmlGpuInstancePlacement_t {
        start: placement.start,
        size: placement.size,
    };
    let mut gi: sys::nvmlGpuInstance_t = std::ptr::null_mut();
    // SAFETY: valid device handle, a live placement and a live out-parameter.
    nvml_try(unsafe { sym(handle(dev), profile_id, &at, &mut gi) })?;
    gi_info(nvml, gi)
}

/// `nvmlGpuInstanceDestroy`; the handle is invalid afterwards.
pub(super) fn destroy_gpu_instance(nvml: &Nvml, gi: RawGi) -> Result<(), NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlGpuInstanceDestroy.as_ref())?;
    // SAFETY: the handle came from NVML and is consumed here.
    nvml_try(unsafe { sym(gi.handle) })
}

/// `nvmlGpuInstanceGetComputeInstanceProfileInfo` (shared engines).
pub(super) fn ci_profile(
    nvml: &Nvml,
    gi: &RawGi,
    profile_index: u32,
) -> Result<CiProfile, NvmlError> {
    let sym = nvml_sym(
        nvml.lib()
            .nvmlGpuInstanceGetComputeInstanceProfileInfo
            .as_ref(),
    )?;
    // SAFETY: plain C integers; all-zero is a valid value.
    let mut info: sys::nvmlComputeInstanceProfileInfo_t = unsafe { std::mem::zeroed() };
    let engines = sys::NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED;
    // SAFETY: a GI handle from NVML and a live out-parameter.
    nvml_try(unsafe { sym(gi.handle, profile_index, engines, &mut info) })?;
    Ok(CiProfile {
        id: info.id,
        slices: info.sliceCount,
        max_count: info.instanceCount,
    })
}

fn ci_info(nvml: &Nvml, ci: sys::nvmlComputeInstance_t) -> Result<RawCi, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlComputeInstanceGetInfo_v2.as_ref())?;
    let mut info = sys::nvmlComputeInstanceInfo_t {
        device: std::ptr::null_mut(),
        gpuInstance: std::ptr::null_mut(),
        id: 0,
        profileId: 0,
        placement: sys::nvmlComputeInstancePlacement_t { start: 0, size: 0 },
    };
    // SAFETY: a CI handle from NVML and a live out-parameter.
    nvml_try(unsafe { sym(ci, &mut info) })?;
    Ok(RawCi {
        handle: ci,
        id: info.id,
        profile_id: info.profileId,
    })
}

/// `nvmlGpuInstanceGetComputeInstances` for one CI profile.
pub(super) fn compute_instances(
    nvml: &Nvml,
    gi: &RawGi,
    profile: CiProfile,
) -> Result<Vec<RawCi>, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlGpuInstanceGetComputeInstances.as_ref())?;
    let room = usize::try_from(profile.max_count.max(1)).unwrap_or(1);
    let mut handles = vec![std::ptr::null_mut(); room];
    let mut count: u32 = 0;
    // SAFETY: `handles` has room for the profile's instance count.
    nvml_try(unsafe { sym(gi.handle, profile.id, handles.as_mut_ptr(), &mut count) })?;
    handles.truncate(usize::try_from(count).unwrap_or(0));
    handles.into_iter().map(|ci| ci_info(nvml, ci)).collect()
}

/// `nvmlGpuInstanceCreateComputeInstance`.
pub(super) fn create_compute_instance(
    nvml: &Nvml,
    gi: &RawGi,
    profile_id: u32,
) -> Result<RawCi, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlGpuInstanceCreateComputeInstance.as_ref())?;
    let mut ci: sys::nvmlComputeInstance_t = std::ptr::null_mut();
    // SAFETY: a GI handle from NVML and a live out-parameter.
    nvml_try(unsafe { sym(gi.handle, profile_id, &mut ci) })?;
    ci_info(nvml, ci)
}

/// `nvmlGpuInstanceGetComputeInstanceById`; NOT_FOUND when absent.
pub(super) fn compute_instance_by_id(nvml: &Nvml, gi: &RawGi, id: u32) -> Result<RawCi, NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlGpuInstanceGetComputeInstanceById.as_ref())?;
    let mut ci: sys::nvmlComputeInstance_t = std::ptr::null_mut();
    // SAFETY: a GI handle from NVML and a live out-parameter.
    nvml_try(unsafe { sym(gi.handle, id, &mut ci) })?;
    ci_info(nvml, ci)
}

/// `nvmlComputeInstanceDestroy`; the handle is invalid afterwards.
pub(super) fn destroy_compute_instance(nvml: &Nvml, ci: RawCi) -> Result<(), NvmlError> {
    let sym = nvml_sym(nvml.lib().nvmlComputeInstanceDestroy.as_ref())?;
    // SAFETY: the handle came from NVML and is consumed here.
    nvml_try(unsafe { sym(ci.handle) })
}

/// (GPU instance id, compute instance id) of a MIG device handle.
pub(super) fn mig_device_ids(nvml: &Nvml, mig: &Device<'_>) -> Result<(u32, u32), NvmlError> {
    let gi_sym = nvml_sym(nvml.lib().nvmlDeviceGetGpuInstanceId.as_ref())?;
    let ci_sym = nvml_sym(nvml.lib().nvmlDeviceGetComputeInstanceId.as_ref())?;
    let (mut gi, mut ci) = (0u32, 0u32);
    // SAFETY: a MIG device handle from NVML and live out-parameters.
    nvml_try(unsafe { gi_sym(handle(mig), &mut gi) })?;
    // SAFETY: as above.
    nvml_try(unsafe { ci_sym(handle(mig), &mut ci) })?;
    Ok((gi, ci))
}

/// One event of an event set, with NVML's instance ids (0xFFFFFFFF when the
/// event is not attributed to a MIG instance).
#[derive(Debug)]
pub(super) struct RawEvent<'nvml> {
    /// The GPU the event occurred on.
    pub device: Device<'nvml>,
    /// `nvmlEventType*` bits.
    pub event_type: u64,
    /// The XID for `nvmlEventTypeXidCriticalError`, else 0.
    pub data: u64,
    /// GPU instance id.
    pub gpu_instance: u32,
    /// Compute instance id.
    pub compute_instance: u32,
}

/// `nvmlEventSetWait_v2`: the next event of `set`, waiting up to `timeout_ms`.
pub(super) fn wait_event<'nvml>(
    set: &EventSet<'nvml>,
    timeout_ms: u32,
) -> Result<RawEvent<'nvml>, NvmlError> {
    let nvml = set.nvml;
    let sym = nvml_sym(nvml.lib().nvmlEventSetWait_v2.as_ref())?;
    // SAFETY: plain C data; all-zero is a valid value of every field.
    let mut data: sys::nvmlEventData_t = unsafe { std::mem::zeroed() };
    // SAFETY: the set handle is live while `set` is (it is only passed to NVML,
    // never freed here), and `data` is a live out-parameter.
    nvml_try(unsafe { sym(set.handle(), &mut data, timeout_ms) })?;
    Ok(RawEvent {
        // SAFETY: NVML filled `device` with a handle of `nvml`, valid as long
        // as the `Nvml` the returned `Device` borrows.
        device: unsafe { Device::new(data.device, nvml) },
        event_type: data.eventType,
        data: data.eventData,
        gpu_instance: data.gpuInstanceId,
        compute_instance: data.computeInstanceId,
    })
}
