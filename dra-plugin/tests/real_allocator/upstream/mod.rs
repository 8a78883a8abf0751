//! Hand-made cases that pin what the upstream allocator (v0.36.2) does with
//! the shapes gpuslice publishes, each group in its file:
//!
//! * [`whole`]: first fit over a pool's devices, a held device skipped,
//!   `matchAttribute` backtracking, `All`, device taints, the scheduler's
//!   refusals before and inside Allocate, claim configs in the result.
//! * [`partitionable`]: shared counters bounding partitions, and an
//!   upstream bug in their bookkeeping.
//! * [`shared`]: consumable capacity (a share id and the consumed capacity
//!   in the result), and the same upstream bug's path through it.
//!
//! This file holds what they share: asking, and reading the answer.

mod partitionable;
mod shared;
mod whole;

use serde_json::{Value, json};

use crate::objects::{class, device_slice, input};
use crate::tool::{Features, Input, Outcome, RealAllocator, Stage};

/// The devices each claim got, in order, or the whole outcome when it is
/// not an allocation.
pub fn devices(outcome: &Outcome) -> Result<Vec<Vec<String>>, String> {
    match outcome {
        Outcome::Allocated { allocations, .. } => Ok(allocations
            .iter()
            .map(|a| {
                let results = a
                    .allocation
                    .devices
                    .as_ref()
                    .and_then(|d| d.results.as_ref());
                results
                    .into_iter()
                    .flatten()
                    .map(|r| r.device.clone())
                    .collect()
            })
            .collect()),
        other => Err(format!("{other:?}")),
    }
}

pub fn ask(allocator: &RealAllocator, input: &Input) -> Outcome {
    allocator
        .allocate(input)
        .unwrap_or_else(|e| panic!("the allocator tool gave no answer: {e}"))
}

pub fn got(allocator: &RealAllocator, input: &Input) -> Vec<Vec<String>> {
    devices(&ask(allocator, input))
        .unwrap_or_else(|other| panic!("expected an allocation: {other}"))
}

pub fn assert_unschedulable(outcome: &Outcome, stage: Stage, reason_has: &str) {
    match outcome {
        Outcome::Unschedulable {
            stage: s, reason, ..
        } if *s == stage && reason.contains(reason_has) => {}
        other => panic!("expected unschedulable at {stage:?} saying {reason_has:?}, got {other:?}"),
    }
}

/// Asserts the scheduler's Filter finds no allocation of `input`'s claims
/// ("cannot allocate all claims").
pub fn assert_cannot_allocate_all(allocator: &RealAllocator, input: &Input) {
    let outcome = ask(allocator, input);
    assert_unschedulable(&outcome, Stage::Filter, "cannot allocate all claims");
}

pub fn names(devices: &[&str]) -> Vec<Vec<String>> {
    vec![devices.iter().map(|d| (*d).to_owned()).collect()]
}

pub fn gpu(name: &str, model: &str) -> Value {
    json!({ "name": name, "attributes": {
        "type": { "string": "gpu" }, "model": { "string": model } } })
}

pub fn whole_gpus() -> Input {
    input(
        Features::default(),
        vec![device_slice(
            0,
            1,
            json!([
                gpu("gpu-0", "A100"),
                gpu("gpu-1", "H100"),
                gpu("gpu-2", "H100")
            ]),
        )],
        vec![class("gpu", "true")],
    )
}
