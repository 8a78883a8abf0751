//! gpuslice-dra-plugin: the kubelet's DRA plugin for gpuslice, a thin,
//! stateless shim in front of gpusliced.
//!
//! Reading order (one module per concern):
//! 1. [`config`], [`names`] and [`slices`], re-exported from the
//!    gpuslice-publish crate (which `gpuslicectl match` shares): the TOML
//!    file and what the environment fills in; Kubernetes name rules; from
//!    gpusliced's inventory to ResourceSlice specs (pure).
//! 2. [`claim`]: from an allocated ResourceClaim to gpusliced's Prepare (pure).
//! 3. [`sync_plan`]: which slice writes make the published pool right (pure);
//!    [`advertise`]: which form of MIG slices the API server takes (the
//!    pure rule); [`probe`]: every dry run the plugin sends (the MIG form,
//!    the claim-status access) and the one reading of an API answer
//!    (verdict, or nothing decided).
//! 4. [`proto`]: the kubelet's gRPC APIs, generated.
//! 5. [`gpusliced`]: the client of gpusliced's socket.
//! 6. [`dra`]: the DRA service core and its v1 and v1beta1 adapters.
//! 7. [`health`]: the kubelet's DRA health API, from gpusliced's device health.
//! 8. [`registration`]: the plugin-registration service; [`driver`]: one
//!    driver served (its DRA and registration sockets, the kubelet's verdict).
//! 9. [`publisher`]: the ResourceSlice loop, woken by [`gpusliced_watch`]
//!    (gpusliced's WatchInventory, across its restarts, with [`backoff`])
//!    and [`slice_watch`] (the API server's watch of our slices).
//! 10. [`sockets`] and [`run`]: the sockets, start-up and shutdown;
//!     [`compute_domains`]: the second driver, `compute-domain.nvidia.com`
//!     (IMEX channels), served where gpusliced reports an NVLink clique.
//! 11. [`claim_status`]: usage in each prepared claim's status (its pure
//!     entries and write plan, the apply and the access state).
//! 12. [`compute_domains::status`]: ComputeDomains kept by the plugins (the
//!     template, the node's entry of the status, the peers told to
//!     gpusliced).

pub mod advertise;
pub mod backoff;
pub mod claim;
pub mod claim_status;
pub mod compute_domains;
pub mod dra;
pub mod driver;
pub mod gpusliced;
pub mod gpusliced_watch;
pub mod health;
pub mod probe;
pub mod proto;
pub mod publisher;
pub mod registration;
pub mod run;
pub mod slice_watch;
pub mod sockets;
pub mod sync_plan;

pub use gpuslice_plugin_config as config;
pub use gpuslice_publish::{names, slices};
