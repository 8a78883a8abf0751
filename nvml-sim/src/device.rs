//! The device queries, in safe code: what a GPU handle or a MIG device
//! handle names ([`Device`]), and NVML's answer for each getter, from the
//! simulator's GPU (`device_info`, its model's table, its state). The
//! `ffi` layer writes these answers into the caller's memory.
//!
//! A MIG device is a compute instance, named by its ids; its handle is
//! INVALID_ARGUMENT once the instance is gone. MIG devices are numbered by
//! (GPU instance id, compute instance id), densely: what
//! `nvmlDeviceGetMigDeviceHandleByIndex` walks. A GPU the health events
//! said was lost answers GPU_IS_LOST to every query naming it.

use gpuslice::gpu::sim::{ModelSpec, SimModel};
use gpuslice::gpu::{
    ComputeInstance, ComputeMode, GpuBackend, GpuFabric, GpuInfo, GpuInstance, MemoryUse, MigMode,
    MigProfile, MigSupport,
};
use nvml_wrapper_sys::bindings as sys;

use crate::code::{
    self, Answer, IN_USE, INVALID_ARGUMENT, NO_PERMISSION, NOT_FOUND, NOT_SUPPORTED,
};
use crate::handle::Handle;
use crate::node::Node;

/// A MIG device: one compute instance of one GPU instance.
#[derive(Debug, Clone)]
pub struct MigDevice {
    /// The parent GPU's index.
    pub gpu: u32,
    /// Its position among the GPU's MIG devices.
    pub position: u32,
    /// The GPU instance.
    pub gi: GpuInstance,
    /// The compute instance.
    pub ci: ComputeInstance,
    /// The GPU instance's profile.
    pub profile: MigProfile,
}

/// What a device handle names.
#[derive(Debug, Clone)]
pub enum Device {
    /// A whole GPU, by index.
    Gpu(u32),
    /// A MIG device.
    Mig(Box<MigDevice>),
}

impl Device {
    /// The (parent) GPU's index.
    pub fn gpu(&self) -> u32 {
        match self {
            Device::Gpu(index) => *index,
            Device::Mig(mig) => mig.gpu,
        }
    }
}

/// The simulator's answer as NVML's code.
pub fn sim<T>(result: Result<T, gpuslice::gpu::GpuError>) -> Answer<T> {
    result.map_err(|err| code::of_error(&err))
}

/// Whether the caller may change the hardware: NVML's MIG and compute-mode
/// changes need root (or a MIG capability this library does not model).
pub fn require_root() -> Answer<()> {
    if nix::unistd::geteuid().is_root() {
        Ok(())
    } else {
        Err(NO_PERMISSION)
    }
}

impl Node {
    /// `nvmlDeviceGetCount`.
    pub fn count(&self) -> Answer<u32> {
        sim(self.sim.device_count())
    }

    /// The model of GPU `index`.
    pub fn spec(&self, index: u32) -> Answer<&'static ModelSpec> {
        sim(self.sim.model(index)).map(SimModel::spec)
    }

    /// `device_info` of GPU `index`, for one that answers.
    pub fn info(&self, index: u32) -> Answer<GpuInfo> {
        self.answering(index)?;
        sim(self.sim.device_info(index))
    }

    /// What `handle` names, while it exists.
    pub fn device(&self, handle: sys::nvmlDevice_t) -> Answer<Device> {
        match Handle::of(handle)? {
            Handle::Gpu(index) if index < self.count()? => {
                self.answering(index)?;
                Ok(Device::Gpu(index))
            }
            Handle::Mig { gpu, gi, ci } if gpu < self.count()? => {
                self.answering(gpu)?;
                (self.mig_devices(gpu)?.into_iter())
                    .find(|m| m.gi.id == gi && m.ci.id == ci)
                    .map(|m| Device::Mig(Box::new(m)))
                    .ok_or(INVALID_ARGUMENT)
            }
            _ => Err(INVALID_ARGUMENT),
        }
    }

    /// A whole GPU's index: INVALID_ARGUMENT for a MIG device.
    pub fn whole(&self, handle: sys::nvmlDevice_t) -> Answer<u32> {
        match self.device(handle)? {
            Device::Gpu(index) => Ok(index),
            Device::Mig(_) => Err(INVALID_ARGUMENT),
        }
    }

    /// The MIG devices of GPU `index`, by (GI id, CI id); none while MIG is
    /// disabled or on a GPU without MIG.
    pub fn mig_devices(&self, index: u32) -> Answer<Vec<MigDevice>> {
        if !self.mig_enabled(index)? {
            return Ok(Vec::new());
        }
        let profiles = sim(self.sim.mig_profiles(index))?;
        let mut out = Vec::new();
        for gi in sim(self.sim.gpu_instances(index))? {
            let Some(profile) = profiles.iter().find(|p| p.id == gi.profile_id) else {
                continue;
            };
            for ci in &gi.compute_instances {
                out.push(MigDevice {
                    gpu: index,
                    position: u32::try_from(out.len()).map_err(|_| INVALID_ARGUMENT)?,
                    gi: gi.clone(),
                    ci: ci.clone(),
                    profile: profile.clone(),
                });
            }
        }
        Ok(out)
    }

    /// Whether GPU `index` is in MIG mode now.
    pub fn mig_enabled(&self, index: u32) -> Answer<bool> {
        Ok(matches!(
            self.info(index)?.mig,
            MigSupport::Supported {
                current: MigMode::Enabled,
                ..
            }
        ))
    }

    /// `nvmlDeviceGetHandleByIndex`.
    pub fn handle_by_index(&self, index: u32) -> Answer<Handle> {
        if index >= self.count()? {
            return Err(INVALID_ARGUMENT);
        }
        self.answering(index)?;
        Ok(Handle::Gpu(index))
    }

    /// `nvmlDeviceGetHandleByUUID`: a GPU's UUID or a MIG device's.
    pub fn handle_by_uuid(&self, uuid: &str) -> Answer<Handle> {
        for index in 0..self.count()? {
            if self.is_lost(index) {
                if sim(self.sim.device_info(index))?.uuid == uuid {
                    return Err(code::GPU_IS_LOST);
                }
                continue;
            }
            if self.info(index)?.uuid == uuid {
                return Ok(Handle::Gpu(index));
            }
            if let Some(m) = (self.mig_devices(index)?.into_iter()).find(|m| m.ci.uuid == uuid) {
                return Ok(mig_handle(&m));
            }
        }
        Err(NOT_FOUND)
    }

    /// `nvmlDeviceGetHandleByPciBusId_v2`: NVML's form ("00000000:3B:00.0")
    /// or the short one, any case.
    pub fn handle_by_bus_id(&self, bus_id: &str) -> Answer<Handle> {
        let wanted = bus_id.to_ascii_lowercase();
        for index in 0..self.count()? {
            let info = sim(self.sim.device_info(index))?;
            if wanted == info.pci_bus_id || wanted == nvml_bus_id(&info).to_ascii_lowercase() {
                self.answering(index)?;
                return Ok(Handle::Gpu(index));
            }
        }
        Err(NOT_FOUND)
    }

    /// `nvmlDeviceGetName`: a MIG device is "<GPU> MIG <profile>".
    pub fn name(&self, device: &Device) -> Answer<String> {
        let product = self.spec(device.gpu())?.product_name;
        Ok(match device {
            Device::Gpu(_) => product.to_owned(),
            Device::Mig(mig) => format!("{product} MIG {}", mig.profile.name),
        })
    }

    /// `nvmlDeviceGetUUID`.
    pub fn uuid(&self, device: &Device) -> Answer<String> {
        match device {
            Device::Gpu(index) => Ok(self.info(*index)?.uuid),
            Device::Mig(mig) => Ok(mig.ci.uuid.clone()),
        }
    }

    /// `nvmlDeviceGetMigMode`: NOT_SUPPORTED on a GPU without MIG.
    pub fn mig_mode(&self, index: u32) -> Answer<(u32, u32)> {
        let bit = |mode: MigMode| u32::from(mode == MigMode::Enabled);
        match self.info(index)?.mig {
            MigSupport::NotSupported => Err(NOT_SUPPORTED),
            MigSupport::Supported { current, pending } => Ok((bit(current), bit(pending))),
        }
    }

    /// `nvmlDeviceSetMigMode`: the call's own answer, and the activation
    /// status it writes. A mode the GPU cannot switch to now because
    /// processes hold it stays pending on Ampere (SUCCESS, activation
    /// IN_USE, as a failed reset leaves it) and is refused on Hopper and
    /// later (IN_USE); disabling with GPU instances left is IN_USE.
    pub fn set_mig_mode(&self, index: u32, mode: u32) -> Answer<code::Code> {
        let wanted = match mode {
            0 => MigMode::Disabled,
            1 => MigMode::Enabled,
            _ => return Err(INVALID_ARGUMENT),
        };
        self.answering(index)?;
        if self.info(index)?.mig == MigSupport::NotSupported {
            return Err(NOT_SUPPORTED);
        }
        require_root()?;
        match self.sim.set_mig_mode(index, wanted) {
            Ok(_) => Ok(code::SUCCESS),
            Err(err) => {
                let pending = matches!(
                    self.info(index)?.mig,
                    MigSupport::Supported { current, pending } if pending == wanted && current != wanted
                );
                if pending && code::of_error(&err) == IN_USE {
                    Ok(IN_USE)
                } else {
                    Err(code::of_error(&err))
                }
            }
        }
    }

    /// `nvmlDeviceGetMemoryInfo(_v2)`: a GPU's, or its MIG device's slice.
    pub fn memory(&self, device: &Device) -> Answer<MemoryUse> {
        match device {
            Device::Gpu(index) => sim(self.sim.memory_use(*index, None)),
            Device::Mig(mig) => sim(self.sim.memory_use(mig.gpu, Some(mig.gi.id))),
        }
    }

    /// `nvmlDeviceGetComputeMode`.
    pub fn compute_mode(&self, index: u32) -> Answer<u32> {
        Ok(match sim(self.sim.compute_mode(index))? {
            ComputeMode::Default => sys::nvmlComputeMode_enum_NVML_COMPUTEMODE_DEFAULT,
            ComputeMode::ExclusiveProcess => {
                sys::nvmlComputeMode_enum_NVML_COMPUTEMODE_EXCLUSIVE_PROCESS
            }
            ComputeMode::Prohibited => sys::nvmlComputeMode_enum_NVML_COMPUTEMODE_PROHIBITED,
        })
    }

    /// `nvmlDeviceSetComputeMode`: root only; EXCLUSIVE_THREAD is gone from
    /// every current driver (NOT_SUPPORTED).
    pub fn set_compute_mode(&self, index: u32, mode: u32) -> Answer<()> {
        let mode = match mode {
            sys::nvmlComputeMode_enum_NVML_COMPUTEMODE_DEFAULT => ComputeMode::Default,
            sys::nvmlComputeMode_enum_NVML_COMPUTEMODE_EXCLUSIVE_PROCESS => {
                ComputeMode::ExclusiveProcess
            }
            sys::nvmlComputeMode_enum_NVML_COMPUTEMODE_PROHIBITED => ComputeMode::Prohibited,
            sys::nvmlComputeMode_enum_NVML_COMPUTEMODE_EXCLUSIVE_THREAD => {
                return Err(NOT_SUPPORTED);
            }
            _ => return Err(INVALID_ARGUMENT),
        };
        self.answering(index)?;
        require_root()?;
        sim(self.sim.set_compute_mode(index, mode))
    }

    /// `nvmlDeviceGetNvLinkState`: links 0..n of a GPU with n active links
    /// are enabled, the next is INVALID_ARGUMENT; NOT_SUPPORTED without
    /// NVLink.
    pub fn nvlink_active(&self, index: u32, link: u32) -> Answer<bool> {
        let links = self.info(index)?.nvlink_links;
        if links == 0 {
            Err(NOT_SUPPORTED)
        } else if link < links {
            Ok(true)
        } else {
            Err(INVALID_ARGUMENT)
        }
    }

    /// `nvmlDeviceGetGpuFabricInfoV`: NOT_SUPPORTED without a fabric.
    pub fn fabric(&self, index: u32) -> Answer<GpuFabric> {
        self.info(index)?.fabric.ok_or(NOT_SUPPORTED)
    }
}

/// The handle of a MIG device.
pub fn mig_handle(mig: &MigDevice) -> Handle {
    Handle::Mig {
        gpu: mig.gpu,
        gi: mig.gi.id,
        ci: mig.ci.id,
    }
}

/// NVML's form of a GPU's bus id: an 8-digit domain, uppercase
/// ("00000000:3B:00.0").
pub fn nvml_bus_id(info: &GpuInfo) -> String {
    let (domain, rest) = info
        .pci_bus_id
        .split_once(':')
        .unwrap_or(("0", &info.pci_bus_id));
    let domain = u32::from_str_radix(domain, 16).unwrap_or(0);
    format!("{domain:08X}:{}", rest.to_ascii_uppercase())
}

/// The (domain, bus, device, function) of a canonical bus id.
pub fn bus_parts(info: &GpuInfo) -> Answer<(u32, u32, u32, u32)> {
    let parse = |text: &str| u32::from_str_radix(text, 16).map_err(|_| INVALID_ARGUMENT);
    let (domain, rest) = info.pci_bus_id.split_once(':').ok_or(INVALID_ARGUMENT)?;
    let (bus, rest) = rest.split_once(':').ok_or(INVALID_ARGUMENT)?;
    let (device, function) = rest.split_once('.').ok_or(INVALID_ARGUMENT)?;
    Ok((
        parse(domain)?,
        parse(bus)?,
        parse(device)?,
        parse(function)?,
    ))
}

/// `nvmlBrandType_t` of the brand string the tables give (go-nvlib's).
pub fn brand(name: &str) -> u32 {
    match name {
        "Quadro" => sys::nvmlBrandType_enum_NVML_BRAND_QUADRO,
        "Tesla" => sys::nvmlBrandType_enum_NVML_BRAND_TESLA,
        "NVS" => sys::nvmlBrandType_enum_NVML_BRAND_NVS,
        "Grid" => sys::nvmlBrandType_enum_NVML_BRAND_GRID,
        "GeForce" => sys::nvmlBrandType_enum_NVML_BRAND_GEFORCE,
        "Titan" => sys::nvmlBrandType_enum_NVML_BRAND_TITAN,
        "NvidiaRTX" => sys::nvmlBrandType_enum_NVML_BRAND_NVIDIA_RTX,
        "Nvidia" => sys::nvmlBrandType_enum_NVML_BRAND_NVIDIA,
        _ => sys::nvmlBrandType_enum_NVML_BRAND_UNKNOWN,
    }
}

/// `nvmlDeviceArchitecture_t` of the architecture the tables name.
pub fn architecture(name: &str) -> u32 {
    match name {
        "Turing" => sys::NVML_DEVICE_ARCH_TURING,
        "Ampere" => sys::NVML_DEVICE_ARCH_AMPERE,
        "Ada Lovelace" => sys::NVML_DEVICE_ARCH_ADA,
        "Hopper" => sys::NVML_DEVICE_ARCH_HOPPER,
        "Blackwell" => sys::NVML_DEVICE_ARCH_BLACKWELL,
        _ => sys::NVML_DEVICE_ARCH_UNKNOWN,
    }
}

/// NVML's CUDA driver version integer (13000 for 13.0).
pub fn cuda_version((major, minor): (u32, u32)) -> i32 {
    i32::try_from(major * 1000 + minor * 10).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::{architecture, brand, cuda_version};
    use nvml_wrapper_sys::bindings as sys;

    #[test]
    fn names_map_to_nvml_enums() {
        assert_eq!(brand("Nvidia"), sys::nvmlBrandType_enum_NVML_BRAND_NVIDIA);
        assert_eq!(architecture("Ada Lovelace"), sys::NVML_DEVICE_ARCH_ADA);
        assert_eq!(cuda_version((13, 0)), 13000);
        assert_eq!(cuda_version((12, 4)), 12040);
    }
}
