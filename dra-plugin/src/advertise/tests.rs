//! The probe's rule over every combination of findings, the write check,
//! and the shape of the probe slices.

use k8s_openapi::api::resource::v1::{
    CounterSet, Device, DeviceCounterConsumption, ResourceSliceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::{Decision, Findings, Form, decide, dropped};
use crate::probe::{Finding, ProbeTarget, Refusal, Verdict, probe_slices};

fn every_probe() -> [Finding; 3] {
    [
        Finding::Kept,
        Finding::Dropped,
        Finding::Refused(Refusal {
            verdict: Verdict::Forbidden,
            code: 403,
            message: "resourceslices is forbidden: User \"system:node:n\"\nmore".to_owned(),
        }),
    ]
}

#[test]
fn partitionable_only_when_v1_is_served_and_both_fields_are_kept() {
    for v1_served in [false, true] {
        for shared in every_probe() {
            for consumed in every_probe() {
                let findings = Findings {
                    v1_served,
                    shared_counters: shared.clone(),
                    consumes_counters: consumed.clone(),
                };
                let Decision { form, reason } = decide(&findings);
                let case = format!("{findings:?}: {form:?} {reason}");
                let on = v1_served && shared == Finding::Kept && consumed == Finding::Kept;
                assert_eq!(form == Form::Partitionable, on, "{case}");
                assert!(!reason.is_empty() && !reason.contains('\n'), "{case}");
                if on {
                    assert_eq!(
                        reason, "the API server keeps sharedCounters and consumesCounters",
                        "{case}"
                    );
                } else if !v1_served {
                    assert!(
                        reason.contains("does not serve resource.k8s.io/v1"),
                        "{case}"
                    );
                } else if matches!(shared, Finding::Refused(_))
                    || matches!(consumed, Finding::Refused(_))
                {
                    assert!(
                        reason.contains("refused") && reason.contains("403"),
                        "{case}"
                    );
                } else {
                    assert!(reason.contains("DRAPartitionableDevices off"), "{case}");
                    assert_eq!(
                        reason.contains("sharedCounters"),
                        shared == Finding::Dropped,
                        "{case}"
                    );
                    assert_eq!(
                        reason.contains("consumesCounters"),
                        consumed == Finding::Dropped,
                        "{case}"
                    );
                }
            }
        }
    }
}

fn owner() -> OwnerReference {
    OwnerReference {
        api_version: "v1".to_owned(),
        kind: "Node".to_owned(),
        name: "node-1".to_owned(),
        uid: "uid-1".to_owned(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

#[test]
fn the_probe_slices_are_this_nodes_split_partitionable_pool() {
    let owner = owner();
    let [counters, device] = probe_slices(&ProbeTarget {
        node: "node-1",
        driver: "gpu.nvidia.com",
        owner: &owner,
    });
    for slice in [&counters, &device] {
        assert_eq!(slice.spec.node_name.as_deref(), Some("node-1"));
        assert_eq!(slice.spec.driver, "gpu.nvidia.com");
        assert_eq!(slice.metadata.owner_references, Some(vec![owner.clone()]));
        assert!(slice.metadata.name.is_none() && slice.metadata.generate_name.is_some());
    }
    assert!(super::has_shared(&counters.spec) && counters.spec.devices.is_none());
    assert!(device.spec.shared_counters.is_none());
    assert_eq!(super::consumes(&device.spec), 1);
    let set = &counters.spec.shared_counters.as_ref().unwrap()[0];
    let used = &device.spec.devices.as_ref().unwrap()[0]
        .consumes_counters
        .as_ref()
        .unwrap()[0];
    assert_eq!(
        used.counter_set, set.name,
        "the device draws from the probe's set"
    );
    assert_eq!(
        used.counters.keys().collect::<Vec<_>>(),
        set.counters.keys().collect::<Vec<_>>()
    );
}

fn spec(shared: bool, consuming: usize, plain: usize) -> ResourceSliceSpec {
    let device = |i: usize, consumes: bool| Device {
        name: format!("d{i}"),
        consumes_counters: consumes.then(|| {
            vec![DeviceCounterConsumption {
                counter_set: "s".to_owned(),
                ..DeviceCounterConsumption::default()
            }]
        }),
        ..Device::default()
    };
    ResourceSliceSpec {
        shared_counters: shared.then(|| {
            vec![CounterSet {
                name: "s".to_owned(),
                ..CounterSet::default()
            }]
        }),
        devices: Some(
            (0..consuming)
                .map(|i| device(i, true))
                .chain((0..plain).map(|i| device(consuming + i, false)))
                .collect(),
        ),
        ..ResourceSliceSpec::default()
    }
}

#[test]
fn a_write_whose_answer_lost_counters_is_caught() {
    assert_eq!(dropped(&spec(true, 0, 0), &spec(true, 0, 0)), None);
    assert_eq!(dropped(&spec(false, 2, 1), &spec(false, 2, 1)), None);
    assert_eq!(dropped(&spec(false, 0, 3), &spec(false, 0, 3)), None);
    assert_eq!(
        dropped(&spec(true, 0, 0), &spec(false, 0, 0)),
        Some("sharedCounters")
    );
    assert_eq!(
        dropped(&spec(false, 2, 1), &spec(false, 0, 3)),
        Some("consumesCounters")
    );
    assert_eq!(
        dropped(&spec(false, 2, 1), &spec(false, 1, 2)),
        Some("consumesCounters")
    );
}
