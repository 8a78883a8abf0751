//! The MIG-form question, asked in three steps: discovery of
//! resource.k8s.io/v1 (are `resourceslices` served?), then a dry-run create
//! of each of [`probe_slices`] (is `sharedCounters` kept? is
//! `consumesCounters`?). [`crate::advertise::decide`] turns the findings
//! into a form and a reason.
//!
//! [`MigFormProbe`] keeps each step's finding as it comes, and the decision
//! once all are in: a step that decides nothing (408, 409, 429, 5xx, no
//! answer) fails the call and keeps the rest, so the retry asks only what
//! is still open, and a decision is answered again without a request until
//! [`MigFormProbe::forget`] (the publisher's `mig_form` says when).
//!
//! Needs what publishing needs (create on resourceslices; the node
//! authorizer allows it and the NodeRestriction admission plugin checks
//! `spec.nodeName`, which is this node), plus discovery, which every
//! authenticated client may read: any answer to it but 404 (not served)
//! is retried.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    Counter, CounterSet, Device, DeviceCounterConsumption, ResourcePool, ResourceSlice,
    ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Api;

use super::{Finding, Verdict, dry_run_create, refusal};
use crate::advertise::{CONSUMES, Decision, Findings, SHARED, consumes, decide, has_shared};

/// A step of the probe that decided nothing: the call is retried.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Discovery of resource.k8s.io/v1 failed.
    #[error("cannot read API discovery of resource.k8s.io/v1: {0}")]
    Discovery(kube::Error),
    /// A dry-run create decided nothing.
    #[error("the dry-run create of a probe ResourceSlice with {field} decided nothing: {error}")]
    DryRun {
        /// "sharedCounters" or "consumesCounters".
        field: &'static str,
        /// kube's error.
        error: kube::Error,
    },
}

/// Whose slices the probe asks about.
#[derive(Debug, Clone, Copy)]
pub struct ProbeTarget<'a> {
    /// This node.
    pub node: &'a str,
    /// Our driver.
    pub driver: &'a str,
    /// The Node, owner of the probe slices as of real ones.
    pub owner: &'a OwnerReference,
}

/// The question's findings so far, and its decision once reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigFormProbe {
    v1_served: Option<bool>,
    shared_counters: Option<Finding>,
    consumes_counters: Option<Finding>,
    decision: Option<Decision>,
}

/// The pool the probe slices name; never stored (dry run).
const PROBE_POOL: &str = "gpuslice-probe";
const PROBE_SET: &str = "probe";
const PROBE_COUNTER: &str = "probe";

impl MigFormProbe {
    /// The decision, if one is kept.
    pub fn decision(&self) -> Option<&Decision> {
        self.decision.as_ref()
    }

    /// How many of its questions have an answer kept (discovery, each dry
    /// run, the decision): a retry that raises it made progress.
    pub fn answers(&self) -> usize {
        usize::from(self.v1_served.is_some())
            + usize::from(self.shared_counters.is_some())
            + usize::from(self.consumes_counters.is_some())
            + usize::from(self.decision.is_some())
    }

    /// Drops the decision and every finding: the next call asks again
    /// from the start.
    pub fn forget(&mut self) {
        *self = Self::default();
    }

    /// The decision kept, or the steps still open asked now.
    pub async fn decide(
        &mut self,
        kube: &kube::Client,
        target: &ProbeTarget<'_>,
    ) -> Result<Decision, ProbeError> {
        if let Some(decision) = &self.decision {
            return Ok(decision.clone());
        }
        let v1_served = match self.v1_served {
            Some(served) => served,
            None => *self.v1_served.insert(discover(kube).await?),
        };
        if v1_served {
            let api = Api::<ResourceSlice>::all(kube.clone());
            let [counters, device] = probe_slices(target);
            if self.shared_counters.is_none() {
                let found = dry_run(&api, &counters, SHARED, has_shared).await?;
                self.shared_counters = Some(found);
            }
            if self.consumes_counters.is_none() {
                let found = dry_run(&api, &device, CONSUMES, |s| consumes(s) > 0).await?;
                self.consumes_counters = Some(found);
            }
        }
        let decision = decide(&Findings {
            v1_served,
            shared_counters: self.shared_counters.clone().unwrap_or(Finding::Dropped),
            consumes_counters: self.consumes_counters.clone().unwrap_or(Finding::Dropped),
        });
        Ok(self.decision.insert(decision).clone())
    }
}

/// Whether discovery lists `resourceslices` in resource.k8s.io/v1.
async fn discover(kube: &kube::Client) -> Result<bool, ProbeError> {
    match kube.list_api_group_resources("resource.k8s.io/v1").await {
        Ok(list) => Ok(list.resources.iter().any(|r| r.name == "resourceslices")),
        Err(error) if refusal(&error).is_some_and(|r| r.verdict == Verdict::Gone) => Ok(false),
        Err(error) => Err(ProbeError::Discovery(error)),
    }
}

/// One dry-run create: whether `kept` holds for the answer's spec.
async fn dry_run(
    api: &Api<ResourceSlice>,
    slice: &ResourceSlice,
    field: &'static str,
    kept: impl FnOnce(&ResourceSliceSpec) -> bool,
) -> Result<Finding, ProbeError> {
    let answer = api.create(&dry_run_create(), slice).await;
    Finding::of(answer, |answer| kept(&answer.spec))
        .map_err(|error| ProbeError::DryRun { field, error })
}

/// The two slices a partitionable pool is made of, as publishing writes
/// them (counter sets and devices in slices of their own): one counter set
/// of one counter; one device consuming it. Owned by the Node, on this node.
pub fn probe_slices(target: &ProbeTarget<'_>) -> [ResourceSlice; 2] {
    let one = || BTreeMap::from([(PROBE_COUNTER.to_owned(), counter(1))]);
    let slice = |spec: ResourceSliceSpec| ResourceSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{}-{}-probe-", target.node, target.driver)),
            owner_references: Some(vec![target.owner.clone()]),
            ..ObjectMeta::default()
        },
        spec: ResourceSliceSpec {
            driver: target.driver.to_owned(),
            node_name: Some(target.node.to_owned()),
            pool: ResourcePool {
                name: PROBE_POOL.to_owned(),
                generation: 0,
                resource_slice_count: 2,
            },
            ..spec
        },
    };
    [
        slice(ResourceSliceSpec {
            shared_counters: Some(vec![CounterSet {
                name: PROBE_SET.to_owned(),
                counters: one(),
            }]),
            ..ResourceSliceSpec::default()
        }),
        slice(ResourceSliceSpec {
            devices: Some(vec![Device {
                name: "probe".to_owned(),
                consumes_counters: Some(vec![DeviceCounterConsumption {
                    counter_set: PROBE_SET.to_owned(),
                    counters: one(),
                }]),
                ..Device::default()
            }]),
            ..ResourceSliceSpec::default()
        }),
    ]
}

fn counter(value: i64) -> Counter {
    Counter {
        value: Quantity(value.to_string()),
    }
}
