//! MIG planning, pure: no I/O, no backend calls, no clock.
//!
//! Owns the decisions about MIG geometry; the claim engine carries them out
//! through `GpuBackend`. Reading order:
//! 1. [`MigGeometry`]: a GPU's profile table with its slice counts.
//! 2. [`Occupancy`]: the instances on one GPU ([`Occupant`], [`Ownership`])
//!    and the NVML rules a new instance must pass (allowed placement on free
//!    memory slices, max count, one "+me" per GPU, compute slices).
//! 3. [`Score`]: how many future requests of each profile still fit, compared
//!    largest profile first (why: see the `capacity` module).
//! 4. [`plan_layout`]: placements for a wanted set of profiles (a `[mig]
//!    layout` entry: the slices layout mode offers and ahead mode makes),
//!    keeping held instances and reusing idle ones where they sit. This is the
//!    planner the daemon uses.
//! 5. [`diff()`]: the fewest destroy/create [`Step`]s from the current instances
//!    to a target, never touching a held instance.
//! 6. The `online` module (`choose_placement`, `first_fit`, `choose_gpu`):
//!    placement policies for one request at a time, with no wanted set in
//!    view. The daemon does not use them, so they are built for tests and
//!    benches only (the `testkit` feature): the MIG bench compares them with
//!    `plan_layout`, and the tests hold them to the NVML rules.
//!
//! Invariant: an [`Occupancy`] only ever holds instances that pass the rules,
//! so every plan made from it is one NVML would accept.

mod capacity;
mod diff;
mod error;
mod geometry;
mod occupancy;
#[cfg(any(test, feature = "testkit"))]
mod online;
mod plan_layout;

#[cfg(test)]
mod tests;

pub use capacity::Score;
pub use diff::{ForeignPolicy, GeometryDiff, Step, TargetInstance, diff};
pub use error::MigPlanError;
pub use geometry::MigGeometry;
pub use occupancy::{Occupancy, Occupant, Ownership};
#[cfg(any(test, feature = "testkit"))]
pub use online::{choose_gpu, choose_placement, first_fit, legal_placements, scored_candidates};
pub use plan_layout::plan_layout;
