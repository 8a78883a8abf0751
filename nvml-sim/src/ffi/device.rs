//! Device handles and the getters of a GPU or MIG device.

use std::ffi::{c_char, c_int, c_uint, c_ulonglong};

use gpuslice::gpu::FabricState;
use nvml_wrapper_sys::bindings as sys;

use super::{Out, OutBuf, c_str, fixed, guard};
use crate::code::{
    ARGUMENT_VERSION_MISMATCH, Answer, INVALID_ARGUMENT, NOT_SUPPORTED, struct_version,
};
use crate::device::{Device, architecture, brand, bus_parts, mig_handle, nvml_bus_id};
use crate::handle::Handle;
use crate::node::node;

/// Writes `handle` to the caller's `out`.
///
/// # Safety
/// `out` is NULL or points to an `nvmlDevice_t`.
unsafe fn give(out: *mut sys::nvmlDevice_t, handle: Answer<Handle>) -> Answer<()> {
    let address = handle?.device()?;
    // SAFETY: the function's contract.
    unsafe { Out::new(out) }?.set(address);
    Ok(())
}

/// # Safety
/// `device` is NULL or points to an `nvmlDevice_t`.
unsafe fn by_index(index: c_uint, device: *mut sys::nvmlDevice_t) -> sys::nvmlReturn_t {
    // SAFETY: the function's contract, passed on.
    guard(|| unsafe { give(device, node()?.handle_by_index(index)) })
}

/// `nvmlDeviceGetHandleByIndex_v2`.
///
/// # Safety
/// `device` is NULL or points to an `nvmlDevice_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(
    index: c_uint,
    device: *mut sys::nvmlDevice_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { by_index(index, device) }
}

/// `nvmlDeviceGetHandleByIndex`.
///
/// # Safety
/// `device` is NULL or points to an `nvmlDevice_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex(
    index: c_uint,
    device: *mut sys::nvmlDevice_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { by_index(index, device) }
}

/// `nvmlDeviceGetHandleByUUID`: a GPU's UUID or a MIG device's.
///
/// # Safety
/// `uuid` is NULL or a NUL-terminated string; `device` is NULL or points to
/// an `nvmlDevice_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByUUID(
    uuid: *const c_char,
    device: *mut sys::nvmlDevice_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let uuid = unsafe { c_str(uuid) }?;
        let handle = node()?.handle_by_uuid(uuid);
        // SAFETY: the caller's contract.
        unsafe { give(device, handle) }
    })
}

/// # Safety
/// As `nvmlDeviceGetHandleByPciBusId_v2`'s.
unsafe fn by_bus_id(bus_id: *const c_char, device: *mut sys::nvmlDevice_t) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the function's contract.
        let bus_id = unsafe { c_str(bus_id) }?;
        let handle = node()?.handle_by_bus_id(bus_id);
        // SAFETY: the function's contract.
        unsafe { give(device, handle) }
    })
}

/// `nvmlDeviceGetHandleByPciBusId_v2`.
///
/// # Safety
/// `bus_id` is NULL or a NUL-terminated string; `device` is NULL or points
/// to an `nvmlDevice_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByPciBusId_v2(
    bus_id: *const c_char,
    device: *mut sys::nvmlDevice_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { by_bus_id(bus_id, device) }
}

/// `nvmlDeviceGetName`.
///
/// # Safety
/// `name` is NULL or holds `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetName(
    device: sys::nvmlDevice_t,
    name: *mut c_char,
    length: c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        let text = node.name(&node.device(device)?)?;
        // SAFETY: the caller's contract.
        unsafe { OutBuf::new(name, length) }?.put(&text)
    })
}

/// `nvmlDeviceGetUUID`.
///
/// # Safety
/// `uuid` is NULL or holds `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetUUID(
    device: sys::nvmlDevice_t,
    uuid: *mut c_char,
    length: c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        let text = node.uuid(&node.device(device)?)?;
        // SAFETY: the caller's contract.
        unsafe { OutBuf::new(uuid, length) }?.put(&text)
    })
}

/// `nvmlDeviceGetSerial`: the tables hold no serial numbers.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlDeviceGetSerial(
    device: sys::nvmlDevice_t,
    _serial: *mut c_char,
    _length: c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        node()?.device(device)?;
        Err(NOT_SUPPORTED)
    })
}

/// Writes what `answer` gives for `device` to `out`.
///
/// # Safety
/// `out` is NULL or points to a `T`.
unsafe fn getter<T>(
    device: sys::nvmlDevice_t,
    out: *mut T,
    answer: impl FnOnce(&crate::node::Node, &Device) -> Answer<T>,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        let value = answer(node, &node.device(device)?)?;
        // SAFETY: the function's contract.
        unsafe { Out::new(out) }?.set(value);
        Ok(())
    })
}

/// `nvmlDeviceGetIndex`: a GPU's index, a MIG device's position.
///
/// # Safety
/// `index` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetIndex(
    device: sys::nvmlDevice_t,
    index: *mut c_uint,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, index, |_, device| {
            Ok(match device {
                Device::Gpu(index) => *index,
                Device::Mig(mig) => mig.position,
            })
        })
    }
}

/// `nvmlDeviceGetMinorNumber`: the GPU's index, as the simulator numbers
/// `/dev/nvidiaN`; NOT_SUPPORTED on a MIG device.
///
/// # Safety
/// `minor` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMinorNumber(
    device: sys::nvmlDevice_t,
    minor: *mut c_uint,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, minor, |node, device| match device {
            Device::Gpu(index) => Ok(node.info(*index)?.minor),
            Device::Mig(_) => Err(NOT_SUPPORTED),
        })
    }
}

/// `nvmlDeviceGetBrand`.
///
/// # Safety
/// `kind` is NULL or points to an `nvmlBrandType_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetBrand(
    device: sys::nvmlDevice_t,
    kind: *mut sys::nvmlBrandType_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { getter(device, kind, |node, d| Ok(brand(node.spec(d.gpu())?.brand))) }
}

/// `nvmlDeviceGetArchitecture`.
///
/// # Safety
/// `arch` is NULL or points to an `nvmlDeviceArchitecture_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetArchitecture(
    device: sys::nvmlDevice_t,
    arch: *mut sys::nvmlDeviceArchitecture_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, arch, |node, d| {
            Ok(architecture(node.spec(d.gpu())?.architecture))
        })
    }
}

/// `nvmlDeviceGetCudaComputeCapability`.
///
/// # Safety
/// `major` and `minor` are NULL or point to ints.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCudaComputeCapability(
    device: sys::nvmlDevice_t,
    major: *mut c_int,
    minor: *mut c_int,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        let (a, b) = node.spec(node.device(device)?.gpu())?.compute_capability;
        let int = |v: u32| c_int::try_from(v).map_err(|_| INVALID_ARGUMENT);
        // SAFETY: the caller's contract.
        let (major, minor) = unsafe { (Out::new(major)?, Out::new(minor)?) };
        major.set(int(a)?);
        minor.set(int(b)?);
        Ok(())
    })
}

/// The PCI info of a (parent) GPU.
fn pci_info(device: sys::nvmlDevice_t) -> Answer<sys::nvmlPciInfo_t> {
    let node = node()?;
    let index = node.device(device)?.gpu();
    let info = node.info(index)?;
    let (domain, bus, dev, _) = bus_parts(&info)?;
    let id = nvml_bus_id(&info);
    Ok(sys::nvmlPciInfo_t {
        busIdLegacy: fixed(id.get(4..).unwrap_or(&id)),
        domain,
        bus,
        device: dev,
        pciDeviceId: u32::from(node.spec(index)?.pci_device_id) << 16 | 0x10de,
        pciSubSystemId: 0,
        busId: fixed(&id),
    })
}

/// `nvmlDeviceGetPciInfo_v3`.
///
/// # Safety
/// `pci` is NULL or points to an `nvmlPciInfo_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v3(
    device: sys::nvmlDevice_t,
    pci: *mut sys::nvmlPciInfo_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let info = pci_info(device)?;
        // SAFETY: the caller's contract.
        unsafe { Out::new(pci) }?.set(info);
        Ok(())
    })
}

/// `nvmlDeviceGetPciInfo_v2`: the same struct as v3's.
///
/// # Safety
/// `pci` is NULL or points to an `nvmlPciInfo_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfo_v2(
    device: sys::nvmlDevice_t,
    pci: *mut sys::nvmlPciInfo_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { nvmlDeviceGetPciInfo_v3(device, pci) }
}

/// `nvmlDeviceGetPciInfoExt` (v1): a 3D controller (class 0x0302), as
/// data-center GPUs are.
///
/// # Safety
/// `pci` is NULL or points to an `nvmlPciInfoExt_t` whose version is set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetPciInfoExt(
    device: sys::nvmlDevice_t,
    pci: *mut sys::nvmlPciInfoExt_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(pci) }?;
        if out.version() != struct_version::<sys::nvmlPciInfoExt_v1_t>(1) {
            return Err(ARGUMENT_VERSION_MISMATCH);
        }
        let info = pci_info(device)?;
        out.set(sys::nvmlPciInfoExt_t {
            version: out.version(),
            domain: info.domain,
            bus: info.bus,
            device: info.device,
            pciDeviceId: info.pciDeviceId,
            pciSubSystemId: info.pciSubSystemId,
            baseClass: 0x3,
            subClass: 0x2,
            busId: info.busId,
        });
        Ok(())
    })
}

/// `nvmlDeviceGetMemoryInfo_v2`: no memory reserved by the simulated driver.
///
/// # Safety
/// `memory` is NULL or points to an `nvmlMemory_v2_t` whose version is set.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo_v2(
    device: sys::nvmlDevice_t,
    memory: *mut sys::nvmlMemory_v2_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(memory) }?;
        if out.version() != struct_version::<sys::nvmlMemory_v2_t>(2) {
            return Err(ARGUMENT_VERSION_MISMATCH);
        }
        let node = node()?;
        let used = node.memory(&node.device(device)?)?;
        out.set(sys::nvmlMemory_v2_t {
            version: out.version(),
            total: used.total,
            reserved: 0,
            free: used.total.saturating_sub(used.used),
            used: used.used,
        });
        Ok(())
    })
}

/// `nvmlDeviceGetMemoryInfo`, the first version.
///
/// # Safety
/// `memory` is NULL or points to an `nvmlMemory_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMemoryInfo(
    device: sys::nvmlDevice_t,
    memory: *mut sys::nvmlMemory_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, memory, |node, device| {
            let used = node.memory(device)?;
            Ok(sys::nvmlMemory_t {
                total: used.total,
                free: used.total.saturating_sub(used.used),
                used: used.used,
            })
        })
    }
}

/// `nvmlDeviceGetComputeMode`.
///
/// # Safety
/// `mode` is NULL or points to an `nvmlComputeMode_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeMode(
    device: sys::nvmlDevice_t,
    mode: *mut sys::nvmlComputeMode_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { getter(device, mode, |node, d| node.compute_mode(d.gpu())) }
}

/// `nvmlDeviceSetComputeMode`.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlDeviceSetComputeMode(
    device: sys::nvmlDevice_t,
    mode: sys::nvmlComputeMode_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        node.set_compute_mode(node.whole(device)?, mode)
    })
}

/// `nvmlDeviceGetMigMode`.
///
/// # Safety
/// `current` and `pending` are NULL or point to unsigned ints.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigMode(
    device: sys::nvmlDevice_t,
    current: *mut c_uint,
    pending: *mut c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        let (now, next) = node.mig_mode(node.whole(device)?)?;
        // SAFETY: the caller's contract.
        let (current, pending) = unsafe { (Out::new(current)?, Out::new(pending)?) };
        current.set(now);
        pending.set(next);
        Ok(())
    })
}

/// `nvmlDeviceSetMigMode`: see `Node::set_mig_mode` for when the mode is
/// left pending.
///
/// # Safety
/// `activation_status` is NULL or points to an `nvmlReturn_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceSetMigMode(
    device: sys::nvmlDevice_t,
    mode: c_uint,
    activation_status: *mut sys::nvmlReturn_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let status = unsafe { Out::new(activation_status) }?;
        let node = node()?;
        let activation = node.set_mig_mode(node.whole(device)?, mode)?;
        status.set(activation);
        Ok(())
    })
}

/// `nvmlDeviceIsMigDeviceHandle`.
///
/// # Safety
/// `is_mig` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceIsMigDeviceHandle(
    device: sys::nvmlDevice_t,
    is_mig: *mut c_uint,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, is_mig, |_, d| {
            Ok(u32::from(matches!(d, Device::Mig(_))))
        })
    }
}

/// `nvmlDeviceGetMaxMigDeviceCount`: the GPU's compute slices in MIG
/// mode, else 0.
///
/// # Safety
/// `count` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMaxMigDeviceCount(
    device: sys::nvmlDevice_t,
    count: *mut c_uint,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, count, |node, d| match d {
            Device::Gpu(index) if node.mig_enabled(*index)? => {
                Ok(node.spec(*index)?.compute_slices)
            }
            Device::Gpu(_) => Ok(0),
            Device::Mig(_) => Err(INVALID_ARGUMENT),
        })
    }
}

/// `nvmlDeviceGetMigDeviceHandleByIndex`: NOT_FOUND past the last MIG
/// device.
///
/// # Safety
/// `mig` is NULL or points to an `nvmlDevice_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetMigDeviceHandleByIndex(
    device: sys::nvmlDevice_t,
    index: c_uint,
    mig: *mut sys::nvmlDevice_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        let gpu = node.whole(device)?;
        let at = usize::try_from(index).map_err(|_| INVALID_ARGUMENT)?;
        let found = node.mig_devices(gpu)?.into_iter().nth(at);
        let handle = found.map(|m| mig_handle(&m)).ok_or(crate::code::NOT_FOUND);
        // SAFETY: the caller's contract.
        unsafe { give(mig, handle) }
    })
}

/// `nvmlDeviceGetDeviceHandleFromMigDeviceHandle`.
///
/// # Safety
/// `parent` is NULL or points to an `nvmlDevice_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetDeviceHandleFromMigDeviceHandle(
    mig: sys::nvmlDevice_t,
    parent: *mut sys::nvmlDevice_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let handle = match node()?.device(mig)? {
            Device::Mig(m) => Ok(Handle::Gpu(m.gpu)),
            Device::Gpu(_) => Err(INVALID_ARGUMENT),
        };
        // SAFETY: the caller's contract.
        unsafe { give(parent, handle) }
    })
}

/// `nvmlDeviceGetGpuInstanceId` of a MIG device.
///
/// # Safety
/// `id` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuInstanceId(
    device: sys::nvmlDevice_t,
    id: *mut c_uint,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, id, |_, d| match d {
            Device::Mig(m) => Ok(m.gi.id),
            Device::Gpu(_) => Err(INVALID_ARGUMENT),
        })
    }
}

/// `nvmlDeviceGetComputeInstanceId` of a MIG device.
///
/// # Safety
/// `id` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetComputeInstanceId(
    device: sys::nvmlDevice_t,
    id: *mut c_uint,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, id, |_, d| match d {
            Device::Mig(m) => Ok(m.ci.id),
            Device::Gpu(_) => Err(INVALID_ARGUMENT),
        })
    }
}

/// `nvmlDeviceGetAttributes_v2` of a MIG device (NOT_SUPPORTED on a GPU).
///
/// # Safety
/// `attributes` is NULL or points to an `nvmlDeviceAttributes_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetAttributes_v2(
    device: sys::nvmlDevice_t,
    attributes: *mut sys::nvmlDeviceAttributes_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, attributes, |_, d| {
            let Device::Mig(m) = d else {
                return Err(NOT_SUPPORTED);
            };
            let p = &m.profile;
            Ok(sys::nvmlDeviceAttributes_t {
                multiprocessorCount: p.multiprocessors,
                sharedCopyEngineCount: p.copy_engines,
                sharedDecoderCount: p.decoders,
                sharedEncoderCount: p.encoders,
                sharedJpegCount: p.jpegs,
                sharedOfaCount: p.ofas,
                gpuInstanceSliceCount: p.compute_slices,
                computeInstanceSliceCount: p.compute_slices,
                memorySizeMB: p.memory_bytes >> 20,
            })
        })
    }
}

/// `nvmlDeviceGetNvLinkState`.
///
/// # Safety
/// `active` is NULL or points to an `nvmlEnableState_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetNvLinkState(
    device: sys::nvmlDevice_t,
    link: c_uint,
    active: *mut sys::nvmlEnableState_t,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        getter(device, active, |node, d| {
            let on = node.nvlink_active(d.gpu(), link)?;
            Ok(if on {
                sys::nvmlEnableState_enum_NVML_FEATURE_ENABLED
            } else {
                sys::nvmlEnableState_enum_NVML_FEATURE_DISABLED
            })
        })
    }
}

/// The fabric fields of GPU `device`: (cluster UUID bytes, status,
/// clique, state).
fn fabric(device: sys::nvmlDevice_t) -> Answer<([u8; 16], u32, u32, u8)> {
    let node = node()?;
    let fabric = node.fabric(node.whole(device)?)?;
    let uuid = uuid::Uuid::try_parse(&fabric.cluster_uuid).map_err(|_| INVALID_ARGUMENT)?;
    let state = match fabric.state {
        FabricState::NotSupported => sys::NVML_GPU_FABRIC_STATE_NOT_SUPPORTED,
        FabricState::NotStarted => sys::NVML_GPU_FABRIC_STATE_NOT_STARTED,
        FabricState::InProgress => sys::NVML_GPU_FABRIC_STATE_IN_PROGRESS,
        FabricState::Completed => sys::NVML_GPU_FABRIC_STATE_COMPLETED,
    };
    let status = if fabric.error.is_some() {
        crate::code::UNKNOWN
    } else {
        crate::code::SUCCESS
    };
    let state = u8::try_from(state).map_err(|_| INVALID_ARGUMENT)?;
    Ok((*uuid.as_bytes(), status, fabric.clique_id, state))
}

/// `nvmlDeviceGetGpuFabricInfoV`: v2 (nvidia-smi 550's) or v3 (gpusliced's),
/// by the version the caller wrote (v3 only from a driver that has it);
/// NOT_SUPPORTED without a fabric.
///
/// # Safety
/// `info` is NULL or points to the `nvmlGpuFabricInfo_v2_t` or `_v3_t` its
/// version names.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetGpuFabricInfoV(
    device: sys::nvmlDevice_t,
    info: *mut sys::nvmlGpuFabricInfoV_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(info) }?;
        let version = out.version();
        let v2 = struct_version::<sys::nvmlGpuFabricInfo_v2_t>(2);
        let v3 = struct_version::<sys::nvmlGpuFabricInfo_v3_t>(3);
        if version != v2 && (version != v3 || !node()?.takes_fabric_v3()) {
            return Err(ARGUMENT_VERSION_MISMATCH);
        }
        let (cluster, status, clique, state) = fabric(device)?;
        if version == v2 {
            // SAFETY: the caller wrote v2's version: its struct is a v2.
            let out = unsafe { out.as_version::<sys::nvmlGpuFabricInfo_v2_t>() };
            out.set(sys::nvmlGpuFabricInfo_v2_t {
                version,
                clusterUuid: cluster,
                status,
                cliqueId: clique,
                state,
                healthMask: 0,
            });
            return Ok(());
        }
        // SAFETY: the caller wrote v3's version: its struct is a v3.
        let out = unsafe { out.as_version::<sys::nvmlGpuFabricInfo_v3_t>() };
        out.set(sys::nvmlGpuFabricInfo_v3_t {
            version,
            clusterUuid: cluster,
            status,
            cliqueId: clique,
            state,
            healthMask: 0,
            healthSummary: 0,
        });
        Ok(())
    })
}

/// `nvmlDeviceGetMemoryErrorCounter`: the simulator counts no ECC errors
/// (it raises them as events).
#[unsafe(no_mangle)]
pub extern "C" fn nvmlDeviceGetMemoryErrorCounter(
    device: sys::nvmlDevice_t,
    _error_type: sys::nvmlMemoryErrorType_t,
    _counter_type: sys::nvmlEccCounterType_t,
    _location_type: sys::nvmlMemoryLocation_t,
    _count: *mut c_ulonglong,
) -> sys::nvmlReturn_t {
    guard(|| {
        node()?.device(device)?;
        Err(NOT_SUPPORTED)
    })
}

/// `nvmlDeviceGetFieldValues`: every field NOT_SUPPORTED, in its own
/// return code (which the caller reads; the call itself succeeds).
///
/// # Safety
/// `values` is NULL or points to `count` `nvmlFieldValue_t`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetFieldValues(
    device: sys::nvmlDevice_t,
    count: c_int,
    values: *mut sys::nvmlFieldValue_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        node()?.device(device)?;
        let count = usize::try_from(count).map_err(|_| INVALID_ARGUMENT)?;
        if values.is_null() {
            return Err(INVALID_ARGUMENT);
        }
        for i in 0..count {
            // SAFETY: the caller's contract: `count` values, `i` below it;
            // only the field is written (the others may be uninitialised).
            unsafe { (&raw mut (*values.add(i)).nvmlReturn).write(NOT_SUPPORTED) }
        }
        Ok(())
    })
}
