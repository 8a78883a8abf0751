//! Errors from the hardware boundary, the same for both backends.

/// A hardware call that failed. Variants mirror the NVML return codes the
/// daemon acts on, so the simulator can answer exactly as NVML would.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GpuError {
    /// The NVML shared library could not be loaded (no NVIDIA driver installed).
    #[error(
        "cannot load the NVML library {library}: {reason}; install the NVIDIA driver, \
         point backend.nvml.library at libnvidia-ml.so.1, or set backend.kind = \"sim\" to \
         run on simulated GPUs"
    )]
    LibraryLoad {
        /// The library name or path that was tried.
        library: String,
        /// The loader's message.
        reason: String,
    },
    /// The library loaded but the kernel driver is not running.
    #[error("NVIDIA kernel driver is not loaded: {reason}")]
    DriverNotLoaded {
        /// NVML's message.
        reason: String,
    },
    /// No GPU at this index.
    #[error("no GPU at index {index}")]
    NoSuchGpu {
        /// The index asked for.
        index: u32,
    },
    /// NVML answered NOT_SUPPORTED.
    #[error("{what}: not supported by this GPU or driver")]
    NotSupported {
        /// The operation, naming the GPU.
        what: String,
    },
    /// NVML answered NO_PERMISSION.
    #[error("{what}: permission denied (needs root or the MIG config capability)")]
    NoPermission {
        /// The operation, naming the GPU.
        what: String,
    },
    /// NVML answered IN_USE.
    #[error("{what}: in use by running processes")]
    InUse {
        /// The operation, naming the GPU or instance.
        what: String,
    },
    /// NVML answered INSUFFICIENT_RESOURCES.
    #[error("{what}: insufficient resources")]
    InsufficientResources {
        /// The operation, naming the GPU.
        what: String,
    },
    /// NVML answered NOT_FOUND.
    #[error("{what}: not found")]
    NotFound {
        /// What was looked up.
        what: String,
    },
    /// The GPU fell off the bus or stopped answering (GPU_IS_LOST, TIMEOUT, ...).
    #[error("{what}: GPU is lost or not responding")]
    GpuLost {
        /// The operation, naming the GPU.
        what: String,
    },
    /// Any other NVML failure, with the call and NVML's own message.
    #[error("NVML {call} failed: {message}")]
    Nvml {
        /// The NVML function.
        call: &'static str,
        /// NVML's error text.
        message: String,
    },
    /// The simulator's persisted hardware state could not be read or written.
    #[error("simulated GPU state {path}: {reason}")]
    SimState {
        /// The state file.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A fault injected into the simulator on purpose.
    #[error("{call}: injected fault")]
    Injected {
        /// The backend call that was made to fail.
        call: &'static str,
    },
}
