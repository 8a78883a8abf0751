//! Pure conversions from nvml-wrapper's types to the hardware boundary's.
//!
//! Owns the one NVML error mapping ([`map_err`]) and the small formatting rules
//! (brand and architecture names as NVIDIA's DRA driver publishes them, the
//! canonical PCI bus id, CUDA version split, MIG mode). No NVML calls, no I/O.

use nvml_wrapper::enum_wrappers::device::{Brand, ComputeMode as NvmlComputeMode};
use nvml_wrapper::enums::device::DeviceArchitecture;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::structs::device::MigMode as NvmlMigMode;
use nvml_wrapper_sys::bindings as sys;

use crate::gpu::{ComputeMode, FabricState, GpuError, GpuFabric, MigMode, MigSupport};

/// NVML return codes the wrapper has no variant for (it reports `UnexpectedVariant`).
const INSUFFICIENT_RESOURCES: u32 = 23;
pub(super) const ARGUMENT_VERSION_MISMATCH: u32 = 25;
const NOT_READY: u32 = 27;
const INVALID_STATE: u32 = 29;

/// `NVML_DEVICE_MIG_ENABLE` (nvml.h).
const MIG_ENABLE: u32 = 1;

/// The one mapping from an NVML failure to a [`GpuError`]. `call` is the NVML
/// function, `what` the operation naming the GPU (e.g. "GPU 0 mig mode").
pub(super) fn map_err(call: &'static str, what: String, err: NvmlError) -> GpuError {
    match err {
        NvmlError::DriverNotLoaded => GpuError::DriverNotLoaded {
            reason: format!("{what}: {err}"),
        },
        NvmlError::NotSupported => GpuError::NotSupported { what },
        NvmlError::NoPermission => GpuError::NoPermission { what },
        NvmlError::InUse => GpuError::InUse { what },
        NvmlError::NotFound => GpuError::NotFound { what },
        NvmlError::GpuLost | NvmlError::Timeout => GpuError::GpuLost { what },
        NvmlError::UnexpectedVariant(INSUFFICIENT_RESOURCES) => {
            GpuError::InsufficientResources { what }
        }
        NvmlError::UnexpectedVariant(code) => GpuError::Nvml {
            call,
            message: format!("{what}: {}", code_name(code)),
        },
        other => GpuError::Nvml {
            call,
            message: format!("{what}: {other}"),
        },
    }
}

/// NVML's name for a return code nvml-wrapper does not know.
fn code_name(code: u32) -> String {
    let name = match code {
        ARGUMENT_VERSION_MISMATCH => "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
        NOT_READY => "NVML_ERROR_NOT_READY",
        INVALID_STATE => "NVML_ERROR_INVALID_STATE",
        _ => "unknown NVML return code",
    };
    format!("{name} ({code})")
}

/// The architecture string go-nvlib's `GetArchitectureAsString` gives, which
/// NVIDIA's DRA driver publishes as the `architecture` attribute: nvml-wrapper
/// prints Ada Lovelace as "Ada".
pub(super) fn architecture_name(architecture: &DeviceArchitecture) -> String {
    match architecture {
        DeviceArchitecture::Ada => "Ada Lovelace".to_owned(),
        other => other.to_string(),
    }
}

/// A fabric-info answer as the boundary carries it; `Ok(None)` where NVML
/// reports no fabric (NOT_SUPPORTED, or a driver without the call).
pub(super) fn fabric(
    answer: Result<sys::nvmlGpuFabricInfo_v3_t, NvmlError>,
    what: impl FnOnce() -> String,
) -> Result<Option<GpuFabric>, GpuError> {
    let info = match answer {
        Ok(info) => info,
        Err(NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_)) => return Ok(None),
        Err(err) => return Err(map_err("nvmlDeviceGetGpuFabricInfoV", what(), err)),
    };
    let state = match u32::from(info.state) {
        sys::NVML_GPU_FABRIC_STATE_NOT_STARTED => FabricState::NotStarted,
        sys::NVML_GPU_FABRIC_STATE_IN_PROGRESS => FabricState::InProgress,
        sys::NVML_GPU_FABRIC_STATE_COMPLETED => FabricState::Completed,
        _ => FabricState::NotSupported,
    };
    let error = (state == FabricState::Completed && info.status != 0)
        .then(|| NvmlError::from(info.status).to_string());
    Ok(Some(GpuFabric {
        cluster_uuid: uuid::Uuid::from_bytes(info.clusterUuid)
            .hyphenated()
            .to_string(),
        clique_id: info.cliqueId,
        state,
        error,
    }))
}

/// The brand string go-nvlib's `GetBrandAsString` gives, which NVIDIA's DRA
/// driver publishes as the `brand` attribute.
pub(super) fn brand_name(brand: &Brand) -> &'static str {
    match brand {
        Brand::Unknown => "Unknown",
        Brand::Quadro => "Quadro",
        Brand::Tesla => "Tesla",
        Brand::NVS => "NVS",
        Brand::GRID => "Grid",
        Brand::GeForce => "GeForce",
        Brand::Titan => "Titan",
        Brand::VApps => "NvidiaVApps",
        Brand::VPC => "NvidiaVPC",
        Brand::VCS => "NvidiaVCS",
        Brand::VWS => "NvidiaVWS",
        Brand::CloudGaming | Brand::VGaming => "NvidiaCloudGaming",
        Brand::QuadroRTX => "QuadroRTX",
        Brand::NvidiaRTX => "NvidiaRTX",
        Brand::Nvidia => "Nvidia",
        Brand::GeForceRTX => "GeForceRTX",
        Brand::TitanRTX => "TitanRTX",
    }
}

/// NVML's "00000000:3B:00.0" as the canonical "0000:3b:00.0" (domain cut to
/// 4 hex digits when it fits, everything lowercase). `None` if malformed.
pub(super) fn canonical_bus_id(nvml_bus_id: &str) -> Option<String> {
    let (domain, rest) = nvml_bus_id.trim_end_matches('\0').split_once(':')?;
    let domain = u32::from_str_radix(domain, 16).ok()?;
    let (bus, function) = rest.split_once(':')?;
    let (device, function) = function.split_once('.')?;
    let bus = u8::from_str_radix(bus, 16).ok()?;
    let device = u8::from_str_radix(device, 16).ok()?;
    let function = u8::from_str_radix(function, 16).ok()?;
    Some(format!("{domain:04x}:{bus:02x}:{device:02x}.{function:x}"))
}

/// NVML's CUDA driver version integer (12040) as (major, minor) = (12, 4).
/// `None` for a version that is not positive.
pub(super) fn cuda_version(version: i32) -> Option<(u32, u32)> {
    if version <= 0 {
        return None;
    }
    let major = nvml_wrapper::cuda_driver_version_major(version);
    let minor = nvml_wrapper::cuda_driver_version_minor(version);
    Some((u32::try_from(major).ok()?, u32::try_from(minor).ok()?))
}

/// The result of `nvmlDeviceGetMigMode`: NOT_SUPPORTED means "not MIG-capable".
pub(super) fn mig_support(
    result: Result<NvmlMigMode, NvmlError>,
    what: impl FnOnce() -> String,
) -> Result<MigSupport, GpuError> {
    match result {
        Ok(mode) => Ok(MigSupport::Supported {
            current: mig_mode(mode.current),
            pending: mig_mode(mode.pending),
        }),
        Err(NvmlError::NotSupported) => Ok(MigSupport::NotSupported),
        Err(err) => Err(map_err("nvmlDeviceGetMigMode", what(), err)),
    }
}

fn mig_mode(raw: u32) -> MigMode {
    if raw == MIG_ENABLE {
        MigMode::Enabled
    } else {
        MigMode::Disabled
    }
}

/// NVML's compute mode as the boundary's; `None` for the removed
/// EXCLUSIVE_THREAD mode, which no current driver reports.
pub(super) fn compute_mode(mode: NvmlComputeMode) -> Option<ComputeMode> {
    match mode {
        NvmlComputeMode::Default => Some(ComputeMode::Default),
        NvmlComputeMode::ExclusiveProcess => Some(ComputeMode::ExclusiveProcess),
        NvmlComputeMode::Prohibited => Some(ComputeMode::Prohibited),
        NvmlComputeMode::ExclusiveThread => None,
    }
}

/// The boundary's compute mode as NVML's.
pub(super) fn nvml_compute_mode(mode: ComputeMode) -> NvmlComputeMode {
    match mode {
        ComputeMode::Default => NvmlComputeMode::Default,
        ComputeMode::ExclusiveProcess => NvmlComputeMode::ExclusiveProcess,
        ComputeMode::Prohibited => NvmlComputeMode::Prohibited,
    }
}
