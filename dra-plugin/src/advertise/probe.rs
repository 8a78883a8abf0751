//! The probe's two API calls: discovery of resource.k8s.io/v1, then a
//! dry-run create of each of [`probe_slices`]. Needs what publishing needs
//! (create on resourceslices; the node authorizer allows it and the
//! NodeRestriction admission plugin checks `spec.nodeName`, which is this
//! node), plus discovery, which every authenticated client may read.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    CounterSet, Device, DeviceCounterConsumption, ResourcePool, ResourceSlice, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::PostParams;

use super::{Decision, Findings, Probe, consumes, decide, has_shared};

/// The probe could not reach a verdict (the API server did not answer, or
/// answered an error that may pass): the sync is retried.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// Discovery of resource.k8s.io/v1 failed.
    #[error("cannot read API discovery of resource.k8s.io/v1: {0}")]
    Discovery(kube::Error),
    /// A dry-run create failed without a verdict.
    #[error("dry-run create of a probe ResourceSlice failed: {0}")]
    DryRun(kube::Error),
}

/// The pool the probe slices name; never stored (dry run).
const PROBE_POOL: &str = "gpuslice-probe";
const PROBE_SET: &str = "probe";
const PROBE_COUNTER: &str = "probe";

/// Finds out which form the API server takes, for `node`'s slices of `driver`.
pub async fn probe(
    kube: &kube::Client,
    node: &str,
    driver: &str,
    owner: &OwnerReference,
) -> Result<Decision, ProbeError> {
    let v1_served = match kube.list_api_group_resources("resource.k8s.io/v1").await {
        Ok(list) => list.resources.iter().any(|r| r.name == "resourceslices"),
        Err(kube::Error::Api(status)) if status.code == 404 => false,
        Err(err) => return Err(ProbeError::Discovery(err)),
    };
    let mut findings = Findings {
        v1_served,
        shared_counters: Probe::Dropped,
        consumes_counters: Probe::Dropped,
    };
    if v1_served {
        let api = Api::<ResourceSlice>::all(kube.clone());
        let [counters, device] = probe_slices(node, driver, owner);
        findings.shared_counters = dry_run(&api, &counters, has_shared).await?;
        findings.consumes_counters = dry_run(&api, &device, |s| consumes(s) > 0).await?;
    }
    Ok(decide(&findings))
}

/// One dry-run create: whether `kept` holds for the answer's spec.
async fn dry_run(
    api: &Api<ResourceSlice>,
    slice: &ResourceSlice,
    kept: impl Fn(&ResourceSliceSpec) -> bool,
) -> Result<Probe, ProbeError> {
    let params = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    match api.create(&params, slice).await {
        Ok(answer) if kept(&answer.spec) => Ok(Probe::Kept),
        Ok(_) => Ok(Probe::Dropped),
        Err(kube::Error::Api(status)) if is_verdict(status.code) => {
            Ok(Probe::Refused(status.code, status.message.clone()))
        }
        Err(err) => Err(ProbeError::DryRun(err)),
    }
}

/// A client error that will not pass by retrying (not 408 or 429).
pub fn is_verdict(code: u16) -> bool {
    (400..500).contains(&code) && code != 408 && code != 429
}

/// The two slices a partitionable pool is made of, as publishing writes
/// them (counter sets and devices in slices of their own): one counter set
/// of one counter; one device consuming it. Owned by the Node, on this node.
pub fn probe_slices(node: &str, driver: &str, owner: &OwnerReference) -> [ResourceSlice; 2] {
    let one = || BTreeMap::from([(PROBE_COUNTER.to_owned(), counter(1))]);
    let slice = |spec: ResourceSliceSpec| ResourceSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{node}-{driver}-probe-")),
            owner_references: Some(vec![owner.clone()]),
            ..ObjectMeta::default()
        },
        spec: ResourceSliceSpec {
            driver: driver.to_owned(),
            node_name: Some(node.to_owned()),
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

fn counter(value: i64) -> k8s_openapi::api::resource::v1::Counter {
    k8s_openapi::api::resource::v1::Counter {
        value: Quantity(value.to_string()),
    }
}
