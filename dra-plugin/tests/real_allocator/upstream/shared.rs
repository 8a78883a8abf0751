//! Consumable capacity: one device allocated many times, each allocation a
//! share with its own id and the capacity it took.

use k8s_openapi::api::resource::v1::{DeviceRequestAllocationResult, ResourceClaim};
use serde_json::json;

use super::{ask, assert_cannot_allocate_all, devices, got, names};
use crate::objects::{DRIVER, allocated, claim, class, device_slice, exactly, input, result};
use crate::tool::{Features, Input, Outcome, RealAllocator, Stage, available};

/// One 80 GiB GPU that may be allocated many times, each allocation
/// taking memory (10 GiB unless the request says).
fn shareable(features: Features) -> Input {
    let device = json!([{
        "name": "gpu-0",
        "allowMultipleAllocations": true,
        "attributes": { "type": { "string": "gpu" } },
        "capacity": { "memory": { "value": "80Gi", "requestPolicy": {
            "default": "10Gi", "validRange": { "min": "1Gi" } } } }
    }]);
    input(
        features,
        vec![device_slice(0, 1, device)],
        vec![class("gpu", "true")],
    )
}

fn memory_share(name: &str, gib: u32, count: i64) -> ResourceClaim {
    let mut request = exactly("r", "gpu", Some(count));
    request["exactly"]["capacity"] = json!({ "requests": { "memory": format!("{gib}Gi") } });
    claim(name, json!([request]), json!([]))
}

/// A claim holding a share of gpu-0 that consumed `gib`.
fn held_share(name: &str, gib: u32) -> ResourceClaim {
    let mut share = result("r", "gpu-0");
    share["shareID"] = json!(format!("00000000-0000-0000-0000-0000000000{gib:02}"));
    share["consumedCapacity"] = json!({ "memory": format!("{gib}Gi") });
    allocated(name, json!([share]))
}

/// The one device `outcome` allocates, which must be an allocation of one.
fn only_result(outcome: &Outcome) -> DeviceRequestAllocationResult {
    let Outcome::Allocated { allocations, .. } = outcome else {
        panic!("expected an allocation, got {outcome:?}");
    };
    let results = allocations[0]
        .allocation
        .devices
        .as_ref()
        .and_then(|d| d.results.clone());
    match results.as_deref().unwrap_or_default() {
        [one] => one.clone(),
        _ => panic!("expected one result: {outcome:?}"),
    }
}

#[test]
fn consumable_capacity_allocates_shares_of_a_device() {
    let Some(allocator) = available("consumable_capacity_allocates_shares_of_a_device") else {
        return;
    };
    let on = Features {
        consumable_capacity: true,
        ..Features::default()
    };
    let mut case = shareable(on);
    case.claims = vec![memory_share("share", 30, 1)];
    let share = only_result(&ask(allocator, &case));
    assert_eq!(share.device, "gpu-0");
    // A fresh share id per allocation (a random UUID), and what it took.
    assert_eq!(
        share.share_id.as_ref().map(String::len),
        Some(36),
        "{share:?}"
    );
    let consumed = share
        .consumed_capacity
        .as_ref()
        .and_then(|c| c.get("memory"));
    assert_eq!(consumed.map(|q| q.0.as_str()), Some("30Gi"), "{share:?}");

    // Shares held by other claims count: 60 GiB held leaves room for 20, not 30.
    case.allocated = vec![held_share("first", 30), held_share("second", 30)];
    assert_cannot_allocate_all(allocator, &case);
    case.claims = vec![memory_share("small", 20, 1)];
    assert_eq!(got(allocator, &case), names(&["gpu-0"]));
    // One request may not take two shares of the same device.
    case.allocated = vec![];
    case.claims = vec![memory_share("twice", 10, 2)];
    assert_cannot_allocate_all(allocator, &case);

    // Without the feature the device is allocated whole: no share id, no
    // consumed capacity, and nothing left for a second claim.
    let mut off = shareable(Features::default());
    off.claims = vec![memory_share("share", 30, 1)];
    let outcome = ask(allocator, &off);
    assert_eq!(devices(&outcome), Ok(names(&["gpu-0"])));
    let whole = only_result(&outcome);
    assert_eq!((&whole.share_id, &whole.consumed_capacity), (&None, &None));
    off.allocated = vec![allocated("holder", json!([result("r", "gpu-0")]))];
    assert_cannot_allocate_all(allocator, &off);
}

/// Upstream bug in v0.36.2 (kubernetes/kubernetes#140436, its consumable
/// capacity path): a shared device an `All` request finds without the
/// capacity it asks is refused after the claim's matchAttribute constraint
/// took its attribute, and the constraint keeps it. Here a share takes all
/// of the model-A GPU, the `All` request meets it, and after backtracking
/// the share may not move to the model-B GPU: the pod is "unschedulable",
/// where the fixed allocator (tests/tools/allocator/fixes/) says what is
/// true, that `All` devices of two models cannot match. The contract test
/// met this with gpuslice's shared GPUs (docs/publication.md, "Upstream bugs
/// the contract meets").
#[test]
fn v0_36_2_keeps_the_constraint_entry_of_an_all_device_short_of_capacity() {
    let Some(allocator) =
        available("v0_36_2_keeps_the_constraint_entry_of_an_all_device_short_of_capacity")
    else {
        return;
    };
    let gpu = |name: &str, model: &str| {
        json!({
            "name": name,
            "allowMultipleAllocations": true,
            "attributes": { "model": { "string": model } },
            "capacity": { "memory": { "value": "80Gi", "requestPolicy": {
                "default": "80Gi", "validRange": { "min": "1Gi" } } } }
        })
    };
    let mut case = input(
        Features {
            consumable_capacity: true,
            ..Features::default()
        },
        vec![device_slice(
            0,
            1,
            json!([gpu("gpu-0", "A"), gpu("gpu-1", "B")]),
        )],
        vec![class("gpu", "true")],
    );
    case.claims = vec![claim(
        "pair",
        json!([
            exactly("share", "gpu", Some(1)),
            exactly("all", "gpu", None)
        ]),
        json!([{ "matchAttribute": format!("{DRIVER}/model") }]),
    )];
    assert_cannot_allocate_all(allocator, &case);
    let fixed = RealAllocator::with_fix("counter-leak-140436")
        .unwrap_or_else(|e| panic!("the fixed tool: {e}"));
    match ask(fixed, &case) {
        Outcome::Error { stage, reason, .. } => {
            assert_eq!(stage, Stage::Filter);
            assert!(
                reason.contains("cannot add device gpu.example.com/node-a/gpu-0 because a claim constraint would not be satisfied"),
                "{reason}"
            );
        }
        other => panic!("expected the constraint error, got {other:?}"),
    }
}
