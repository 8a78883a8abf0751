//! Process lists and per-process utilization.

use std::ffi::{c_uint, c_ulonglong};

use nvml_wrapper_sys::bindings as sys;

use super::{Out, OutSlice, guard};
use crate::code::{Answer, INSUFFICIENT_SIZE, INVALID_ARGUMENT};
use crate::process::{List, Row};

/// NVML's "not available" for a process's memory.
const NOT_AVAILABLE: u64 = u64::MAX;

/// Writes `rows` as `T`s to a caller's (`count`, `list`) pair: with a NULL
/// list or too little room, INSUFFICIENT_SIZE and the count needed (NVML's
/// probe); with none, SUCCESS and 0.
///
/// # Safety
/// `count` is NULL or points to an unsigned int; `list` is NULL or holds
/// `*count` elements.
pub(super) unsafe fn rows_out<T>(count: *mut c_uint, list: *mut T, rows: Vec<T>) -> Answer<()> {
    // SAFETY: the function's contract.
    let count = unsafe { Out::new(count) }?;
    let needed = u32::try_from(rows.len()).map_err(|_| INVALID_ARGUMENT)?;
    let room = count.get();
    count.set(needed);
    if needed == 0 {
        return Ok(());
    }
    if list.is_null() || room < needed {
        return Err(INSUFFICIENT_SIZE);
    }
    let room = usize::try_from(room).map_err(|_| INVALID_ARGUMENT)?;
    // SAFETY: the function's contract: `*count` elements.
    unsafe { OutSlice::new(list, room) }?.fill(rows.into_iter())
}

fn info(row: &Row) -> sys::nvmlProcessInfo_t {
    sys::nvmlProcessInfo_t {
        pid: row.pid,
        usedGpuMemory: row.used.unwrap_or(NOT_AVAILABLE),
        gpuInstanceId: row.gi,
        computeInstanceId: row.ci,
    }
}

/// # Safety
/// As the exported lists'.
unsafe fn list(
    device: sys::nvmlDevice_t,
    which: List,
    count: *mut c_uint,
    infos: *mut sys::nvmlProcessInfo_t,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = crate::node::node()?;
        let rows = node.process_list(&node.device(device)?, which)?;
        // SAFETY: the function's contract, passed on.
        unsafe { rows_out(count, infos, rows.iter().map(info).collect()) }
    })
}

/// Exports each `$name` as the C function
/// `nvmlReturn_t $name(nvmlDevice_t device, unsigned int *count,
/// nvmlProcessInfo_t *infos)`, the `_v3` list of `device`'s processes of
/// kind `$list` ([`list`]).
macro_rules! process_lists {
    ($($(#[doc = $doc:literal])* $name:ident => $list:expr;)*) => {
        $(
            $(#[doc = $doc])*
            ///
            /// # Safety
            /// `count` is NULL or points to an unsigned int; `infos` is NULL or
            /// holds `*count` entries.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $name(
                device: sys::nvmlDevice_t,
                count: *mut c_uint,
                infos: *mut sys::nvmlProcessInfo_t,
            ) -> sys::nvmlReturn_t {
                // SAFETY: the caller's contract, passed on.
                unsafe { list(device, $list, count, infos) }
            }
        )*
    };
}

process_lists! {
    /// `nvmlDeviceGetComputeRunningProcesses_v3`.
    nvmlDeviceGetComputeRunningProcesses_v3 => List::Compute;
    /// `nvmlDeviceGetMPSComputeRunningProcesses_v3`.
    nvmlDeviceGetMPSComputeRunningProcesses_v3 => List::MpsClients;
    /// `nvmlDeviceGetGraphicsRunningProcesses_v3`: none.
    nvmlDeviceGetGraphicsRunningProcesses_v3 => List::Graphics;
}

/// `nvmlDeviceGetProcessUtilization`: samples after `last_seen`; with a
/// NULL list, the count (INSUFFICIENT_SIZE); NOT_FOUND without a sample.
///
/// # Safety
/// `count` is NULL or points to an unsigned int; `utilization` is NULL or
/// holds `*count` samples.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetProcessUtilization(
    device: sys::nvmlDevice_t,
    utilization: *mut sys::nvmlProcessUtilizationSample_t,
    count: *mut c_uint,
    last_seen: c_ulonglong,
) -> sys::nvmlReturn_t {
    guard(|| {
        let node = crate::node::node()?;
        let samples = node.utilization(node.whole(device)?, last_seen)?;
        let rows = (samples.iter())
            .map(|s| sys::nvmlProcessUtilizationSample_t {
                pid: s.pid,
                timeStamp: s.timestamp_us,
                smUtil: s.sm_percent,
                memUtil: s.memory_percent,
                encUtil: 0,
                decUtil: 0,
            })
            .collect();
        // SAFETY: the caller's contract, passed on.
        unsafe { rows_out(count, utilization, rows) }
    })
}
