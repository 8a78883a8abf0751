//! End-to-end tests: the real gpusliced and gpuslicectl binaries on the
//! simulated backend, in temp folders, driven over the unix socket. See
//! tests/README.md for the tiers.

mod cdi_schema;
mod claims;
mod go_cdi;
mod harness;
mod lifecycle;
mod metrics;
mod mig;
mod nspawn;
mod podman;
mod promcheck;
mod tools;
