//! gpuslice-publish: what gpuslice-dra-plugin publishes, as pure code that
//! `gpuslicectl match` shares, so the devices it judges are exactly the ones
//! the plugin publishes. No API-server client (no kube), no I/O beyond
//! reading the config file it is given.
//!
//! Reading order:
//! 1. [`config`]: the plugin's TOML file, and what the environment fills in.
//! 2. [`names`]: Kubernetes name rules.
//! 3. [`slices`]: from gpusliced's inventory to ResourceSlice specs.

pub mod config;
pub mod names;
pub mod slices;
