//! End-to-end tests: the real gpusliced and gpuslicectl binaries on the
//! simulated backend, in temp folders, driven over the unix socket. See
//! tests/README.md for the tiers.

mod activity;
mod activity_sampler;
mod advice;
mod binaries;
mod cdi_schema;
mod claims;
mod cli;
mod common;
mod compute_domains;
mod containerd;
mod crash_node;
mod crash_points;
mod crash_world;
mod fleet;
mod go_cdi;
mod harness;
mod health;
mod imex_standin;
mod inventory_watch;
mod lifecycle;
mod limits;
mod load;
mod r#match;
mod metrics;
mod mig;
mod monitoring;
mod mps_real;
mod notify;
mod nspawn;
mod nvml;
mod owner;
mod podman;
mod promcheck;
mod security;
mod sharing;
mod sharing_restart;
mod stand_ins;
mod tools;
mod unreadable;
mod upgrade_fixtures;
mod walkthrough;
