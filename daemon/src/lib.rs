//! gpusliced: the node-level GPU sharing daemon, as a library the binaries wire up.
//!
//! Reading order, one module per concern, from the bottom up. The numbers are
//! floors: a module imports only from modules on lower floors, never from its
//! own floor or above (the repo check `repo-checks/tests/layers.rs` holds the
//! same table and fails on an import that climbs).
//!
//! 0. [`crash`]: named crash points after every durable step, and test hooks
//!    (test builds only).
//! 1. [`gpu`]: the hardware boundary (`GpuBackend`, `nvml` and `sim`);
//!    [`supervise`]: the host's processes and systemd's units, as the
//!    daemons gpusliced keeps (MPS, IMEX) are run and found again.
//! 2. [`mig`]: MIG geometry on top of it (pure: layouts, placements, geometry
//!    diffs); [`config`]: the TOML file, validated, every key optional;
//!    [`features`]: what each GPU has (MIG, MPS and its limits, time-slice
//!    settings, an NVLink clique) and the refusal that names what it lacks.
//! 3. [`inventory`]: devices with attributes and capacities, as the DRA shim
//!    publishes them; [`driver`]: what a container needs from the host driver
//!    (device nodes, libraries, binaries), found once under the driver root;
//!    [`health`]: which GPUs and slices are unhealthy (XIDs, ECC, lost GPUs).
//! 4. [`cdi_build`]: the per-claim CDI spec and the claim marker in it (pure).
//! 5. [`opaque`]: the opaque configs of a claim (NVIDIA's sharing configs and
//!    ours: parsing and precedence; pure).
//! 6. [`state`]: durable claim records, one file per claim.
//! 7. [`claims`]: the claim engine (prepare, unprepare, reconcile) and its
//!    kinds of access, each owning its machinery (MPS's control daemons,
//!    time-slicing's compute policy, MIG's layouts);
//!    [`compute_domains`]: ComputeDomains' IMEX channels and the IMEX daemon
//!    of each domain, prepared beside the claim engine (a channel is not a
//!    GPU).
//! 8. [`advice`]: right-sizing advice from each claim's usage history (the
//!    history, its file, the rule); [`node`]: the claim engine, its MIG
//!    offering and the channels, as one value the API holds.
//! 9. [`activity`]: per-claim GPU use (processes attributed to claims, idle
//!    claims, over-shares, unclaimed processes), sampled through the claim
//!    engine's `NodeReads` and published to its subscribers.
//! 10. [`limits`]: over-shares and unclaimed processes ended (`[limits]`), a
//!     subscriber of the samples wired by `run`, publishing what it did.
//! 11. [`metrics`]: Prometheus metrics, on a loopback listener or a textfile.
//! 12. [`api`]: the gRPC service on a unix socket.
//! 13. [`systemd`] and [`logging`]: sd_notify and journald.
//! 14. [`run`]: start-up, the task set, shutdown; [`preflight`]: what
//!     `gpusliced --check-config` judges beyond parsing.
//! 15. [`testkit`](crate#floor-15): a simulated node for tests and benches,
//!     and the fakes of the external programs it drives (feature `testkit`,
//!     never in a release build).

// Floor 0
pub mod crash;

// Floor 1
pub mod gpu;
pub mod supervise;

// Floor 2
pub mod config;
pub mod features;
pub mod mig;

// Floor 3
pub mod driver;
pub mod health;
pub mod inventory;

// Floor 4
pub mod cdi_build;

// Floor 5
pub mod opaque;

// Floor 6
pub mod state;

// Floor 7
pub mod claims;
pub mod compute_domains;

// Floor 8
pub mod advice;
pub mod node;

// Floor 9
pub mod activity;

// Floor 10
pub mod limits;

// Floor 11
pub mod metrics;

// Floor 12
pub mod api;

// Floor 13
pub mod logging;
pub mod systemd;

// Floor 14
pub mod preflight;
pub mod run;

// Floor 15
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
