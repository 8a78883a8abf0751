//! gpuslice-dra-plugin: the kubelet's DRA plugin for gpuslice, a thin,
//! stateless shim in front of gpusliced.
//!
//! Reading order (one module per concern):
//! 1. [`config`]: the TOML file, and what the environment fills in.
//! 2. [`names`]: Kubernetes name rules (pure).
//! 3. [`claim`]: from an allocated ResourceClaim to gpusliced's Prepare (pure).
//! 4. [`slices`]: from gpusliced's inventory to ResourceSlice specs (pure).
//! 5. [`sync_plan`]: which slice writes make the published pool right (pure);
//!    [`advertise`]: which form of MIG slices the API server takes (a probe
//!    and its pure rule).
//! 6. [`proto`]: the kubelet's gRPC APIs, generated.
//! 7. [`gpusliced`]: the client of gpusliced's socket.
//! 8. [`dra`]: the DRA service core and its v1 and v1beta1 adapters.
//! 9. [`health`]: the kubelet's DRA health API, from gpusliced's device health.
//! 10. [`registration`]: the plugin-registration service.
//! 11. [`publisher`]: the ResourceSlice loop, woken by [`inventory_watch`]
//!     (gpusliced's WatchInventory, across its restarts, with [`backoff`])
//!     and [`slice_watch`] (the API server's watch of our slices).
//! 12. [`sockets`] and [`run`]: the sockets, start-up and shutdown.

pub mod advertise;
pub mod backoff;
pub mod claim;
pub mod config;
pub mod dra;
pub mod gpusliced;
pub mod health;
pub mod inventory_watch;
pub mod names;
pub mod proto;
pub mod publisher;
pub mod registration;
pub mod run;
pub mod slice_watch;
pub mod slices;
pub mod sockets;
pub mod sync_plan;
