//! The exports as a C caller meets them: versions checked, NULLs refused,
//! the driver's own placements as the MIG user guide shows them, remaining
//! capacity, MIG device handles. One simulated node for every test of this
//! binary (the library has one per process); each test takes GPUs of its
//! own. Changes need root, as on NVML: those tests skip otherwise.

use std::ffi::{CStr, c_char, c_uint};
use std::sync::OnceLock;

use nvml_wrapper_sys::bindings as sys;

use super::device::*;
use super::mig::*;
use super::process::nvmlDeviceGetComputeRunningProcesses_v3;
use super::system::*;
use crate::code::{
    ARGUMENT_VERSION_MISMATCH, INSUFFICIENT_RESOURCES, INVALID_ARGUMENT, NOT_FOUND, NOT_SUPPORTED,
    SUCCESS, struct_version,
};
use crate::node::TEST_CONFIG;

/// GPUs of the node, by the test that uses them.
const GUIDE_A100: u32 = 0;
const READ_H100: u32 = 1;
const L4: u32 = 2;
const CAPACITY_H100: u32 = 3;
const MIG_DEVICES_H100: u32 = 4;

fn init() {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("gpuslice.toml");
        let text = "socket = \"s.sock\"\n[backend.sim]\n\
                    gpus = [\"A100-40GB\", \"H100-80GB\", \"L4-24GB\", \"H100-80GB\", \"H100-80GB\"]\n";
        let mut file = std::fs::File::options()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&config)
            .unwrap();
        std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
        dir
    });
    let _ = TEST_CONFIG.set(dir.path().join("gpuslice.toml"));
    assert_eq!(nvmlInit_v2(), SUCCESS);
}

fn root() -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        eprintln!("skipped: NVML's MIG changes need root");
    }
    root
}

fn device(index: u32) -> sys::nvmlDevice_t {
    let mut device = std::ptr::null_mut();
    // SAFETY: a live local out-parameter.
    let got = unsafe { nvmlDeviceGetHandleByIndex_v2(index, &raw mut device) };
    assert_eq!(got, SUCCESS);
    device
}

fn name_of(buf: &[c_char]) -> String {
    // SAFETY: the library wrote a NUL-terminated string into the buffer.
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

fn mig_on(index: u32) {
    let mut status = 1;
    // SAFETY: a live local out-parameter.
    let answer = unsafe { nvmlDeviceSetMigMode(device(index), 1, &raw mut status) };
    assert_eq!((answer, status), (SUCCESS, SUCCESS));
}

/// GPU `index` with MIG on, after `init`; `None` (the test skips) without
/// root.
fn mig_gpu(index: u32) -> Option<sys::nvmlDevice_t> {
    init();
    if !root() {
        return None;
    }
    mig_on(index);
    Some(device(index))
}

#[test]
fn versioned_structs_are_checked_by_their_version() {
    init();
    let dev = device(READ_H100);
    // SAFETY: plain C data; all zero is a valid value.
    let mut info: sys::nvmlGpuInstanceProfileInfo_v2_t = unsafe { std::mem::zeroed() };
    for (version, answer) in [
        (
            struct_version::<sys::nvmlGpuInstanceProfileInfo_v2_t>(2),
            SUCCESS,
        ),
        (
            struct_version::<sys::nvmlGpuInstanceProfileInfo_v3_t>(3),
            SUCCESS,
        ),
        (
            struct_version::<sys::nvmlGpuInstanceProfileInfo_t>(1),
            ARGUMENT_VERSION_MISMATCH,
        ),
        (0, ARGUMENT_VERSION_MISMATCH),
    ] {
        info.version = version;
        // SAFETY: a live local struct of the largest version's size.
        let got = unsafe { nvmlDeviceGetGpuInstanceProfileInfoV(dev, 0, &raw mut info) };
        assert_eq!(got, answer, "version {version:#x}");
    }
    info.version = struct_version::<sys::nvmlGpuInstanceProfileInfo_v2_t>(2);
    // SAFETY: as above.
    unsafe { nvmlDeviceGetGpuInstanceProfileInfoV(dev, 0, &raw mut info) };
    assert_eq!(
        (info.id, name_of(&info.name)),
        (19, "MIG 1g.10gb".to_owned())
    );
    // SAFETY: plain C data.
    let mut memory: sys::nvmlMemory_v2_t = unsafe { std::mem::zeroed() };
    // SAFETY: a live local struct.
    let mismatch = unsafe { nvmlDeviceGetMemoryInfo_v2(dev, &raw mut memory) };
    assert_eq!(mismatch, ARGUMENT_VERSION_MISMATCH);
    memory.version = struct_version::<sys::nvmlMemory_v2_t>(2);
    // SAFETY: a live local struct.
    let got = unsafe { nvmlDeviceGetMemoryInfo_v2(dev, &raw mut memory) };
    assert_eq!(got, SUCCESS);
    assert_eq!(memory.total, 81559 << 20);
    // SAFETY: plain C data.
    let mut fabric: sys::nvmlGpuFabricInfo_v3_t = unsafe { std::mem::zeroed() };
    // SAFETY: a live local struct.
    let got = unsafe { nvmlDeviceGetGpuFabricInfoV(dev, &raw mut fabric) };
    assert_eq!(got, ARGUMENT_VERSION_MISMATCH);
    fabric.version = struct_version::<sys::nvmlGpuFabricInfo_v2_t>(2);
    // SAFETY: a live local struct, larger than v2's.
    let got = unsafe { nvmlDeviceGetGpuFabricInfoV(dev, &raw mut fabric) };
    assert_eq!(got, NOT_SUPPORTED, "an H100 of a gpus list has no fabric");
}

#[test]
fn null_pointers_and_foreign_handles_are_invalid_arguments() {
    init();
    // SAFETY: NULL is part of the contract.
    let got = unsafe { nvmlDeviceGetCount_v2(std::ptr::null_mut()) };
    assert_eq!(got, INVALID_ARGUMENT);
    let mut name = [0 as c_char; 96];
    let mut local = 0u64;
    let foreign = (&raw mut local).cast::<sys::nvmlDevice_st>();
    // SAFETY: a live local buffer of its length.
    let got = unsafe { nvmlDeviceGetName(foreign, name.as_mut_ptr(), 96) };
    assert_eq!(got, INVALID_ARGUMENT);
    // SAFETY: as above, too short for the name.
    let got = unsafe { nvmlDeviceGetName(device(READ_H100), name.as_mut_ptr(), 4) };
    assert_eq!(got, sys::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE);
    let text = nvmlErrorString(INSUFFICIENT_RESOURCES);
    // SAFETY: a static NUL-terminated string.
    let text = unsafe { CStr::from_ptr(text) };
    assert_eq!(text.to_str(), Ok("Insufficient Resources"));
}

#[test]
fn a_gpu_without_mig_answers_not_supported() {
    init();
    let dev = device(L4);
    let (mut current, mut pending) = (0, 0);
    // SAFETY: live locals.
    let got = unsafe { nvmlDeviceGetMigMode(dev, &raw mut current, &raw mut pending) };
    assert_eq!(got, NOT_SUPPORTED);
    // SAFETY: plain C data.
    let mut info: sys::nvmlGpuInstanceProfileInfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: a live local struct.
    let got = unsafe { nvmlDeviceGetGpuInstanceProfileInfo(dev, 0, &raw mut info) };
    assert_eq!(got, NOT_SUPPORTED);
    let mut count = 7;
    // SAFETY: live locals; a NULL list asks for the count.
    let got = unsafe {
        nvmlDeviceGetComputeRunningProcesses_v3(dev, &raw mut count, std::ptr::null_mut())
    };
    assert_eq!((got, count), (SUCCESS, 0), "no process: SUCCESS and 0");
}

/// Creates a GPU instance of `profile` where the driver would; its
/// placement start, or the code.
fn create(dev: sys::nvmlDevice_t, profile: c_uint) -> Result<u32, u32> {
    let mut gi = std::ptr::null_mut();
    // SAFETY: a live local out-parameter.
    let got = unsafe { nvmlDeviceCreateGpuInstance(dev, profile, &raw mut gi) };
    if got != SUCCESS {
        return Err(got);
    }
    // SAFETY: plain C data.
    let mut info: sys::nvmlGpuInstanceInfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: a handle from the library and a live local.
    let got = unsafe { nvmlGpuInstanceGetInfo(gi, &raw mut info) };
    assert_eq!(got, SUCCESS);
    Ok(info.placement.start)
}

fn clear(dev: sys::nvmlDevice_t, profiles: &[c_uint]) {
    for &profile in profiles {
        let mut gis = [std::ptr::null_mut(); 8];
        let mut count = 0;
        // SAFETY: room for any profile's instance count.
        let got =
            unsafe { nvmlDeviceGetGpuInstances(dev, profile, gis.as_mut_ptr(), &raw mut count) };
        assert_eq!(got, SUCCESS);
        for gi in &gis[..usize::try_from(count).unwrap()] {
            assert_eq!(nvmlGpuInstanceDestroy(*gi), SUCCESS);
        }
    }
}

/// The MIG user guide's examples of `nvidia-smi mig -cgi` on an A100: the
/// driver places each instance itself, and the order matters.
#[test]
fn the_drivers_placements_are_the_mig_guides() {
    let Some(dev) = mig_gpu(GUIDE_A100) else {
        return;
    };
    let made: Vec<_> = [19, 14, 5].iter().map(|&p| create(dev, p)).collect();
    assert_eq!(made, vec![Ok(6), Ok(4), Ok(0)], "1g at 6, 2g at 4, 4g at 0");
    clear(dev, &[19, 14, 5]);
    let made: Vec<_> = [19, 19, 14, 9].iter().map(|&p| create(dev, p)).collect();
    assert_eq!(made, vec![Ok(6), Ok(5), Ok(2), Err(INSUFFICIENT_RESOURCES)]);
    clear(dev, &[19, 14]);
    let made: Vec<_> = [9, 19, 14, 19].iter().map(|&p| create(dev, p)).collect();
    assert_eq!(
        made,
        vec![Ok(4), Ok(3), Ok(0), Ok(2)],
        "3g first fits them all"
    );
    clear(dev, &[9, 19, 14]);
}

fn remaining(dev: sys::nvmlDevice_t, profile: c_uint) -> u32 {
    let mut count = 99;
    // SAFETY: a live local out-parameter.
    let got = unsafe { nvmlDeviceGetGpuInstanceRemainingCapacity(dev, profile, &raw mut count) };
    assert_eq!(got, SUCCESS);
    count
}

#[test]
fn remaining_capacity_follows_the_instances() {
    let Some(dev) = mig_gpu(CAPACITY_H100) else {
        return;
    };
    let profiles = [19, 20, 15, 14, 9, 5, 0];
    let empty: Vec<_> = profiles.iter().map(|&p| remaining(dev, p)).collect();
    assert_eq!(empty, vec![7, 1, 4, 3, 2, 1, 1]);
    let at = sys::nvmlGpuInstancePlacement_t { start: 4, size: 4 };
    let mut gi = std::ptr::null_mut();
    // SAFETY: live locals.
    let got =
        unsafe { nvmlDeviceCreateGpuInstanceWithPlacement(dev, 9, &raw const at, &raw mut gi) };
    assert_eq!(got, SUCCESS);
    let beside: Vec<_> = profiles.iter().map(|&p| remaining(dev, p)).collect();
    assert_eq!(
        beside,
        vec![4, 1, 2, 2, 1, 1, 0],
        "a 3g at 4 leaves slices 0-3"
    );
    let bad = sys::nvmlGpuInstancePlacement_t { start: 2, size: 4 };
    let mut other = std::ptr::null_mut();
    // SAFETY: live locals.
    let got =
        unsafe { nvmlDeviceCreateGpuInstanceWithPlacement(dev, 9, &raw const bad, &raw mut other) };
    assert_eq!(got, INVALID_ARGUMENT, "3g starts at 0 or 4 only");
    assert_eq!(nvmlGpuInstanceDestroy(gi), SUCCESS);
}

#[test]
fn mig_device_handles_name_compute_instances() {
    let Some(dev) = mig_gpu(MIG_DEVICES_H100) else {
        return;
    };
    let mut gi = std::ptr::null_mut();
    let at = sys::nvmlGpuInstancePlacement_t { start: 0, size: 1 };
    // SAFETY: live locals.
    let got =
        unsafe { nvmlDeviceCreateGpuInstanceWithPlacement(dev, 19, &raw const at, &raw mut gi) };
    assert_eq!(got, SUCCESS);
    let mut ci = std::ptr::null_mut();
    // SAFETY: a handle from the library and a live local.
    let got = unsafe { nvmlGpuInstanceCreateComputeInstance(gi, 0, &raw mut ci) };
    assert_eq!(got, SUCCESS);
    let mut max = 0;
    // SAFETY: a live local.
    let got = unsafe { nvmlDeviceGetMaxMigDeviceCount(dev, &raw mut max) };
    assert_eq!(got, SUCCESS);
    assert_eq!(max, 7);
    let (mut mig, mut none) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: live locals.
    let got = unsafe { nvmlDeviceGetMigDeviceHandleByIndex(dev, 0, &raw mut mig) };
    assert_eq!(got, SUCCESS);
    // SAFETY: live locals.
    let got = unsafe { nvmlDeviceGetMigDeviceHandleByIndex(dev, 1, &raw mut none) };
    assert_eq!(got, NOT_FOUND);
    let mut name = [0 as c_char; 96];
    // SAFETY: a live local buffer of its length.
    let got = unsafe { nvmlDeviceGetName(mig, name.as_mut_ptr(), 96) };
    assert_eq!(got, SUCCESS);
    assert_eq!(name_of(&name), "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
    let (mut is_mig, mut parent, mut gi_id) = (0, std::ptr::null_mut(), 99);
    // SAFETY: live locals.
    unsafe {
        assert_eq!(nvmlDeviceIsMigDeviceHandle(mig, &raw mut is_mig), SUCCESS);
        assert_eq!(
            nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &raw mut parent),
            SUCCESS
        );
        assert_eq!(nvmlDeviceGetGpuInstanceId(mig, &raw mut gi_id), SUCCESS);
    }
    assert_eq!((is_mig, parent, gi_id), (1, dev, 7), "1g at 0 is GI 7");
    // SAFETY: handles from the library.
    unsafe {
        assert_eq!(nvmlComputeInstanceDestroy(ci), SUCCESS);
        assert_eq!(
            nvmlDeviceGetName(mig, name.as_mut_ptr(), 96),
            INVALID_ARGUMENT
        );
        assert_eq!(nvmlGpuInstanceDestroy(gi), SUCCESS);
        assert_eq!(
            nvmlGpuInstanceDestroy(gi),
            INVALID_ARGUMENT,
            "a handle dies with its instance"
        );
    }
}
