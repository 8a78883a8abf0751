//! MIG slices as a kind of access: everything gpusliced does with MIG, but
//! the hardware calls ([`crate::gpu`]) and the layout arithmetic
//! ([`crate::mig`]: profiles, placements, diffs, free of I/O).
//!
//! What a claim does, at prepare and unprepare ([`verbs`]: admit, reserve,
//! apply, release, the offer refreshed after a change), at start-up
//! ([`restore`]: prepared slices repaired; [`setup`]: the node-wide MIG
//! set-up at start-up and on SIGHUP; [`ahead`]: slices made ahead of claims
//! and their ledger), what it holds ([`held`]: the `[mig]` in force, the rescan
//! lock, the problems of the last set-up), its piece of a claim's CDI spec
//! ([`cdi`]) and what is read of the hardware for the API and the metrics
//! ([`view`]).
//!
//! What the node offers: the `[mig]` section ([`config`], which stands on
//! the config's floor: the layers check places it) and which
//! [`config::MigOffering`] is in force and why ([`offering`]). The slices as
//! published devices (their attributes, counters, the layout planned in
//! layout mode and the publish order) are the inventory's
//! ([`crate::inventory::mig`]): the scan builds them below the claim engine.
//!
//! The kind must not write records or CDI files: the verbs (`prepare`,
//! `unprepare`, `reconcile`) call it in the order that keeps records ahead of
//! effects. Every hardware step is undone on failure before the error is
//! returned: a GPU instance whose compute instance could not be made is
//! destroyed, so no half-made slice is left behind.

mod ahead;
mod cdi;
pub(crate) mod config;
mod held;
pub mod offering;
mod restore;
mod setup;
mod usage;
mod verbs;
mod view;

#[cfg(test)]
mod crash_recovery_tests;
#[cfg(test)]
mod tests;

use held::MigBooks;

#[cfg(test)]
pub(in crate::claims) use usage::unheld_slices;
pub use usage::{SliceState, SliceUse};
pub use verbs::slice_placement;
pub(in crate::claims) use view::layout;
pub use view::{GpuMigView, MigHolder, MigInstanceView};

/// MIG slices: the [`super::Access`] of a claim on a slice (or on a MIG GPU taken
/// whole), and the node-wide MIG set-up.
#[derive(Debug, Default)]
pub(in crate::claims) struct Mig {
    books: MigBooks,
}
