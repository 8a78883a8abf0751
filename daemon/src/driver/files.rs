//! The lists of driver files a CUDA container needs, as
//! nvidia-container-toolkit knows them (compute and utility capabilities).

/// Control device nodes: (name under /dev, required).
pub const COMMON_NODES: &[(&str, bool)] = &[
    ("nvidiactl", true),
    ("nvidia-uvm", true),
    ("nvidia-uvm-tools", false),
    ("nvidia-modeset", false),
];

/// Library folders searched under the driver root, in order.
pub const LIB_DIRS: &[&str] = &[
    "usr/lib/x86_64-linux-gnu",
    "usr/lib/aarch64-linux-gnu",
    "usr/lib64",
    "lib/x86_64-linux-gnu",
    "lib/aarch64-linux-gnu",
    "lib64",
    "usr/lib",
    "lib",
];

/// User-space driver libraries (by stem; the versioned files are mounted).
pub const LIBRARIES: &[&str] = &[
    "libcuda.so",
    "libcudadebugger.so",
    "libnvidia-ml.so",
    "libnvidia-cfg.so",
    "libnvidia-opencl.so",
    "libnvidia-gpucomp.so",
    "libnvidia-ptxjitcompiler.so",
    "libnvidia-nvvm.so",
    "libnvidia-allocator.so",
    "libnvidia-pkcs11.so",
    "libnvidia-pkcs11-openssl3.so",
];

/// Libraries without which no CUDA program runs.
pub const REQUIRED_LIBRARIES: &[&str] = &["libcuda.so", "libnvidia-ml.so"];

/// Driver binaries mounted into containers.
pub const BINARIES: &[&str] = &[
    "nvidia-smi",
    "nvidia-debugdump",
    "nvidia-persistenced",
    "nvidia-cuda-mps-control",
    "nvidia-cuda-mps-server",
];

/// IPC sockets of host daemons, mounted when present.
pub const SOCKETS: &[&str] = &[
    "/run/nvidia-persistenced/socket",
    "/run/nvidia-fabricmanager/socket",
];
