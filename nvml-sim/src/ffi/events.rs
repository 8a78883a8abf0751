//! Event sets (semantics in `crate::events`).

use std::ffi::{c_uint, c_ulonglong};
use std::time::Duration;

use nvml_wrapper_sys::bindings as sys;

use super::{Out, guard};
use crate::events::{self, SUPPORTED};
use crate::handle::Handle;
use crate::node::node;

/// `nvmlDeviceGetSupportedEventTypes`: XID and ECC events.
///
/// # Safety
/// `types` is NULL or points to an unsigned long long.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetSupportedEventTypes(
    device: sys::nvmlDevice_t,
    types: *mut c_ulonglong,
) -> sys::nvmlReturn_t {
    guard(|| {
        node()?.whole(device)?;
        // SAFETY: the caller's contract.
        unsafe { Out::new(types) }?.set(SUPPORTED);
        Ok(())
    })
}

/// `nvmlEventSetCreate`.
///
/// # Safety
/// `set` is NULL or points to an `nvmlEventSet_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetCreate(set: *mut sys::nvmlEventSet_t) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let out = unsafe { Out::new(set) }?;
        out.set(events::create(node()?)?.address()?);
        Ok(())
    })
}

/// `nvmlEventSetFree`.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlEventSetFree(set: sys::nvmlEventSet_t) -> sys::nvmlReturn_t {
    guard(|| events::free(Handle::of(set)?))
}

/// `nvmlDeviceRegisterEvents`.
#[unsafe(no_mangle)]
pub extern "C" fn nvmlDeviceRegisterEvents(
    device: sys::nvmlDevice_t,
    types: c_ulonglong,
    set: sys::nvmlEventSet_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let gpu = node()?.whole(device)?;
        events::register(Handle::of(set)?, gpu, types)
    })
}

/// # Safety
/// `data` is NULL or points to an `nvmlEventData_t`.
unsafe fn wait(
    set: sys::nvmlEventSet_t,
    data: *mut sys::nvmlEventData_t,
    timeout_ms: c_uint,
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the function's contract.
        let out = unsafe { Out::new(data) }?;
        let node = node()?;
        let timeout = Duration::from_millis(u64::from(timeout_ms));
        let event = events::wait(node, Handle::of(set)?, timeout)?;
        out.set(sys::nvmlEventData_t {
            device: Handle::Gpu(event.gpu).device()?,
            eventType: event.kind,
            eventData: event.data,
            gpuInstanceId: event.gi,
            computeInstanceId: event.ci,
        });
        Ok(())
    })
}

/// `nvmlEventSetWait_v2`.
///
/// # Safety
/// `data` is NULL or points to an `nvmlEventData_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    set: sys::nvmlEventSet_t,
    data: *mut sys::nvmlEventData_t,
    timeoutms: c_uint,
) -> sys::nvmlReturn_t {
    // SAFETY: the caller's contract, passed on.
    unsafe { wait(set, data, timeoutms) }
}
