//! gpuslice-nvml-sim: an NVML of gpuslice's own. Built as a shared library
//! with NVML's C ABI (`libnvidia-ml.so.1`, types and signatures from
//! nvml-wrapper-sys), it answers NVML's calls from gpuslice's simulator:
//! the same models, tables and hardware state gpusliced's `sim` backend
//! uses, so there is one source of truth. Two kinds of client load it:
//!
//! * gpusliced with `[backend] kind = "nvml"` and `[backend.nvml] library`
//!   naming it: the NVML backend (`gpu/nvml/`, its `raw.rs` FFI included)
//!   runs end to end, on every simulated model, without a GPU;
//! * NVIDIA's own `nvidia-smi` (found through `LD_LIBRARY_PATH`): the real
//!   client reads the simulator, which checks both against NVIDIA's
//!   printouts.
//!
//! Both load the same config and so share one simulated node, whose state
//! file the simulator locks and reads again on every call: an instance
//! nvidia-smi makes is what gpusliced sees next.
//!
//! Reading order: [`code`] (return codes and their text), [`handle`] (what
//! a handle names), [`node`] (the node, its config, init), [`device`]
//! (device getters), [`mig`] (GPU and compute instances), [`process`]
//! (process lists), [`events`] (event sets over the simulator's health
//! events), then `ffi`, the exported C functions, the only `unsafe` code.
//! Not for production: it is a test tool, never packaged.

pub mod code;
pub mod device;
pub mod events;
#[expect(
    unsafe_code,
    reason = "NVML's C ABI: the exported functions write through the caller's pointers; confined to ffi/"
)]
mod ffi;
pub mod handle;
pub mod mig;
pub mod node;
pub mod process;
