//! The second scheduler: Kubernetes' own structured allocator (the
//! real-allocator tool, `dra-plugin/tests/real_allocator/tool/`, upstream
//! k8s.io/dynamic-resource-allocation as kube-scheduler runs it), asked the
//! same question as the selector allocator for every pod: the same slices in
//! the same walk, the same classes and claims, the claims still allocated,
//! and the feature switches this case's objects need ([`features`]).
//!
//! Owns: building the tool's input and reading its answer as an
//! [`Answer`]. One tool process answers the whole test (a session); a
//! second opinion, from the tool with one known upstream bug fixed, is
//! asked only when the answers disagree ([`crate::compare`]).

use std::sync::Mutex;

use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceSlice, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::node::NODE;

/// The real allocator's budget of `allocateOne` calls for one pod, standing
/// in for kube-scheduler's filter timeout (10 s by default): upstream tries
/// every combination of the requests before one that can never be served,
/// which a few MIG GPUs published partitionable make millions. A pod past it
/// is counted and left to the selector allocator's answer.
pub const BUDGET: i64 = 200_000;
use crate::scheduler::Answer;
use crate::tool::{Features, Input, Outcome, RealAllocator, Session, available};

/// The tool, with its one session.
pub struct Real {
    allocator: &'static RealAllocator,
    session: Mutex<Option<Session>>,
}

/// One pod's question.
pub struct Question<'a> {
    /// The slices in the walk the selector allocator used.
    pub slices: &'a [ResourceSliceSpec],
    pub classes: &'a [DeviceClass],
    /// The pod's claims, pending.
    pub claims: &'a [ResourceClaim],
    /// The claims allocated earlier and still held.
    pub allocated: Vec<ResourceClaim>,
    /// The DRA plugin's `consumable_capacity`.
    pub consumable: bool,
}

/// The feature switches (the gates of a cluster where this case's objects
/// exist as written): partitionable devices where counters are published,
/// consumable capacity where the plugin publishes shareable devices or a
/// claim asks for capacity (with the gate off the API server would drop
/// the request's capacity), device taints where a device is tainted,
/// prioritized list where a request has alternatives.
pub fn features(question: &Question<'_>) -> Features {
    let devices = || {
        question
            .slices
            .iter()
            .flat_map(|s| s.devices.iter().flatten())
    };
    let requests = || {
        question
            .claims
            .iter()
            .filter_map(|c| c.spec.devices.as_ref())
            .flat_map(|d| d.requests.iter().flatten())
    };
    Features {
        partitionable_devices: question.slices.iter().any(|s| s.shared_counters.is_some())
            || devices().any(|d| d.consumes_counters.is_some()),
        consumable_capacity: question.consumable
            || requests().any(|r| r.exactly.as_ref().is_some_and(|e| e.capacity.is_some())),
        device_taints: devices().any(|d| d.taints.is_some()),
        prioritized_list: requests().any(|r| r.first_available.is_some()),
        ..Features::default()
    }
}

/// The tool's input for `question`: the slices named as the plugin would
/// publish them on [`NODE`].
pub fn input(question: &Question<'_>) -> Input {
    let slices = (0..)
        .zip(question.slices)
        .map(|(i, spec): (usize, _)| ResourceSlice {
            metadata: ObjectMeta {
                name: Some(format!("{NODE}-{}-{i}", spec.driver)),
                ..ObjectMeta::default()
            },
            spec: spec.clone(),
        })
        .collect();
    Input {
        node: k8s_openapi::api::core::v1::Node {
            metadata: ObjectMeta {
                name: Some(NODE.to_owned()),
                ..ObjectMeta::default()
            },
            ..Default::default()
        },
        features: features(question),
        slices,
        classes: question.classes.to_vec(),
        claims: question.claims.to_vec(),
        allocated: question.allocated.clone(),
        max_allocate_one_calls: Some(BUDGET),
    }
}

/// The tool's outcome as an answer.
pub fn answer(outcome: Outcome) -> Answer {
    match outcome {
        Outcome::Allocated { allocations, .. } => {
            Answer::Fits(allocations.into_iter().map(|a| a.allocation).collect())
        }
        Outcome::Unschedulable { .. } => Answer::No,
        Outcome::Error { stage, reason, .. } => Answer::Refused(format!("{stage:?}: {reason}")),
        Outcome::Limit { reason, .. } => Answer::GaveUp(reason),
    }
}

impl Real {
    /// The tool, or None after printing why the real-allocator half is
    /// skipped (a failure instead under `GPUSLICE_REQUIRE_TOOLS=1`, or when
    /// the build broke).
    pub fn available() -> Option<Real> {
        let allocator = available("the contract's real-allocator half")?;
        Some(Real {
            allocator,
            session: Mutex::new(None),
        })
    }

    /// Upstream's answer to `question`.
    pub fn ask(&self, question: &Question<'_>) -> Answer {
        let input = input(question);
        let mut session = self
            .session
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if session.is_none() {
            *session = Some(self.allocator.session().expect("the allocator tool starts"));
        }
        let outcome = session
            .as_mut()
            .map(|s| s.allocate(&input))
            .expect("a session")
            .unwrap_or_else(|e| {
                panic!(
                    "the allocator tool gave no answer: {e}\ninput: {}",
                    serde_json::to_string(&input).unwrap_or_default()
                )
            });
        answer(outcome)
    }

    /// The answer of the tool with `fix` applied
    /// (`tests/tools/allocator/fixes/`).
    pub fn ask_fixed(fix: &str, question: &Question<'_>) -> Answer {
        let fixed = RealAllocator::with_fix(fix)
            .unwrap_or_else(|e| panic!("the allocator tool with {fix}: {e}"));
        let outcome = fixed
            .allocate(&input(question))
            .unwrap_or_else(|e| panic!("the allocator tool with {fix} gave no answer: {e}"));
        answer(outcome)
    }
}
