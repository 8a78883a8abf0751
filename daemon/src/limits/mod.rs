//! Limits that hold on shared GPUs (`[limits]`): an MPS or time-sliced
//! claim over its memory share, or a process that belongs to no claim, gets
//! a process ended once the condition outlasts its grace, or is only named
//! ("dry-run"); by default nothing but the episode warning happens.
//!
//! Reading order: [`decide`] (which process, from one sample, pure).
//! Nothing here intercepts CUDA: the only lever is a signal to a process.

pub mod decide;

pub use decide::{Decider, Decision, Policy, Sample};
