//! The test kit (feature `testkit`, never in a release build): one builder
//! of a simulated node, used by the daemon's tests, the DRA plugin's
//! contract test, the benches and the fuzz targets, so each builds its
//! engine the way gpusliced does instead of by hand.
//!
//! [`SimNodeBuilder`] makes a node in a temp folder: simulated GPUs whose
//! hardware state persists in the folder (so a restart or a reboot behaves
//! as on a machine), a driver root ([`root`]), the records and CDI folders,
//! and, when asked, the fakes of the external programs
//! ([`crate::claims::mps_daemon::FakeMps`], [`crate::claims::compute_policy::FakeNvidiaSmi`]); its
//! engine starts through [`crate::claims::Engine::start_up`], production's
//! order. [`requests`] builds prepare requests.
//!
//! Everything here may panic: it is for tests and benches, where a node
//! that cannot be built is a failed test.

mod node;
pub mod requests;
pub mod root;

pub use node::{SimNode, SimNodeBuilder};

use crate::config::MigConfig;
use crate::gpu::sim::{SimBackend, SimModel};
use crate::inventory::Inventory;

/// The inventory of `gpus` simulated H100s, every MIG instance foreign: a
/// fixture for code that reads an inventory without an engine.
pub fn inventory(gpus: usize) -> Inventory {
    let backend = SimBackend::new(vec![SimModel::H100_80GB; gpus], "test");
    Inventory::from_backend(&backend, &MigConfig::default(), &|_, _| {
        crate::mig::Ownership::Foreign
    })
    .expect("the inventory of simulated GPUs")
}

#[cfg(test)]
mod tests;
