//! gpuslice-imex: what a node needs of NVIDIA's ComputeDomains to serve
//! IMEX channels, without Kubernetes' types (gpusliced links it; the
//! ComputeDomain object and its template are gpuslice-compute-domain's,
//! which re-exports these modules):
//!
//! - [`channels`]: the channels' DRA device names and device nodes, and
//!   their major number from /proc/devices;
//! - [`config`]: the opaque configs of the `compute-domain.nvidia.com`
//!   driver, `ComputeDomainChannelConfig` and `ComputeDomainDaemonConfig`;
//! - [`imex`]: the IMEX daemon's config, its command lines, and how its
//!   readiness is read;
//! - [`names`]: the names members know each other by (the nodes config,
//!   written once) and the private hosts file that maps them;
//! - [`network`]: the rack network a member's address must lie in;
//! - [`table`]: `nvidia-imex-ctl -N`'s connectivity table, read.
//!
//! Pure: values in, values or typed errors out. The names are NVIDIA's
//! (third_party/dra-driver-nvidia-gpu, whose sources gpuslice-compute-domain's
//! tests read them from).

pub mod channels;
pub mod config;
pub mod imex;
pub mod names;
pub mod network;
pub mod table;

/// The API group and version of ComputeDomains and their configs.
pub const API_VERSION: &str = "resource.nvidia.com/v1beta1";

/// The DRA driver of IMEX channels (and, under NVIDIA's driver, of IMEX
/// daemons).
pub const DRIVER_NAME: &str = "compute-domain.nvidia.com";
