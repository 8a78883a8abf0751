//! MIG slices as a kind of access: everything the engine does to MIG
//! hardware.
//!
//! This folder owns the steps of a MIG claim ([`verbs`]: admit, reserve,
//! apply, release, the offer after a change), its books ([`books`]: the `[mig]` in force, the rescan lock,
//! the problems of the last set-up), the node-wide MIG set-up at start-up and
//! on SIGHUP ([`setup`]), slices made ahead of claims and their ledger
//! ([`ahead`]), the start-up repair of prepared slices ([`restore`]), the
//! CDI device of a slice ([`cdi`]) and what is read of the hardware for the
//! API and the metrics ([`view`]). It must not write records or CDI files:
//! the verbs (`prepare`, `unprepare`, `reconcile`) call it in the order that
//! keeps records ahead of effects. The layout arithmetic (profiles,
//! placements, diffs) lives in [`crate::mig`], free of I/O; the hardware
//! behind [`crate::gpu::GpuBackend`].
//!
//! The hardware steps of a claim: creating or taking a MIG slice, destroying
//! what the claim created, and switching a GPU's MIG mode off for a whole-GPU
//! claim (and back on after it).
//!
//! Every step is undone on failure before the error is returned: a GPU
//! instance whose compute instance could not be made is destroyed, so no
//! half-made slice is left behind.

mod ahead;
mod books;
mod cdi;
mod restore;
mod setup;
mod verbs;
mod view;

#[cfg(test)]
mod crash_recovery_tests;
#[cfg(test)]
mod tests;

use books::MigBooks;

pub use verbs::slice_placement;
pub(in crate::claims) use view::layout;
pub use view::{GpuMigView, MigHolder, MigInstanceView};

/// MIG slices: the [`super::Access`] of a claim on a slice (or on a MIG GPU taken
/// whole), and the node-wide MIG set-up.
#[derive(Debug, Default)]
pub(in crate::claims) struct Mig {
    books: MigBooks,
}
