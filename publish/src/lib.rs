//! gpuslice-publish: what gpuslice-dra-plugin publishes, as pure code that
//! `gpuslicectl match` shares, so the devices it judges are exactly the ones
//! the plugin publishes. No API-server client (no kube), no I/O. (The
//! plugin's config file is gpuslice-plugin-config's.)
//!
//! Reading order:
//! 1. [`names`]: Kubernetes name rules.
//! 2. [`slices`]: from gpusliced's inventory to ResourceSlice specs.

pub mod names;
pub mod slices;
