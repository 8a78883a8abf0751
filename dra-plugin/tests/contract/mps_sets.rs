//! The one allocation the contract leaves out (docs/publication.md, "The
//! rule"): with consumable capacity the scheduler may give an MPS request a
//! set of GPUs that partly overlaps the set of an MPS request another claim
//! holds ({gpu-0, gpu-1} beside {gpu-0}). MPS cannot serve both: a GPU runs
//! one MPS server, and a process talks to one daemon, so the daemon of a
//! request must cover exactly the request's GPUs. gpusliced refuses the
//! second prepare (FAILED_PRECONDITION, naming the daemon and its claims).
//!
//! This module says, from the allocations alone, when that refusal is the
//! right answer; the test then requires exactly that refusal, with nothing
//! left behind, and requires every other allocation to prepare.

use std::collections::BTreeSet;

use k8s_openapi::api::resource::v1::{DeviceRequestAllocationResult, ResourceClaim};

use crate::scheduler::SHARED_CLASS;

/// What the daemon answers when a set partly overlaps another's.
pub const REFUSAL: &str = "one device can be in only one MPS daemon";

/// The device set of each MPS request of the claims held now.
#[derive(Debug, Default)]
pub struct MpsSets {
    held: Vec<(String, BTreeSet<String>)>,
}

/// The device set of each MPS (shared-class) request of `claim`.
pub fn sets_of(
    claim: &ResourceClaim,
    results: &[DeviceRequestAllocationResult],
) -> Vec<BTreeSet<String>> {
    let requests = claim
        .spec
        .devices
        .iter()
        .flat_map(|d| d.requests.iter().flatten());
    requests
        .filter(|r| {
            r.exactly
                .as_ref()
                .is_some_and(|e| e.device_class_name == SHARED_CLASS)
        })
        .map(|r| {
            results
                .iter()
                .filter(|a| a.request == r.name)
                .map(|a| a.device.clone())
                .collect()
        })
        .filter(|set: &BTreeSet<String>| !set.is_empty())
        .collect()
}

impl MpsSets {
    /// The held claim whose MPS set partly overlaps one of `sets`, if any.
    pub fn partly_overlapping(&self, sets: &[BTreeSet<String>]) -> Option<&str> {
        self.held.iter().find_map(|(uid, held)| {
            sets.iter()
                .any(|set| set != held && !set.is_disjoint(held))
                .then_some(uid.as_str())
        })
    }

    /// `uid` now holds `sets`.
    pub fn add(&mut self, uid: &str, sets: Vec<BTreeSet<String>>) {
        self.held
            .extend(sets.into_iter().map(|set| (uid.to_owned(), set)));
    }

    /// `uid` holds nothing any more.
    pub fn remove(&mut self, uid: &str) {
        self.held.retain(|(holder, _)| holder != uid);
    }
}
