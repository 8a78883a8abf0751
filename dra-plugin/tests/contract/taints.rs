//! A fault on a GPU instance that has gone (its claim released) taints every
//! offered slice overlapping it and the whole GPU. Published partitionable
//! with their counters, such devices met kubernetes#140436 in the real
//! scheduler (v0.36.2): it reserves a candidate's counters before reading
//! its taint and keeps them when the taint refuses it, so the rest of the
//! GPU looked used. gpuslice publishes a tainted device no claim holds
//! without counters ([`gpuslice_dra_plugin::slices`]); here a pod that fits
//! is allocated by both allocators alike and prepares, and the same pool
//! with the counters put back shows the bug the change avoids.

use gpuslice::config::{MigCreate, MigOffering};
use gpuslice::gpu::sim::SimModel;
use gpuslice_selector::allocate::Held;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSliceSpec};
use serde_json::json;

use crate::cases::{GPU_CLASS, MIG_CLASS, resource_claim, uuid};
use crate::compare::{Verdict, brief, compare};
use crate::node::{DRIVER, FaultPlan, GpuPlan, Node, NodePlan};
use crate::real::{Question, Real};
use crate::scheduler::{self, Answer};

/// gpu-0: an H100 in [mig], published partitionable, with a fault on a
/// gone 1g.10gb instance at its first placement; gpu-1: an H100 whole.
fn node() -> Node {
    let h100 = |mig: Option<Vec<String>>, fault| GpuPlan {
        model: SimModel::H100_80GB,
        mig,
        foreign: None,
        fault,
    };
    Node::start(&NodePlan {
        gpus: vec![
            h100(
                Some(vec!["1g.10gb".to_owned()]),
                Some(FaultPlan::Instance("1g.10gb".to_owned(), 0)),
            ),
            h100(None, None),
        ],
        advertise: Some(MigOffering::Partitionable),
        create: MigCreate::OnPrepare,
        consumable_capacity: false,
    })
}

/// A whole GPU and a 1g.10gb slice, in one claim.
fn claim() -> ResourceClaim {
    let uid = uuid(8, 1);
    serde_json::from_value(json!({
        "metadata": { "name": "claim-taints", "namespace": "contract", "uid": uid },
        "spec": { "devices": { "requests": [
            { "name": "r0", "exactly": { "deviceClassName": GPU_CLASS, "allocationMode": "ExactCount", "count": 1 } },
            { "name": "r1", "exactly": { "deviceClassName": MIG_CLASS, "allocationMode": "ExactCount", "count": 1, "selectors": [
                { "cel": { "expression": format!("device.attributes['{DRIVER}'].profile == '1g.10gb'") } }
            ] } }
        ] } }
    }))
    .expect("a valid claim")
}

fn question<'a>(
    slices: &'a [ResourceSliceSpec],
    classes: &'a [k8s_openapi::api::resource::v1::DeviceClass],
    claims: &'a [ResourceClaim],
) -> Question<'a> {
    Question {
        slices,
        classes,
        claims,
        allocated: Vec::new(),
        consumable: false,
    }
}

#[test]
fn sim_a_faulted_slice_leaves_the_rest_of_its_gpu_to_the_real_scheduler() {
    let node = node();
    let slices = crate::published(&node, false);
    let tainted: Vec<&str> = crate::devices(&slices)
        .filter(|d| d.taints.is_some())
        .map(|d| d.name.as_str())
        .collect();
    assert!(tainted.contains(&"gpu-0"), "{tainted:?}");
    assert!(
        tainted.iter().any(|d| d.starts_with("gpu-0-mig-1g10gb")),
        "{tainted:?}"
    );
    assert!(
        crate::devices(&slices)
            .filter(|d| d.taints.is_some())
            .all(|d| d.consumes_counters.is_none()),
        "a tainted device no claim holds draws on no counters"
    );
    let Some(real) = Real::available() else {
        return;
    };
    let classes = scheduler::classes();
    let claims = [claim()];
    let selector = scheduler::schedule(&slices, &classes, &claims, &Held::default());
    let upstream = real.ask(&question(&slices, &classes, &claims));
    assert!(
        matches!(
            compare(
                &selector,
                &upstream,
                &question(&slices, &classes, &claims),
                String::new
            ),
            Verdict::Agree
        ),
        "selector {}, real {}",
        brief(&selector),
        brief(&upstream)
    );
    let Answer::Fits(found) = upstream else {
        panic!("the pod fits: gpu-1 whole, a 1g.10gb slice of gpu-0 clear of the fault");
    };
    let object = resource_claim(&claims[0], &found[0], &mut || unreachable!("no share"));
    node.prepare(&object)
        .unwrap_or_else(|e| panic!("{} did not prepare: {e}", brief(&Answer::Fits(found))));
    node.unprepare(&uuid(8, 1));

    // The counters put back on the tainted devices, as before: v0.36.2
    // reserves gpu-0's whole counter set for the tainted gpu-0 the first
    // request walks past, and finds no slice for the second.
    let set = "gpu-0-counters";
    let whole_set = slices
        .iter()
        .flat_map(|s| s.shared_counters.iter().flatten())
        .find(|c| c.name == set)
        .map(|c| c.counters.clone())
        .expect("gpu-0's counter set");
    let mut before = slices.clone();
    for device in before
        .iter_mut()
        .flat_map(|s| s.devices.iter_mut().flatten())
    {
        if device.name == "gpu-0" {
            device.consumes_counters = Some(vec![
                k8s_openapi::api::resource::v1::DeviceCounterConsumption {
                    counter_set: set.to_owned(),
                    counters: whole_set.clone(),
                },
            ]);
        }
    }
    let asked = question(&before, &classes, &claims);
    assert_eq!(real.ask(&asked), Answer::No, "kubernetes#140436 at v0.36.2");
    let fixed = Real::ask_fixed("counter-leak-140436", &asked);
    assert!(fixed.allocations().is_some(), "{}", brief(&fixed));
}
