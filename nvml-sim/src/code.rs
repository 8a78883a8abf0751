//! NVML's return codes: the constants of nvml-wrapper-sys under short names,
//! the text `nvmlErrorString` gives for each (the 550 driver's own strings),
//! and the one mapping from the simulator's [`GpuError`] to a code. Pure.

use gpuslice::gpu::GpuError;
use nvml_wrapper_sys::bindings as sys;

/// An NVML return code (`nvmlReturn_t`).
pub type Code = sys::nvmlReturn_t;

/// What a call answers: its value, or the code of its failure.
pub type Answer<T> = Result<T, Code>;

pub const SUCCESS: Code = sys::nvmlReturn_enum_NVML_SUCCESS;
pub const UNINITIALIZED: Code = sys::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
pub const INVALID_ARGUMENT: Code = sys::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
pub const NOT_SUPPORTED: Code = sys::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
pub const NO_PERMISSION: Code = sys::nvmlReturn_enum_NVML_ERROR_NO_PERMISSION;
pub const NOT_FOUND: Code = sys::nvmlReturn_enum_NVML_ERROR_NOT_FOUND;
pub const INSUFFICIENT_SIZE: Code = sys::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
pub const DRIVER_NOT_LOADED: Code = sys::nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED;
pub const TIMEOUT: Code = sys::nvmlReturn_enum_NVML_ERROR_TIMEOUT;
pub const GPU_IS_LOST: Code = sys::nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST;
pub const IN_USE: Code = sys::nvmlReturn_enum_NVML_ERROR_IN_USE;
pub const INSUFFICIENT_RESOURCES: Code = sys::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES;
pub const ARGUMENT_VERSION_MISMATCH: Code =
    sys::nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
pub const UNKNOWN: Code = sys::nvmlReturn_enum_NVML_ERROR_UNKNOWN;

/// The code NVML gives for what the simulator answered. The simulator's
/// own failures (its state file, an injected fault without a code) are
/// NVML's UNKNOWN; its INVALID_ARGUMENT cases are caught before it is asked.
pub fn of_error(err: &GpuError) -> Code {
    match err {
        GpuError::LibraryLoad { .. } | GpuError::DriverNotLoaded { .. } => DRIVER_NOT_LOADED,
        GpuError::NoSuchGpu { .. } => INVALID_ARGUMENT,
        GpuError::NotSupported { .. } => NOT_SUPPORTED,
        GpuError::NoPermission { .. } => NO_PERMISSION,
        GpuError::InUse { .. } => IN_USE,
        GpuError::InsufficientResources { .. } => INSUFFICIENT_RESOURCES,
        GpuError::NotFound { .. } => NOT_FOUND,
        GpuError::GpuLost { .. } => GPU_IS_LOST,
        GpuError::Nvml { .. } | GpuError::SimState { .. } | GpuError::Injected { .. } => UNKNOWN,
    }
}

/// `nvmlErrorString`: the text libnvidia-ml 550.163.01 has for `code`, NUL
/// terminated (read from the library's strings, in the order of its table).
pub fn text(code: Code) -> &'static std::ffi::CStr {
    match code {
        0 => c"Success",
        1 => c"Uninitialized",
        2 => c"Invalid Argument",
        3 => c"Not Supported",
        4 => c"Insufficient Permissions",
        5 => c"Already Initialized",
        6 => c"Not Found",
        7 => c"Insufficient Size",
        8 => c"Insufficient External Power",
        9 => c"Driver Not Loaded",
        10 => c"Timeout",
        11 => c"Interrupt Request Issue",
        12 => c"NVML Shared Library Not Found",
        13 => c"Function Not Found",
        14 => c"Corrupted infoROM",
        15 => c"GPU is lost",
        16 => c"GPU requires reset",
        17 => c"GPU access blocked by the operating system",
        18 => c"Driver/library version mismatch",
        19 => c"In use by another client",
        20 => c"Insufficient Memory",
        21 => c"No data",
        22 => c"vGPU ECC not supported",
        23 => c"Insufficient Resources",
        24 => c"Invalid Frequency",
        25 => c"Argument version mismatch",
        26 => c"Requested functionality has been deprecated",
        27 => c"System is not in ready state",
        28 => c"No supported GPUs were found",
        29 => c"Resource not in correct state to perform requested operation",
        _ => c"Unknown Error",
    }
}

/// `NVML_STRUCT_VERSION(name, version)`: the struct's size with the version
/// in the top byte, which a caller writes into a versioned struct's first
/// field.
pub fn struct_version<T>(version: u32) -> u32 {
    let size = u32::try_from(std::mem::size_of::<T>()).unwrap_or(0);
    size | (version << 24)
}

#[cfg(test)]
mod tests {
    use super::{struct_version, text};
    use nvml_wrapper_sys::bindings as sys;

    #[test]
    fn versions_are_nvml_h_s() {
        assert_eq!(
            struct_version::<sys::nvmlGpuInstanceProfileInfo_v2_t>(2),
            0x0200_0098
        );
        assert_eq!(
            struct_version::<sys::nvmlComputeInstanceProfileInfo_v2_t>(2),
            0x0200_0088
        );
        assert_eq!(
            struct_version::<sys::nvmlGpuFabricInfo_v2_t>(2),
            0x0200_0024
        );
        assert_eq!(
            struct_version::<sys::nvmlGpuFabricInfo_v3_t>(3),
            0x0300_0028
        );
        assert_eq!(struct_version::<sys::nvmlMemory_v2_t>(2), 0x0200_0028);
        assert_eq!(struct_version::<sys::nvmlPciInfoExt_v1_t>(1), 0x0100_0040);
    }

    #[test]
    fn texts_are_the_drivers() {
        assert_eq!(text(19).to_str(), Ok("In use by another client"));
        assert_eq!(text(23).to_str(), Ok("Insufficient Resources"));
        assert_eq!(text(1000).to_str(), Ok("Unknown Error"));
    }
}
