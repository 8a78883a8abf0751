//! gpusliced: the node-level GPU sharing daemon, as a library the binaries wire up.
//!
//! Reading order (one room per concern):
//! 1. [`config`]: the TOML file, validated, every key optional.
//! 2. [`gpu`]: the hardware boundary (`GpuBackend`, `nvml` and `sim`); [`mig`] plans
//!    MIG geometry on top of it (pure: placement choice, layouts, geometry diffs).
//! 3. [`inventory`]: devices with attributes and capacities, as the DRA shim publishes them.
//! 4. [`driver`]: what a container needs from the host driver (device nodes,
//!    libraries, binaries), found once under the driver root.
//! 5. [`cdi_build`]: the per-claim CDI spec, built from the pieces above (pure).
//! 6. [`state`]: durable claim records, one file per claim.
//! 7. [`health`]: which GPUs and slices are unhealthy (XIDs, ECC, lost GPUs).
//! 8. [`sharing`] (opaque sharing configs, pure), [`mps`] (MPS control
//!    daemons) and [`timeslice`] (compute time-slice policy).
//! 9. [`claims`]: the claim engine (prepare, unprepare, reconcile);
//!    [`advertise`]: which form of MIG slices it offers (`[mig] advertise`).
//! 10. [`api`]: the gRPC service on a unix socket.
//! 11. [`activity`]: per-claim GPU use (processes attributed to claims, idle
//!     claims, over-shares, unclaimed processes), sampled through the backend.
//! 12. [`metrics`]: Prometheus metrics, on a loopback listener or a textfile.
//! 13. [`systemd`] and [`logging`]: sd_notify and journald.
//! 14. [`run`]: start-up, the task set, shutdown; [`preflight`]: what
//!     `gpusliced --check-config` judges beyond parsing.
//! 15. [`crash`]: named crash points after every durable step (test builds only).

pub mod activity;
pub mod advertise;
pub mod api;
pub mod cdi_build;
pub mod claims;
pub mod config;
pub mod crash;
pub mod driver;
pub mod gpu;
pub mod health;
pub mod inventory;
pub mod logging;
pub mod metrics;
pub mod mig;
pub mod mps;
pub mod preflight;
pub mod run;
pub mod sharing;
pub mod state;
pub mod systemd;
pub mod timeslice;
