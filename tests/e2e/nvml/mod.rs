//! gpusliced's NVML backend end to end, and NVIDIA's nvidia-smi, over
//! gpuslice's own NVML (the `gpuslice-nvml-sim` library, issue 38): one
//! simulated node read and changed through NVML's C ABI by both.
//!
//! * `claims`: every kind of claim prepared and unprepared by gpusliced
//!   with `[backend] kind = "nvml"` (whole, MIG made at prepare, MPS and
//!   time-slicing with the stand-ins), a GB200 node on a driver that
//!   predates fabric info v3;
//! * `crash`: gpusliced killed (SIGKILL) while NVML makes a GPU instance,
//!   and what the next start makes of it;
//! * `fidelity`: NVIDIA's nvidia-smi 550 over the library, on every
//!   simulated model: `-L`, `-q` and `mig -lgip` against NVIDIA's own
//!   printouts where the tables cite one (`printouts`);
//! * `cross`: instances nvidia-smi makes (`mig -cgi … -C`) seen by
//!   gpusliced, and the reverse.
//!
//! The library is built once per test process (`library`); nvidia-smi is
//! NVIDIA's, unpacked privately from Debian's non-free component
//! (`smi`): its tests skip with the reason where it is missing, and fail
//! under `GPUSLICE_REQUIRE_TOOLS=1`.

mod claims;
mod crash;
mod cross;
mod fidelity;
pub mod library;
mod node;
mod printouts;
mod smi;
