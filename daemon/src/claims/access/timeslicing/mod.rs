//! Time-slicing as a kind of access, one file per part: prepare's and
//! unprepare's steps ([`verbs`]), the interval through nvidia-smi and what it
//! showed ([`settings`]), start-up ([`restore`]), what is reported
//! ([`view`]). The steps: reserve (the claim joins the GPU's
//! [`crate::claims::compute_policy::TimeSlicePolicy`]: one interval per GPU, never beside
//! MPS), apply (compute mode DEFAULT, then `nvidia-smi compute-policy
//! --set-timeslice` for the first claim on the GPU), release (the last claim
//! resets the GPU to Default), and restore at start-up (set again: the policy
//! does not survive a reboot or a driver reload).
//!
//! A GPU without time-slice settings (nvidia-smi answers "Not Supported")
//! still time-slices at the driver's own interval: a claim asking for
//! `Default` prepares; one asking for another interval is refused, naming
//! the GPU, what it lacks and what to ask instead, and so is every later
//! one on that GPU, before anything is touched (the books keep what
//! nvidia-smi said). A prepared claim whose interval cannot be set again at
//! start-up is reported, not dropped.

pub mod compute_policy;
pub(crate) mod config;
pub(crate) mod opaque;
mod restore;
mod settings;
mod verbs;
pub(in crate::claims) mod view;

/// Time-slicing: the [`super::Access`] of a claim on time-sliced whole GPUs.
#[derive(Debug, Default)]
pub(in crate::claims) struct TimeSlicing;

#[cfg(test)]
mod tests;
