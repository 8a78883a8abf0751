//! NVIDIA's ComputeDomain API (`resource.nvidia.com/v1beta1`), so that the
//! manifests written for NVIDIA's DRA driver run unchanged on gpuslice:
//!
//! - [`api`]: the `ComputeDomain` object (spec and status) and the rules its
//!   CRD applies;
//! - [`channels`]: a node's IMEX channels as DRA devices and device nodes;
//! - [`config`] (gpuslice-imex's): the opaque configs of the `compute-domain.nvidia.com`
//!   driver, `ComputeDomainChannelConfig` and `ComputeDomainDaemonConfig`;
//! - [`template`]: the ResourceClaimTemplate made from a ComputeDomain, the
//!   one its pods name (owned by the domain when gpuslice's plugins make
//!   it), and when a node makes it;
//! - [`membership`]: a domain's `status.nodes` read (capped, bad entries
//!   skipped), an index per clique, the members each IMEX daemon is told,
//!   when the domain is Ready;
//! - [`coordinate`]: one node's turn at a domain (its membership Lease, its
//!   own entry and when it is Ready, its daemon's members, the entries of
//!   gone nodes removed), how the plugins keep it without a controller;
//! - [`imex`] (gpuslice-imex's): the IMEX daemon's config and nodes config, its command
//!   lines, and how its readiness is read.
//!
//! Pure: values in, values or typed errors out. The names below are NVIDIA's
//! (third_party/dra-driver-nvidia-gpu, whose sources the tests read them
//! from).

pub mod api;
pub mod channels;
pub mod coordinate;
pub mod membership;
pub mod template;

pub use gpuslice_imex::{API_VERSION, DRIVER_NAME, config, imex, names, network};

/// The DeviceClass of a ComputeDomain's default channel (channel 0).
pub const DEFAULT_CHANNEL_CLASS: &str = "compute-domain-default-channel.nvidia.com";

/// The label naming the ComputeDomain (its uid) on what is made for it; also
/// the finalizer that keeps those objects until the domain is cleaned up.
pub const COMPUTE_DOMAIN_LABEL: &str = "resource.nvidia.com/computeDomain";

/// The label saying whom a ResourceClaimTemplate is for.
pub const TARGET_LABEL: &str = "resource.nvidia.com/computeDomainTarget";

/// [`TARGET_LABEL`]'s value on the workload pods' template.
pub const TARGET_WORKLOAD: &str = "Workload";
