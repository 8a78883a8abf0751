//! Init, shutdown, error strings, versions and the GPU count.

use std::ffi::{c_char, c_int, c_uint};

use gpuslice::gpu::GpuBackend;
use nvml_wrapper_sys::bindings as sys;

use super::{Out, OutBuf, guard};
use crate::code;
use crate::device::{cuda_version, sim};
use crate::node::{self, node};

/// `nvmlInit_v2`.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> sys::nvmlReturn_t {
    guard(node::init)
}

/// `nvmlInit`, the first version.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit() -> sys::nvmlReturn_t {
    guard(node::init)
}

/// `nvmlInitWithFlags` (what nvidia-smi calls): the flags change nothing
/// here (every simulated GPU attaches).
#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> sys::nvmlReturn_t {
    guard(node::init)
}

/// `nvmlShutdown`.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> sys::nvmlReturn_t {
    guard(node::shutdown)
}

/// `nvmlErrorString`: a static string.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: sys::nvmlReturn_t) -> *const c_char {
    code::text(result).as_ptr()
}

/// `nvmlSystemGetDriverVersion`.
///
/// # Safety
/// `version` is NULL or holds `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(
    version: *mut c_char,
    length: c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        let driver = node()?.driver_version();
        // SAFETY: NVML's contract: `version` is NULL or holds `length` bytes.
        unsafe { OutBuf::new(version, length) }?.put(&driver)
    })
}

/// `nvmlSystemGetNVMLVersion`: "<CUDA major>.<driver version>", as NVML's.
///
/// # Safety
/// `version` is NULL or holds `length` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(
    version: *mut c_char,
    length: c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = node()?;
        let info = sim(node.sim.driver_info())?;
        let text = format!("{}.{}", info.cuda_driver_version.0, node.driver_version());
        // SAFETY: NVML's contract: `version` is NULL or holds `length` bytes.
        unsafe { OutBuf::new(version, length) }?.put(&text)
    })
}

/// # Safety
/// `out` is NULL or points to an int.
unsafe fn cuda(out: *mut c_int) -> sys::nvmlReturn_t {
    guard(|| {
        let info = sim(node()?.sim.driver_info())?;
        // SAFETY: the function's contract.
        unsafe { Out::new(out) }?.set(cuda_version(info.cuda_driver_version));
        Ok(())
    })
}

/// `nvmlSystemGetCudaDriverVersion_v2`.
///
/// # Safety
/// `version` is NULL or points to an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(
    version: *mut c_int,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { cuda(version) }
}

/// `nvmlSystemGetCudaDriverVersion`.
///
/// # Safety
/// `version` is NULL or points to an int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion(version: *mut c_int) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { cuda(version) }
}

/// # Safety
/// `out` is NULL or points to an unsigned int.
unsafe fn count(out: *mut c_uint) -> sys::nvmlReturn_t {
    guard(|| {
        let count = node()?.count()?;
        // SAFETY: the function's contract.
        unsafe { Out::new(out) }?.set(count);
        Ok(())
    })
}

/// `nvmlDeviceGetCount_v2`.
///
/// # Safety
/// `device_count` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(device_count: *mut c_uint) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { count(device_count) }
}

/// `nvmlDeviceGetCount`.
///
/// # Safety
/// `device_count` is NULL or points to an unsigned int.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount(device_count: *mut c_uint) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { count(device_count) }
}
