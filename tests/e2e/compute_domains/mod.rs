//! The channel engine (gpuslice::compute_domains) against the stand-ins for
//! `nvidia-imex` and `nvidia-imex-ctl` (tests/tools, Python): real
//! processes, started as gpusliced starts them (its own binary as the
//! launcher: a mount namespace of their own with the domain's mapping as
//! /etc/hosts), real TCP between nodes' daemons on their own loopback
//! addresses, real signals. Each test binds addresses of its own
//! (127.0.31.x) so they run side by side.
//!
//! - `node.rs`: one simulated GB200 node's engine and folders;
//! - `engine.rs`: prepare, refusals, rollback, start-up;
//! - `members.rs`: members joining and leaving a running domain without a
//!   restart, imports kept.

mod engine;
mod members;
mod node;
