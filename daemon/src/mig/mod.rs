//! MIG planning, pure: no I/O, no backend calls, no clock.
//!
//! Owns the decisions about MIG geometry; the claim engine carries them out
//! through `GpuBackend`. Reading order:
//! 1. [`MigGeometry`]: a GPU's profile table with its slice counts.
//! 2. [`MigLayout`]: the instances on one GPU ([`Occupant`], [`Ownership`]) and
//!    the NVML rules a new instance must pass (allowed placement on free
//!    memory slices, max count, one "+me" per GPU, compute slices).
//! 3. [`Score`]: how many future requests of each profile still fit, compared
//!    largest profile first (why: see the `capacity` module).
//! 4. [`choose_placement`]: where one request goes (best score, ties to the
//!    highest start); [`first_fit`] for comparison; [`choose_gpu`] when the
//!    caller picks the GPU too.
//! 5. [`plan_layout`]: placements for a wanted set of profiles (static layouts).
//! 6. [`diff()`]: the fewest destroy/create [`Step`]s from the current instances
//!    to a target, never touching a held instance.
//!
//! Invariant: a [`MigLayout`] only ever holds instances that pass the rules,
//! so every plan made from it is one NVML would accept.

mod capacity;
mod online;
mod diff;
mod error;
mod geometry;
mod occupancy;
mod plan_layout;

#[cfg(test)]
mod tests;

pub use capacity::Score;
pub use online::{choose_gpu, choose_placement, first_fit, legal_placements, scored_candidates};
pub use diff::{ForeignPolicy, GeometryDiff, Step, TargetInstance, diff};
pub use error::MigPlanError;
pub use geometry::MigGeometry;
pub use occupancy::{MigLayout, Occupant, Ownership};
pub use plan_layout::plan_layout;
