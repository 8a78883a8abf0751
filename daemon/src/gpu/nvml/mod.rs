//! Real GPUs through NVML (nvml-wrapper; the library is loaded at run time).
//!
//! Owns the process's one [`Nvml`] handle, inside [`NvmlBackend`]: build the
//! backend once and share it (`Arc<dyn GpuBackend>`). MIG verbs live in
//! `mig`, over raw calls in `raw` (the one file allowed `unsafe`). No
//! nvml-wrapper type leaves this module: [`convert`] turns them into the
//! boundary's types and errors. Health events come from an NVML event set
//! (`health`). Where each GPU sits (PCIe root complex, NUMA node) is read
//! from sysfs ([`sysfs`]), once per GPU. A failed load is an error naming the
//! library, never a switch to the simulator.

mod convert;
mod health;
mod mig;
#[cfg(test)]
mod mig_tests;
mod process;
mod raw;
#[cfg(test)]
#[path = "../../../../tests/e2e/nvml/library.rs"]
mod sim_library;
#[cfg(test)]
mod sim_tests;
pub mod sysfs;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;

use self::convert::map_err;
use super::{
    ComputeInstance, ComputeMode, DriverInfo, GpuBackend, GpuError, GpuInfo, GpuInstance,
    GpuProcess, HealthWatch, MemoryUse, MigMode, MigProfile, MigSupport, Placement,
    ProcessUtilization,
};

/// NVLink links NVML asks about (`NVML_NVLINK_MAX_LINKS`).
const NVLINK_MAX_LINKS: u32 = 18;

/// Active NVLink links: each link's state until NVML says the GPU has no
/// more (NOT_SUPPORTED or INVALID_ARGUMENT at the first link past its last).
fn active_nvlinks(dev: &nvml_wrapper::Device<'_>) -> u32 {
    let mut active = 0;
    for link in 0..NVLINK_MAX_LINKS {
        match dev.link_wrapper_for(link).is_active() {
            Ok(true) => active += 1,
            Ok(false) => {}
            Err(_) => break,
        }
    }
    active
}

/// The library `Nvml::init` loads when no path is configured.
pub const DEFAULT_LIBRARY: &str = "libnvidia-ml.so.1";

/// The NVML backend: one initialised NVML library for the process.
pub struct NvmlBackend {
    nvml: Nvml,
    library: String,
    sysfs: sysfs::Sysfs,
    /// Each GPU's place (PCIe root, NUMA node) by bus id, read once: sysfs
    /// does not change under a running driver, and a problem is logged once.
    places: Mutex<HashMap<String, Place>>,
}

/// Where a GPU sits, as published; `None` for what sysfs does not tell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Place {
    pcie_root: Option<String>,
    numa_node: Option<u32>,
}

impl fmt::Debug for NvmlBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NvmlBackend")
            .field("library", &self.library)
            .finish_non_exhaustive()
    }
}

impl NvmlBackend {
    /// Load NVML from `library` (default [`DEFAULT_LIBRARY`], found by the
    /// dynamic loader) and initialise it.
    pub fn open(library: Option<&Path>) -> Result<NvmlBackend, GpuError> {
        let name = library.map_or_else(|| DEFAULT_LIBRARY.to_owned(), |p| p.display().to_string());
        let result = match library {
            Some(path) => Nvml::builder().lib_path(path.as_os_str()).init(),
            None => Nvml::init(),
        };
        match result {
            Ok(nvml) => Ok(NvmlBackend {
                nvml,
                library: name,
                sysfs: sysfs::Sysfs::default(),
                places: Mutex::new(HashMap::new()),
            }),
            Err(err) => Err(open_error(name, err)),
        }
    }

    /// The library this backend loaded, as configured.
    pub fn library(&self) -> &str {
        &self.library
    }

    /// The backend reading where GPUs sit from the sysfs tree at `root`
    /// (default [`sysfs::DEFAULT_ROOT`]).
    #[must_use]
    pub fn with_sysfs_root(mut self, root: &Path) -> NvmlBackend {
        self.sysfs = sysfs::Sysfs::new(root);
        self
    }

    /// Where the GPU at `bus_id` sits, read from sysfs the first time. A
    /// place sysfs cannot tell is left out of the inventory (its attribute
    /// is not published) with a warning; a GPU the kernel gives no NUMA
    /// node (-1, common in VMs) only at debug level.
    fn place(&self, index: u32, bus_id: &str) -> Place {
        let places = || self.places.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(place) = places().get(bus_id) {
            return place.clone();
        }
        // Read without the lock: two first calls at once both read (and
        // warn), which is harmless; the lock is never held across I/O.
        let pcie_root = (self.sysfs.pcie_root(bus_id))
            .map_err(|error| {
                tracing::warn!(gpu = index, %error, "no PCIe root: resource.kubernetes.io/pcieRoot is not published for this GPU");
            })
            .ok();
        let numa_node = match self.sysfs.numa_node(bus_id) {
            Ok(Some(node)) => Some(node),
            Ok(None) => {
                tracing::debug!(
                    gpu = index,
                    "no NUMA affinity (numa_node -1): resource.kubernetes.io/numaNode is not published for this GPU"
                );
                None
            }
            Err(error) => {
                tracing::warn!(gpu = index, %error, "no NUMA node: resource.kubernetes.io/numaNode is not published for this GPU");
                None
            }
        };
        let place = Place {
            pcie_root,
            numa_node,
        };
        places().insert(bus_id.to_owned(), place.clone());
        place
    }

    fn device(&self, index: u32) -> Result<nvml_wrapper::Device<'_>, GpuError> {
        match self.nvml.device_by_index(index) {
            Ok(device) => Ok(device),
            Err(NvmlError::InvalidArg) => Err(GpuError::NoSuchGpu { index }),
            Err(err) => Err(map_err("nvmlDeviceGetHandleByIndex_v2", gpu(index), err)),
        }
    }
}

/// A library that cannot be loaded, or is not NVML, is a `LibraryLoad`.
fn open_error(library: String, err: NvmlError) -> GpuError {
    match err {
        NvmlError::LibloadingError(e) => GpuError::LibraryLoad {
            library,
            reason: e.to_string(),
        },
        NvmlError::FailedToLoadSymbol(reason) => GpuError::LibraryLoad { library, reason },
        other => map_err("nvmlInit_v2", format!("initialising {library}"), other),
    }
}

/// "GPU 3": how errors name a GPU.
fn gpu(index: u32) -> String {
    format!("GPU {index}")
}

/// An error mapper for `call` on GPU `index`.
fn on_gpu(call: &'static str, index: u32) -> impl FnOnce(NvmlError) -> GpuError {
    move |err| map_err(call, gpu(index), err)
}

/// A value NVML returned that the boundary cannot represent.
fn malformed(call: &'static str, index: u32, value: impl fmt::Display) -> GpuError {
    GpuError::Nvml {
        call,
        message: format!("GPU {index}: unexpected value {value}"),
    }
}

impl GpuBackend for NvmlBackend {
    fn name(&self) -> &'static str {
        "nvml"
    }

    fn driver_info(&self) -> Result<DriverInfo, GpuError> {
        let what = || "driver".to_owned();
        let driver_version = (self.nvml.sys_driver_version())
            .map_err(|e| map_err("nvmlSystemGetDriverVersion", what(), e))?;
        let cuda = (self.nvml.sys_cuda_driver_version())
            .map_err(|e| map_err("nvmlSystemGetCudaDriverVersion_v2", what(), e))?;
        let cuda_driver_version = convert::cuda_version(cuda).ok_or(GpuError::Nvml {
            call: "nvmlSystemGetCudaDriverVersion_v2",
            message: format!("unexpected CUDA driver version {cuda}"),
        })?;
        Ok(DriverInfo {
            driver_version,
            cuda_driver_version,
        })
    }

    fn device_count(&self) -> Result<u32, GpuError> {
        (self.nvml.device_count()).map_err(|e| map_err("nvmlDeviceGetCount_v2", "GPUs".into(), e))
    }

    fn device_info(&self, index: u32) -> Result<GpuInfo, GpuError> {
        let dev = self.device(index)?;
        let cc = (dev.cuda_compute_capability())
            .map_err(on_gpu("nvmlDeviceGetCudaComputeCapability", index))?;
        let compute_capability = match (u32::try_from(cc.major), u32::try_from(cc.minor)) {
            (Ok(major), Ok(minor)) => (major, minor),
            _ => {
                return Err(malformed(
                    "nvmlDeviceGetCudaComputeCapability",
                    index,
                    cc.major,
                ));
            }
        };
        let raw_bus_id = dev
            .pci_info()
            .map_err(on_gpu("nvmlDeviceGetPciInfo_v3", index))?
            .bus_id;
        let pci_bus_id = convert::canonical_bus_id(&raw_bus_id)
            .ok_or_else(|| malformed("nvmlDeviceGetPciInfo_v3", index, &raw_bus_id))?;
        let place = self.place(index, &pci_bus_id);
        Ok(GpuInfo {
            index,
            uuid: dev.uuid().map_err(on_gpu("nvmlDeviceGetUUID", index))?,
            product_name: dev.name().map_err(on_gpu("nvmlDeviceGetName", index))?,
            brand: convert::brand_name(&dev.brand().map_err(on_gpu("nvmlDeviceGetBrand", index))?)
                .to_owned(),
            architecture: convert::architecture_name(
                &(dev.architecture()).map_err(on_gpu("nvmlDeviceGetArchitecture", index))?,
            ),
            compute_capability,
            memory_bytes: (dev.memory_info())
                .map_err(on_gpu("nvmlDeviceGetMemoryInfo_v2", index))?
                .total,
            pcie_root: place.pcie_root,
            numa_node: place.numa_node,
            pci_bus_id,
            minor: dev
                .minor_number()
                .map_err(on_gpu("nvmlDeviceGetMinorNumber", index))?,
            mig: convert::mig_support(dev.mig_mode(), || format!("GPU {index} mig mode"))?,
            nvlink_links: active_nvlinks(&dev),
            fabric: convert::fabric(raw::fabric_info(&self.nvml, &dev), || {
                format!("GPU {index} fabric info")
            })?,
        })
    }
    fn mig_profiles(&self, index: u32) -> Result<Vec<MigProfile>, GpuError> {
        mig::profiles(&self.nvml, &self.device(index)?, index)
    }

    fn set_mig_mode(&self, index: u32, mode: MigMode) -> Result<MigSupport, GpuError> {
        let dev = self.device(index)?;
        let verb = format!("set MIG mode {mode:?}");
        let status = (dev.set_mig_mode(mode == MigMode::Enabled)).map_err(mig::on(
            "nvmlDeviceSetMigMode",
            index,
            &verb,
        ))?;
        // SetMigMode can succeed while the activation failed: check both.
        if status != 0 {
            let err = NvmlError::from(status);
            return Err(mig::on("nvmlDeviceSetMigMode (activation)", index, &verb)(
                err,
            ));
        }
        convert::mig_support(dev.mig_mode(), || format!("GPU {index} mig mode"))
    }

    fn gpu_instances(&self, index: u32) -> Result<Vec<GpuInstance>, GpuError> {
        mig::instances(&self.nvml, &self.device(index)?, index)
    }

    fn create_gpu_instance(
        &self,
        index: u32,
        profile_id: u32,
        placement: Placement,
    ) -> Result<GpuInstance, GpuError> {
        let dev = self.device(index)?;
        let verb = format!(
            "create GPU instance of profile {profile_id} at {}:{}",
            placement.start, placement.size
        );
        let gi = raw::create_gpu_instance(&self.nvml, &dev, profile_id, placement).map_err(
            mig::on("nvmlDeviceCreateGpuInstanceWithPlacement", index, &verb),
        )?;
        Ok(GpuInstance {
            id: gi.id,
            profile_id: gi.profile_id,
            placement: gi.placement,
            compute_instances: Vec::new(),
        })
    }

    fn create_compute_instance(&self, index: u32, gi_id: u32) -> Result<ComputeInstance, GpuError> {
        let dev = self.device(index)?;
        let verb = format!("create compute instance in GPU instance {gi_id}");
        let gi = raw::gpu_instance_by_id(&self.nvml, &dev, gi_id).map_err(mig::on(
            "nvmlDeviceGetGpuInstanceById",
            index,
            &verb,
        ))?;
        let profile = mig::full_ci_profile(&self.nvml, &gi, index)?;
        let ci = raw::create_compute_instance(&self.nvml, &gi, profile.id).map_err(mig::on(
            "nvmlGpuInstanceCreateComputeInstance",
            index,
            &verb,
        ))?;
        let uuid = mig::mig_uuids(&self.nvml, &dev, index)?
            .remove(&(gi_id, ci.id))
            .ok_or_else(|| GpuError::NotFound {
                what: format!(
                    "GPU {index} MIG device of GPU instance {gi_id}, compute instance {}",
                    ci.id
                ),
            })?;
        Ok(ComputeInstance {
            id: ci.id,
            profile_id: ci.profile_id,
            uuid,
        })
    }

    fn destroy_compute_instance(&self, index: u32, gi_id: u32, ci_id: u32) -> Result<(), GpuError> {
        let dev = self.device(index)?;
        let verb = format!("destroy compute instance {ci_id} of GPU instance {gi_id}");
        let gi = raw::gpu_instance_by_id(&self.nvml, &dev, gi_id).map_err(mig::on(
            "nvmlDeviceGetGpuInstanceById",
            index,
            &verb,
        ))?;
        let ci = raw::compute_instance_by_id(&self.nvml, &gi, ci_id).map_err(mig::on(
            "nvmlGpuInstanceGetComputeInstanceById",
            index,
            &verb,
        ))?;
        raw::destroy_compute_instance(&self.nvml, ci).map_err(mig::on(
            "nvmlComputeInstanceDestroy",
            index,
            &verb,
        ))
    }

    fn destroy_gpu_instance(&self, index: u32, gi_id: u32) -> Result<(), GpuError> {
        let dev = self.device(index)?;
        let verb = format!("destroy GPU instance {gi_id}");
        let gi = raw::gpu_instance_by_id(&self.nvml, &dev, gi_id).map_err(mig::on(
            "nvmlDeviceGetGpuInstanceById",
            index,
            &verb,
        ))?;
        raw::destroy_gpu_instance(&self.nvml, gi).map_err(mig::on(
            "nvmlGpuInstanceDestroy",
            index,
            &verb,
        ))
    }

    fn compute_mode(&self, index: u32) -> Result<ComputeMode, GpuError> {
        let mode = (self.device(index)?.compute_mode())
            .map_err(on_gpu("nvmlDeviceGetComputeMode", index))?;
        convert::compute_mode(mode)
            .ok_or_else(|| malformed("nvmlDeviceGetComputeMode", index, "EXCLUSIVE_THREAD"))
    }

    fn set_compute_mode(&self, index: u32, mode: ComputeMode) -> Result<(), GpuError> {
        let mut dev = self.device(index)?;
        (dev.set_compute_mode(convert::nvml_compute_mode(mode)))
            .map_err(on_gpu("nvmlDeviceSetComputeMode", index))
    }

    fn processes(&self, index: u32) -> Result<Vec<GpuProcess>, GpuError> {
        process::processes(&self.device(index)?, index)
    }

    fn process_utilization(
        &self,
        index: u32,
        since_us: u64,
    ) -> Result<Vec<ProcessUtilization>, GpuError> {
        process::utilization(&self.device(index)?, index, since_us)
    }

    fn memory_use(&self, index: u32, gpu_instance: Option<u32>) -> Result<MemoryUse, GpuError> {
        process::memory_use(&self.nvml, &self.device(index)?, index, gpu_instance)
    }

    fn watch_health(&self) -> Result<Box<dyn HealthWatch + '_>, GpuError> {
        Ok(Box::new(health::watch(&self.nvml)?))
    }
}
