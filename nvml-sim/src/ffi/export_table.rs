//! `nvmlInternalGetExportTable`: NVIDIA's undocumented table of internal
//! entry points, which nvidia-smi asks for before anything else ("Mismatch
//! in versions between nvidia-smi and NVML" without it). Found by probing
//! nvidia-smi 550.163.01 (and by NVIDIA's own mock, k8s-test-infra's
//! mocknvml, on 580): one table id, `6c3efec4-8fc9-4e6c-a327-ee696e12f7c4`;
//! a first word holding the table's size, then 255 entry points called
//! with the device handle first. What is known of them:
//!
//! * 81 `(index, nvmlDevice_t *out, ...)`: a GPU's handle by index;
//! * 213, 214, 215 `(device, unsigned *count /* in: room */, entries)`:
//!   the compute, MPS and graphics processes, in entries of 4128 bytes
//!   (pid, memory, GPU and compute instance ids, the name inline), which
//!   `nvidia-smi -q` and its default view print;
//! * every other one answers SUCCESS and writes nothing: nvidia-smi prints
//!   what it had (so some `-q` fields show stale values), and a catch-all
//!   that wrote through its arguments crashed it (slot 165 takes an
//!   integer).

use std::ffi::{c_uint, c_void};

use nvml_wrapper_sys::bindings as sys;

use super::guard;
use super::process::rows_out;
use crate::code::{INVALID_ARGUMENT, NOT_SUPPORTED};
use crate::process::{List, Row, name};

/// The table id nvidia-smi asks for, as its bytes lie in memory.
const TABLE_ID: [u8; 16] = [
    0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e, 0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4,
];

/// An entry point: up to six register arguments, whatever they are.
type Slot = unsafe extern "C" fn(usize, usize, usize, usize, usize, usize) -> sys::nvmlReturn_t;

/// The table as nvidia-smi reads it: its size, then entry points 1 to 255.
#[repr(C)]
struct Table {
    size: usize,
    slots: [Slot; 255],
}

/// One process entry of slots 213-215.
#[repr(C)]
struct Entry {
    pid: u32,
    used_memory: u64,
    gpu_instance: u32,
    compute_instance: u32,
    unknown: u64,
    name: [u8; 4096],
}

unsafe extern "C" fn nothing(_: usize, _: usize, _: usize, _: usize, _: usize, _: usize) -> u32 {
    NOT_SUPPORTED
}

/// Slot 81: a GPU's handle by index.
unsafe extern "C" fn handle_by_index(
    index: usize,
    out: usize,
    _: usize,
    _: usize,
    _: usize,
    _: usize,
) -> u32 {
    let Ok(index) = c_uint::try_from(index) else {
        return INVALID_ARGUMENT;
    };
    let out = std::ptr::with_exposed_provenance_mut::<sys::nvmlDevice_t>(out);
    // SAFETY: the slot's contract, as nvidia-smi calls it: `out` is a
    // device handle's address.
    unsafe { super::device::nvmlDeviceGetHandleByIndex_v2(index, out) }
}

/// Slots 213-215: one process list of a device.
///
/// # Safety
/// `count` is NULL or the address of an unsigned int; `entries` is NULL or
/// the address of `*count` entries.
unsafe fn processes(device: usize, count: usize, entries: usize, which: List) -> u32 {
    let device = std::ptr::with_exposed_provenance_mut::<sys::nvmlDevice_st>(device);
    let count = std::ptr::with_exposed_provenance_mut::<c_uint>(count);
    let entries = std::ptr::with_exposed_provenance_mut::<Entry>(entries);
    guard(|| {
        let node = crate::node::node()?;
        let rows = node.process_list(&node.device(device)?, which)?;
        let entries_of = rows.iter().map(entry).collect();
        // SAFETY: the function's contract, passed on.
        unsafe { rows_out(count, entries, entries_of) }
    })
}

fn entry(row: &Row) -> Entry {
    let mut entry = Entry {
        pid: row.pid,
        used_memory: row.used.unwrap_or(u64::MAX),
        gpu_instance: row.gi,
        compute_instance: row.ci,
        unknown: 0,
        name: [0; 4096],
    };
    let text = name(row.pid);
    for (slot, byte) in entry.name.iter_mut().zip(text.bytes().take(4095)) {
        *slot = byte;
    }
    entry
}

macro_rules! process_slot {
    ($name:ident, $list:expr) => {
        unsafe extern "C" fn $name(
            device: usize,
            count: usize,
            entries: usize,
            _: usize,
            _: usize,
            _: usize,
        ) -> u32 {
            // SAFETY: the slot's contract, as nvidia-smi calls it: a device
            // handle, the address of a count of room, the entries.
            unsafe { processes(device, count, entries, $list) }
        }
    };
}

process_slot!(compute_processes, List::Compute);
process_slot!(mps_processes, List::MpsClients);
process_slot!(graphics_processes, List::Graphics);

/// The table's entry point `n` (word `n` of the table; word 0 is its size).
const fn at(n: usize) -> usize {
    n - 1
}

const fn table() -> Table {
    let mut slots: [Slot; 255] = [nothing; 255];
    slots[at(81)] = handle_by_index;
    slots[at(213)] = compute_processes;
    slots[at(214)] = mps_processes;
    slots[at(215)] = graphics_processes;
    Table {
        size: std::mem::size_of::<Table>(),
        slots,
    }
}

static TABLE: Table = table();

/// `nvmlInternalGetExportTable`: the table for its one id, NOT_SUPPORTED
/// for any other.
///
/// # Safety
/// `table` is NULL or the address of a pointer; `id` is NULL or points to
/// 16 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlInternalGetExportTable(
    table: *mut *const c_void,
    id: *const [u8; 16],
) -> sys::nvmlReturn_t {
    guard(|| {
        // SAFETY: the caller's contract.
        let id = unsafe { id.as_ref() }.ok_or(INVALID_ARGUMENT)?;
        if *id != TABLE_ID {
            return Err(NOT_SUPPORTED);
        }
        // SAFETY: the caller's contract.
        unsafe { super::Out::new(table) }?.set((&raw const TABLE).cast());
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::{Entry, TABLE, TABLE_ID, nvmlInternalGetExportTable};
    use crate::code::NOT_SUPPORTED;

    #[test]
    fn the_table_is_nvidia_smis() {
        assert_eq!(std::mem::size_of::<Entry>(), 4128);
        assert_eq!(std::mem::offset_of!(Entry, used_memory), 8);
        assert_eq!(std::mem::offset_of!(Entry, name), 32);
        assert_eq!(TABLE.size, 8 + 255 * 8);
        let mut out = std::ptr::null();
        let other = [0u8; 16];
        let id = TABLE_ID;
        // SAFETY: live locals.
        let got = unsafe { nvmlInternalGetExportTable(&raw mut out, &raw const other) };
        assert_eq!(got, NOT_SUPPORTED);
        // SAFETY: live locals.
        let got = unsafe { nvmlInternalGetExportTable(&raw mut out, &raw const id) };
        assert_eq!(got, 0);
        assert_eq!(out, (&raw const TABLE).cast());
    }
}
