//! Test bodies every backend must pass, written against `&dyn GpuBackend`.
//!
//! `sim_*` tests call them on the simulator (always); `nvml_*` tests call them
//! on real GPUs (`#[ignore]`d, run where a GPU is lent). A body that holds for
//! one backend and not the other means the simulator is not faithful.

use std::collections::HashSet;

use super::{GpuBackend, GpuError, GpuInfo, MigSupport};

/// Every GPU the backend reports.
pub(crate) fn all_gpus(backend: &dyn GpuBackend) -> Vec<GpuInfo> {
    let count = backend.device_count().unwrap();
    (0..count)
        .map(|i| backend.device_info(i).unwrap())
        .collect()
}

/// "GPU-" followed by a lowercase hyphenated UUID.
fn is_gpu_uuid(s: &str) -> bool {
    s.strip_prefix("GPU-")
        .and_then(|rest| {
            uuid::Uuid::try_parse(rest)
                .ok()
                .map(|u| u.to_string() == rest)
        })
        .unwrap_or(false)
}

/// "dddd:bb:dd.f", lowercase hex.
fn is_canonical_bus_id(s: &str) -> bool {
    let shape: Vec<usize> = s.split([':', '.']).map(str::len).collect();
    shape == [4, 2, 2, 1]
        && s.chars()
            .all(|c| c == ':' || c == '.' || c.is_ascii_digit() || c.is_ascii_lowercase())
}

/// Identity: index matches, GPU- UUIDs, canonical bus ids, all unique.
pub(crate) fn identity(backend: &dyn GpuBackend) {
    let gpus = all_gpus(backend);
    let mut uuids = HashSet::new();
    let mut buses = HashSet::new();
    let mut minors = HashSet::new();
    for (gpu, index) in gpus.iter().zip(0u32..) {
        assert_eq!(gpu.index, index);
        assert!(is_gpu_uuid(&gpu.uuid), "uuid {}", gpu.uuid);
        assert!(
            is_canonical_bus_id(&gpu.pci_bus_id),
            "bus id {}",
            gpu.pci_bus_id
        );
        assert!(
            uuids.insert(gpu.uuid.clone()),
            "duplicate uuid {}",
            gpu.uuid
        );
        assert!(
            buses.insert(gpu.pci_bus_id.clone()),
            "duplicate bus {}",
            gpu.pci_bus_id
        );
        assert!(minors.insert(gpu.minor), "duplicate minor {}", gpu.minor);
        if let Some(root) = &gpu.pcie_root {
            assert!(root.starts_with("pci"), "pcie root {root}");
        }
    }
}

/// Facts: names and sizes present and plausible.
pub(crate) fn facts(backend: &dyn GpuBackend) {
    for gpu in all_gpus(backend) {
        assert!(gpu.memory_bytes > 0, "GPU {}: no memory", gpu.index);
        assert!(
            gpu.product_name.starts_with("NVIDIA"),
            "{}",
            gpu.product_name
        );
        assert!(!gpu.brand.is_empty() && !gpu.architecture.is_empty());
        assert!(
            gpu.compute_capability >= (3, 0),
            "{:?}",
            gpu.compute_capability
        );
        if let MigSupport::Supported { current, pending } = gpu.mig {
            assert!(
                gpu.compute_capability >= (8, 0),
                "MIG {current:?}/{pending:?}"
            );
        }
    }
}

/// Driver versions: "NNN.NN[.NN]" and a CUDA version of at least 11.0.
pub(crate) fn driver(backend: &dyn GpuBackend) {
    let info = backend.driver_info().unwrap();
    let parts: Vec<&str> = info.driver_version.split('.').collect();
    assert!(parts.len() >= 2, "driver {}", info.driver_version);
    assert!(
        parts.iter().all(|p| p.parse::<u32>().is_ok()),
        "driver {}",
        info.driver_version
    );
    assert!(
        info.cuda_driver_version >= (11, 0),
        "{:?}",
        info.cuda_driver_version
    );
}

/// Asking past the last GPU is `NoSuchGpu`, naming the index.
pub(crate) fn out_of_range(backend: &dyn GpuBackend) {
    let count = backend.device_count().unwrap();
    assert_eq!(
        backend.device_info(count),
        Err(GpuError::NoSuchGpu { index: count })
    );
}

/// All bodies above.
pub(crate) fn all(backend: &dyn GpuBackend) {
    identity(backend);
    facts(backend);
    driver(backend);
    out_of_range(backend);
    health_watch(backend);
}

/// A health watch registers on every GPU and waits briefly, read-only: any
/// unmonitored GPU or event it reports names a GPU the backend has, by its
/// index and UUID. Returns the events seen (usually none).
pub(crate) fn health_watch(backend: &dyn GpuBackend) -> Vec<crate::gpu::HealthEvent> {
    let gpus = all_gpus(backend);
    let mut watch = backend.watch_health().unwrap();
    for gpu in watch.unmonitored() {
        assert!(gpus.iter().any(|g| g.index == gpu.gpu_index), "{gpu:?}");
        assert!(!gpu.reason.is_empty(), "{gpu:?}");
    }
    let events = watch.wait(std::time::Duration::from_millis(200)).unwrap();
    for event in &events {
        let gpu = gpus.iter().find(|g| g.index == event.gpu_index);
        assert_eq!(
            gpu.map(|g| g.uuid.as_str()),
            Some(event.gpu_uuid.as_str()),
            "{event:?}"
        );
    }
    events
}
