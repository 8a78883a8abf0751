//! Test bodies every backend must pass, written against `&dyn GpuBackend`.
//!
//! `sim_*` tests call them on the simulator (always); `nvml_*` tests call them
//! on real GPUs (`#[ignore]`d, run where a GPU is lent). A body that holds for
//! one backend and not the other means the simulator is not faithful.
//! Every body is read-only: the process bodies list processes and memory on
//! whatever runs on the node (none, or the simulator's fake processes), and
//! assume the node's processes do not change while they run.

use std::collections::{HashMap, HashSet};

use super::{GpuBackend, GpuError, GpuInfo, GpuInstance, MigMode, MigSupport};

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

/// Identity: index matches, GPU- UUIDs, canonical bus ids, all unique; a
/// PCIe root `pci<domain>:<bus>` in the GPU's own domain at a bus below the
/// GPU's; GPUs under one root on one NUMA node (a root complex belongs to
/// one socket).
pub(crate) fn identity(backend: &dyn GpuBackend) {
    let gpus = all_gpus(backend);
    let mut numa_of_root: HashMap<String, Option<u32>> = HashMap::new();
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
            let (domain, bus) = (&gpu.pci_bus_id[..4], &gpu.pci_bus_id[5..7]);
            assert!(
                root.len() == 10 && root[3..7] == *domain && root[8..] <= *bus,
                "pcie root {root} of {}",
                gpu.pci_bus_id
            );
            let numa = *numa_of_root.entry(root.clone()).or_insert(gpu.numa_node);
            assert_eq!(numa, gpu.numa_node, "GPUs under {root} on two NUMA nodes");
        }
    }
}

/// Facts: names and sizes present and plausible.
pub(crate) fn facts(backend: &dyn GpuBackend) {
    for gpu in all_gpus(backend) {
        assert!(gpu.memory_bytes > 0, "GPU {}: no memory", gpu.index);
        // "Tesla T4" keeps its old brand in its name.
        assert!(
            gpu.product_name.starts_with("NVIDIA ") || gpu.product_name.starts_with("Tesla "),
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

/// A GPU without MIG answers every MIG query NOT_SUPPORTED and changes
/// nothing; NVLink links and fabric go together (a fabric is NVLink's), and
/// a fabric's cluster UUID is canonical.
pub(crate) fn capabilities(backend: &dyn GpuBackend) {
    for gpu in all_gpus(backend) {
        let index = gpu.index;
        if gpu.mig == MigSupport::NotSupported {
            let not_supported = |r: Result<(), GpuError>, what: &str| {
                assert!(
                    matches!(r, Err(GpuError::NotSupported { .. })),
                    "GPU {index} {what}: {r:?}"
                );
            };
            not_supported(backend.mig_profiles(index).map(drop), "MIG profiles");
            not_supported(backend.gpu_instances(index).map(drop), "GPU instances");
            let placement = super::Placement { start: 0, size: 1 };
            not_supported(
                backend.create_gpu_instance(index, 0, placement).map(drop),
                "create GPU instance",
            );
            assert_eq!(
                backend.device_info(index).map(|g| g.mig),
                Ok(MigSupport::NotSupported)
            );
        }
        if let Some(fabric) = &gpu.fabric {
            assert!(gpu.nvlink_links > 0, "GPU {index}: a fabric without NVLink");
            let uuid = uuid::Uuid::try_parse(&fabric.cluster_uuid).map(|u| u.to_string());
            assert_eq!(
                uuid.as_deref(),
                Ok(fabric.cluster_uuid.as_str()),
                "GPU {index}"
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
    capabilities(backend);
    driver(backend);
    out_of_range(backend);
    health_watch(backend);
    processes_all(backend);
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

/// The process bodies below.
pub(crate) fn processes_all(backend: &dyn GpuBackend) {
    processes_are_consistent(backend);
    memory_use_is_consistent(backend);
    utilization_is_consistent(backend);
}

fn mig_enabled(gpu: &GpuInfo) -> bool {
    matches!(
        gpu.mig,
        MigSupport::Supported {
            current: MigMode::Enabled,
            ..
        }
    )
}

/// The GPU instances of `gpu`; none on a GPU without MIG.
fn instances(backend: &dyn GpuBackend, gpu: &GpuInfo) -> Vec<GpuInstance> {
    match backend.gpu_instances(gpu.index) {
        Err(GpuError::NotSupported { .. }) => Vec::new(),
        other => other.unwrap(),
    }
}

/// Processes ascending by (pid, instance ids), one entry each; instance ids
/// both set, naming a compute instance the GPU has, exactly in MIG mode;
/// memory within the GPU's.
pub(crate) fn processes_are_consistent(backend: &dyn GpuBackend) {
    for gpu in all_gpus(backend) {
        let processes = backend.processes(gpu.index).unwrap();
        let keys: Vec<_> = (processes.iter())
            .map(|p| (p.pid, p.gpu_instance, p.compute_instance))
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{processes:?}");
        let gis = instances(backend, &gpu);
        for p in &processes {
            assert!(p.used_memory.unwrap_or(0) <= gpu.memory_bytes, "{p:?}");
            match (p.gpu_instance, p.compute_instance) {
                (None, None) => assert!(!mig_enabled(&gpu), "GPU {}: {p:?}", gpu.index),
                (Some(gi), Some(ci)) => {
                    assert!(mig_enabled(&gpu), "GPU {}: {p:?}", gpu.index);
                    let found = (gis.iter().filter(|i| i.id == gi))
                        .any(|i| i.compute_instances.iter().any(|c| c.id == ci));
                    assert!(found, "GPU {}: {p:?} on no instance of {gis:?}", gpu.index);
                }
                _ => panic!("GPU {}: one instance id of two: {p:?}", gpu.index),
            }
        }
    }
}

/// Memory of each GPU (its size) and of each GPU instance with a compute
/// instance (within the GPU's); used within total and at least what its
/// listed processes use; a GPU instance without a compute instance (no MIG
/// device) is `NotFound`, an unknown one too (or `NotSupported` on a GPU
/// without MIG).
pub(crate) fn memory_use_is_consistent(backend: &dyn GpuBackend) {
    for gpu in all_gpus(backend) {
        let processes = backend.processes(gpu.index).unwrap();
        let sum = |gi: Option<u32>| -> u64 {
            (processes.iter())
                .filter(|p| gi.is_none() || p.gpu_instance == gi)
                .filter_map(|p| p.used_memory)
                .sum()
        };
        let whole = backend.memory_use(gpu.index, None).unwrap();
        assert_eq!(whole.total, gpu.memory_bytes, "GPU {}", gpu.index);
        assert!(whole.used <= whole.total, "GPU {}: {whole:?}", gpu.index);
        assert!(whole.used >= sum(None), "GPU {}: {whole:?}", gpu.index);
        let gis = instances(backend, &gpu);
        for gi in &gis {
            let slice = backend.memory_use(gpu.index, Some(gi.id));
            if gi.compute_instances.is_empty() {
                assert!(matches!(slice, Err(GpuError::NotFound { .. })), "{slice:?}");
                continue;
            }
            let slice = slice.unwrap();
            assert!(slice.total > 0 && slice.total <= whole.total, "{slice:?}");
            assert!(slice.used <= slice.total, "GI {}: {slice:?}", gi.id);
            assert!(slice.used >= sum(Some(gi.id)), "GI {}: {slice:?}", gi.id);
        }
        let unknown = gis.iter().map(|gi| gi.id + 1).max().unwrap_or(0) + 1000;
        let answer = backend.memory_use(gpu.index, Some(unknown));
        assert!(
            matches!(
                answer,
                Err(GpuError::NotFound { .. } | GpuError::NotSupported { .. })
            ),
            "GPU {} GI {unknown}: {answer:?}",
            gpu.index
        );
    }
}

/// Per-process samples: `NotSupported` in MIG mode; elsewhere (where the
/// driver samples) percentages and timestamps after the time asked, and
/// none after a time still to come.
pub(crate) fn utilization_is_consistent(backend: &dyn GpuBackend) {
    let now_us = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH))
        .map(|d| u64::try_from(d.as_micros()).unwrap())
        .unwrap();
    let since = now_us - 60_000_000;
    for gpu in all_gpus(backend) {
        let samples = match backend.process_utilization(gpu.index, since) {
            Err(GpuError::NotSupported { .. }) => continue,
            other => other.unwrap(),
        };
        assert!(
            !mig_enabled(&gpu),
            "GPU {} in MIG mode: {samples:?}",
            gpu.index
        );
        for s in &samples {
            assert!(s.sm_percent <= 100 && s.memory_percent <= 100, "{s:?}");
            assert!(s.timestamp_us > since, "{s:?} not after {since}");
        }
        let later = backend.process_utilization(gpu.index, now_us + 3_600_000_000);
        assert_eq!(later, Ok(Vec::new()), "GPU {}", gpu.index);
    }
}
