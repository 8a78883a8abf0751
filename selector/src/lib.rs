//! gpuslice-selector: DRA CEL device selectors checked against gpuslice's
//! devices with Kubernetes' semantics, and the scheduler's allocator over
//! them, for `gpuslicectl match`. Pure: no I/O.
//!
//! Reading order:
//! 1. [`quantity`] (the gpuslice-quantity crate, re-exported) and
//!    [`version`]: the values behind `quantity()` and `semver()`.
//! 2. [`library`] (and `bind`): the Kubernetes CEL environment on the `cel`
//!    crate.
//! 3. [`device`]: a published device as the `device` variable.
//! 4. [`matcher`]: compile a selector (length, parse, [`cost`], [`hints`]
//!    with `typing`), evaluate it per device, name the failing clause
//!    (`clauses`) and explain errors (`errors`).
//! 5. [`inputs`]: DeviceClasses and ResourceClaims from YAML as targets.
//! 6. [`allocate`]: the scheduler's structured allocator over a node's
//!    pool: whole claims (counts, All, firstAvailable, constraints,
//!    counters, capacity, taints, what is held), and [`allocate::judge`]
//!    for one claim now and on an empty node.

pub mod allocate;
mod bind;
mod clauses;
pub mod cost;
pub mod device;
mod errors;
pub mod hints;
pub mod inputs;
pub mod library;
pub mod matcher;
mod typing;
mod unparse;
pub mod version;

pub use gpuslice_quantity as quantity;

pub use device::{DeviceError, DeviceView};
pub use hints::{Catalog, Hint, Severity};
pub use matcher::{CompileError, Outcome, Selector};

#[cfg(test)]
mod tests;
