//! Small helpers many e2e files share, each given one home here: a test's
//! scratch files ([`files`]), the read-only questions a test asks gpusliced
//! over its API ([`queries`]), the devices of its answer ([`devices`]), the
//! claim verbs it expects to succeed ([`claims`]) and gpuslicectl run
//! against a socket ([`ctl`]). Starting and stopping gpusliced stays in
//! `harness.rs`, which the benches share.

pub mod claims;
pub mod ctl;
pub mod devices;
pub mod files;
pub mod queries;
