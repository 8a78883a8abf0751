//! Partitionable devices: partitions of one GPU drawing on its shared
//! counters, published as Kubernetes 1.35+ wants them (the counters in a
//! slice of their own).

use serde_json::json;

use super::{ask, assert_cannot_allocate_all, assert_unschedulable, got, names};
use crate::objects::{
    DRIVER, allocated, claim, class, counter_slice, device_slice, exactly, input,
    one_request_claim, result,
};
use crate::tool::{Features, Input, Outcome, RealAllocator, Stage, available};

/// One 80 GiB GPU published partitionable: the whole GPU and three 40 GiB
/// partitions, all drawing on one counter set.
fn partitionable(features: Features) -> Input {
    let device = |name: &str, kind: &str, gib: u32| {
        json!({
            "name": name,
            "attributes": { "type": { "string": kind } },
            "consumesCounters": [{
                "counterSet": "gpu-0",
                "counters": { "memory": { "value": format!("{gib}Gi") } }
            }]
        })
    };
    input(
        features,
        vec![
            counter_slice(
                0,
                2,
                json!([{ "name": "gpu-0", "counters": { "memory": { "value": "80Gi" } } }]),
            ),
            device_slice(
                1,
                2,
                json!([
                    device("gpu-0", "gpu", 80),
                    device("gpu-0-part-a", "part", 40),
                    device("gpu-0-part-b", "part", 40),
                    device("gpu-0-part-c", "part", 40),
                ]),
            ),
        ],
        vec![
            class("gpu", "device.attributes['gpu.example.com'].type == 'gpu'"),
            class(
                "part",
                "device.attributes['gpu.example.com'].type == 'part'",
            ),
        ],
    )
}

#[test]
fn shared_counters_bound_what_partitions_may_be_allocated_together() {
    let Some(allocator) =
        available("shared_counters_bound_what_partitions_may_be_allocated_together")
    else {
        return;
    };
    let on = Features {
        partitionable_devices: true,
        ..Features::default()
    };
    let mut case = partitionable(on);
    case.claims = vec![one_request_claim("two", "part", Some(2))];
    assert_eq!(
        got(allocator, &case),
        names(&["gpu-0-part-a", "gpu-0-part-b"])
    );
    case.claims = vec![one_request_claim("three", "part", Some(3))];
    assert_cannot_allocate_all(allocator, &case);

    // A held partition leaves no room for the whole GPU, and the whole GPU
    // none for a partition.
    case.allocated = vec![allocated("holder", json!([result("r", "gpu-0-part-b")]))];
    case.claims = vec![one_request_claim("whole", "gpu", Some(1))];
    assert_cannot_allocate_all(allocator, &case);
    case.claims = vec![one_request_claim("one", "part", Some(1))];
    assert_eq!(got(allocator, &case), names(&["gpu-0-part-a"]));
    case.allocated = vec![allocated("holder", json!([result("r", "gpu-0")]))];
    assert_cannot_allocate_all(allocator, &case);

    // Without the feature the scheduler leaves out the counter slice, and
    // with it the pool is incomplete: nothing in it can be allocated.
    let mut off = partitionable(Features::default());
    off.claims = vec![one_request_claim("one", "part", Some(1))];
    assert_cannot_allocate_all(allocator, &off);
}

/// Upstream bug in v0.36.2 (kubernetes/kubernetes#140436): a candidate
/// device that passes the counter check and is then refused by a claim
/// constraint keeps its counters reserved, so a later candidate drawing on
/// the same counter set is refused too. Here the right answer, part-a and
/// part-c (80 GiB, both model A), is never found. Fixed on master by
/// kubernetes/kubernetes#140431 and in release-1.36 by its cherry-pick
/// #140663 (July 2026, after this tag). When a refresh of the vendored tag
/// brings the fix, this test fails: turn it into the allocation.
#[test]
fn v0_36_2_leaks_counters_of_a_candidate_a_constraint_refused() {
    let Some(allocator) = available("v0_36_2_leaks_counters_of_a_candidate_a_constraint_refused")
    else {
        return;
    };
    let part = |name: &str, model: &str| {
        json!({ "name": name, "attributes": { "model": { "string": model } },
                "consumesCounters": [{ "counterSet": "gpu-0",
                                       "counters": { "memory": { "value": "40Gi" } } }] })
    };
    let mut case = input(
        Features {
            partitionable_devices: true,
            ..Features::default()
        },
        vec![
            counter_slice(
                0,
                2,
                json!([{ "name": "gpu-0", "counters": { "memory": { "value": "80Gi" } } }]),
            ),
            device_slice(
                1,
                2,
                json!([
                    part("part-a", "A"),
                    part("part-b", "B"),
                    part("part-c", "A")
                ]),
            ),
        ],
        vec![class("part", "true")],
    );
    let requests = json!([
        exactly("r1", "part", Some(1)),
        exactly("r2", "part", Some(1))
    ]);
    let same_model = json!([{ "matchAttribute": format!("{DRIVER}/model") }]);
    case.claims = vec![claim("pair", requests, same_model)];
    // Every implementation has it: stable (partitionable devices alone) and
    // incubating (with consumable capacity, Kubernetes 1.36's default).
    for (consumable_capacity, implementation) in [(false, "stable"), (true, "incubating")] {
        case.features.consumable_capacity = consumable_capacity;
        let outcome = ask(allocator, &case);
        assert_unschedulable(&outcome, Stage::Filter, "cannot allocate all claims");
        assert!(
            matches!(&outcome, Outcome::Unschedulable { allocator: Some(a), .. } if a == implementation),
            "{outcome:?}"
        );
    }
    // With the leak closed (tests/tools/allocator/fixes/), the pair is
    // found, by both implementations: the contract test names this bug by
    // that second opinion.
    let fixed = RealAllocator::with_fix("counter-leak-140436")
        .unwrap_or_else(|e| panic!("the fixed tool: {e}"));
    let about = fixed.about().expect("-about answers");
    assert_eq!(about.fixes, ["counter-leak-140436"]);
    for consumable_capacity in [false, true] {
        case.features.consumable_capacity = consumable_capacity;
        assert_eq!(got(fixed, &case), names(&["part-a", "part-c"]));
    }
    // Without the device the constraint refuses, the same pair is found.
    case.slices[1] = device_slice(1, 2, json!([part("part-a", "A"), part("part-c", "A")]));
    assert_eq!(got(allocator, &case), names(&["part-a", "part-c"]));
}
