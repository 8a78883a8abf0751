//! NVML backend tests. `nvml_*` bodies that need a GPU are `#[ignore]`d; the
//! load-failure tests and the conversion tests run anywhere.

use std::path::Path;

use nvml_wrapper::enum_wrappers::device::Brand;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::structs::device::MigMode as NvmlMigMode;
use nvml_wrapper_sys::bindings as sys;

use super::convert::{brand_name, canonical_bus_id, cuda_version, map_err, mig_support};
use super::{DEFAULT_LIBRARY, NvmlBackend};
use crate::gpu::sim::models::profile_index;
use crate::gpu::{GpuError, MigMode, MigSupport, conformance};

fn open_real() -> NvmlBackend {
    NvmlBackend::open(None).expect("a GPU node with the NVIDIA driver")
}

#[test]
#[ignore = "needs an NVIDIA GPU and driver"]
fn nvml_conformance() {
    conformance::all(&open_real());
}

/// Registers XID and ECC events on every GPU and waits a few seconds for
/// events, changing nothing: prints what it saw and which GPUs refused.
#[test]
#[ignore = "needs an NVIDIA GPU and driver"]
fn nvml_health_events_register_on_every_gpu() {
    use crate::gpu::GpuBackend;
    let nvml = open_real();
    let count = nvml.device_count().unwrap();
    let mut watch = nvml.watch_health().unwrap();
    let unmonitored = watch.unmonitored();
    eprintln!("{count} GPUs, unmonitored: {unmonitored:?}");
    assert!(
        unmonitored.len() < usize::try_from(count).unwrap() || count == 0,
        "no GPU accepts XID or ECC events: {unmonitored:?}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(6);
    while std::time::Instant::now() < deadline {
        for event in watch.wait(std::time::Duration::from_millis(500)).unwrap() {
            eprintln!("health event: {event:?}");
            assert!(event.gpu_index < count, "{event:?}");
        }
    }
    let events = conformance::health_watch(&nvml);
    eprintln!("events during the conformance wait: {events:?}");
}

/// The process bodies on the real GPUs, read-only (lists processes and
/// memory, starts none): prints what it saw.
#[test]
#[ignore = "needs an NVIDIA GPU and driver"]
fn nvml_processes_and_memory_use() {
    use crate::gpu::GpuBackend;
    let nvml = open_real();
    conformance::processes_all(&nvml);
    for gpu in conformance::all_gpus(&nvml) {
        let processes = nvml.processes(gpu.index).unwrap();
        let memory = nvml.memory_use(gpu.index, None).unwrap();
        let samples = nvml.process_utilization(gpu.index, 0);
        eprintln!("GPU {}: {memory:?}, {processes:?}, {samples:?}", gpu.index);
    }
}

/// The place read through `sysfs` against the kernel's own answer, taken
/// another way: the canonical path of the device (every symlink resolved)
/// under its root complex, and `numa_node` read as a number.
#[test]
#[ignore = "needs an NVIDIA GPU and driver"]
fn nvml_pcie_root_and_numa_node_match_the_kernel() {
    let nvml = open_real();
    for gpu in conformance::all_gpus(&nvml) {
        let device = Path::new("/sys/bus/pci/devices").join(&gpu.pci_bus_id);
        let root = gpu.pcie_root.as_deref().expect("a PCIe root");
        let real = std::fs::canonicalize(&device).unwrap();
        assert!(
            real.starts_with(Path::new("/sys/devices").join(root)),
            "GPU {}: {} is not under {root}",
            gpu.index,
            real.display()
        );
        let kernel: i64 = std::fs::read_to_string(device.join("numa_node"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(
            gpu.numa_node,
            u32::try_from(kernel).ok(),
            "GPU {}",
            gpu.index
        );
        eprintln!(
            "GPU {} {}: {root}, NUMA node {kernel}",
            gpu.index, gpu.pci_bus_id
        );
    }
}

#[test]
fn nvml_open_without_library_names_it() {
    let err = match NvmlBackend::open(None) {
        Ok(_) => return eprintln!("skipped: {DEFAULT_LIBRARY} is present and NVML initialised"),
        Err(err) => err,
    };
    let GpuError::LibraryLoad { library, reason } = &err else {
        return eprintln!("skipped: {DEFAULT_LIBRARY} is present ({err})");
    };
    assert_eq!(library, DEFAULT_LIBRARY);
    assert!(reason.contains("libnvidia-ml.so.1"), "{reason}");
    assert!(err.to_string().contains("libnvidia-ml.so.1"), "{err}");
}

#[test]
fn nvml_open_missing_path_names_it() {
    let path = Path::new("/nonexistent/libnvidia-ml.so.1");
    let err = NvmlBackend::open(Some(path)).unwrap_err();
    assert!(
        matches!(&err, GpuError::LibraryLoad { library, .. } if library == "/nonexistent/libnvidia-ml.so.1"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("/nonexistent/libnvidia-ml.so.1"),
        "{err}"
    );
}

#[test]
fn nvml_open_non_library_is_library_load() {
    let err = NvmlBackend::open(Some(Path::new("/etc/hostname"))).unwrap_err();
    assert!(matches!(err, GpuError::LibraryLoad { .. }), "{err:?}");
}

#[test]
fn map_err_covers_the_codes_the_daemon_acts_on() {
    let what = || "GPU 0 op".to_owned();
    let map = |e| map_err("nvmlX", what(), e);
    assert_eq!(
        map(NvmlError::NotSupported),
        GpuError::NotSupported { what: what() }
    );
    assert_eq!(
        map(NvmlError::NoPermission),
        GpuError::NoPermission { what: what() }
    );
    assert_eq!(map(NvmlError::InUse), GpuError::InUse { what: what() });
    assert_eq!(
        map(NvmlError::NotFound),
        GpuError::NotFound { what: what() }
    );
    assert_eq!(map(NvmlError::GpuLost), GpuError::GpuLost { what: what() });
    assert_eq!(map(NvmlError::Timeout), GpuError::GpuLost { what: what() });
    let full = map(NvmlError::UnexpectedVariant(23));
    assert_eq!(full, GpuError::InsufficientResources { what: what() });
    assert!(matches!(
        map(NvmlError::DriverNotLoaded),
        GpuError::DriverNotLoaded { .. }
    ));
}

#[test]
fn map_err_names_codes_the_wrapper_lacks() {
    for (code, name) in [
        (25, "ARGUMENT_VERSION_MISMATCH"),
        (27, "NOT_READY"),
        (29, "INVALID_STATE"),
    ] {
        let err = map_err(
            "nvmlX",
            "GPU 1 op".into(),
            NvmlError::UnexpectedVariant(code),
        );
        let GpuError::Nvml { call, message } = err else {
            panic!("code {code}: {err:?}")
        };
        assert_eq!(call, "nvmlX");
        assert!(
            message.contains(name) && message.starts_with("GPU 1 op"),
            "{message}"
        );
    }
    let other = map_err("nvmlX", "GPU 1 op".into(), NvmlError::Unknown);
    assert!(matches!(other, GpuError::Nvml { call: "nvmlX", .. }));
}

#[test]
fn bus_ids_are_canonical() {
    for (nvml, canonical) in [
        ("00000000:3B:00.0", Some("0000:3b:00.0")),
        ("00000001:C1:00.0", Some("0001:c1:00.0")),
        ("0000:07:00.0", Some("0000:07:00.0")),
        ("00010000:07:00.0", Some("10000:07:00.0")),
        ("garbage", None),
        ("0000:zz:00.0", None),
    ] {
        assert_eq!(canonical_bus_id(nvml).as_deref(), canonical, "{nvml}");
    }
}

#[test]
fn cuda_versions_split() {
    assert_eq!(cuda_version(12040), Some((12, 4)));
    assert_eq!(cuda_version(13000), Some((13, 0)));
    assert_eq!(cuda_version(-1), None);
}

#[test]
fn brands_match_the_dra_driver() {
    assert_eq!(brand_name(&Brand::Nvidia), "Nvidia");
    assert_eq!(brand_name(&Brand::Tesla), "Tesla");
    assert_eq!(brand_name(&Brand::GRID), "Grid");
    assert_eq!(brand_name(&Brand::VGaming), "NvidiaCloudGaming");
}

#[test]
fn mig_modes_convert() {
    let what = || "GPU 0 mig mode".to_owned();
    let mode = NvmlMigMode {
        current: 1,
        pending: 0,
    };
    let expected = MigSupport::Supported {
        current: MigMode::Enabled,
        pending: MigMode::Disabled,
    };
    assert_eq!(mig_support(Ok(mode), what), Ok(expected));
    assert_eq!(
        mig_support(Err(NvmlError::NotSupported), what),
        Ok(MigSupport::NotSupported)
    );
    assert_eq!(
        mig_support(Err(NvmlError::GpuLost), what),
        Err(GpuError::GpuLost { what: what() })
    );
}

#[test]
fn sim_profile_indices_match_nvml_header() {
    assert_eq!(
        profile_index::SLICE_1,
        sys::NVML_GPU_INSTANCE_PROFILE_1_SLICE
    );
    assert_eq!(
        profile_index::SLICE_2,
        sys::NVML_GPU_INSTANCE_PROFILE_2_SLICE
    );
    assert_eq!(
        profile_index::SLICE_3,
        sys::NVML_GPU_INSTANCE_PROFILE_3_SLICE
    );
    assert_eq!(
        profile_index::SLICE_4,
        sys::NVML_GPU_INSTANCE_PROFILE_4_SLICE
    );
    assert_eq!(
        profile_index::SLICE_7,
        sys::NVML_GPU_INSTANCE_PROFILE_7_SLICE
    );
    assert_eq!(
        profile_index::SLICE_1_REV1,
        sys::NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1
    );
    assert_eq!(
        profile_index::SLICE_2_REV1,
        sys::NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1
    );
    assert_eq!(
        profile_index::SLICE_1_REV2,
        sys::NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2
    );
}
