//! Whole devices: first fit, a held device, `matchAttribute`, `All`, taints,
//! the scheduler's refusals, claim configs.

use serde_json::json;

use super::{ask, assert_cannot_allocate_all, assert_unschedulable, got, gpu, names, whole_gpus};
use crate::objects::{
    DRIVER, allocated, claim, class, device_slice, exactly, input, one_request_claim, result,
};
use crate::tool::{Features, Outcome, Stage, available};

#[test]
fn first_fit_skips_a_held_device() {
    let Some(allocator) = available("first_fit_skips_a_held_device") else {
        return;
    };
    let mut case = whole_gpus();
    case.claims = vec![one_request_claim("one", "gpu", Some(1))];
    assert_eq!(got(allocator, &case), names(&["gpu-0"]));
    case.allocated = vec![allocated("holder", json!([result("r", "gpu-0")]))];
    assert_eq!(got(allocator, &case), names(&["gpu-1"]));
}

#[test]
fn match_attribute_backtracks_to_devices_that_agree() {
    let Some(allocator) = available("match_attribute_backtracks_to_devices_that_agree") else {
        return;
    };
    let mut case = whole_gpus();
    let requests = json!([exactly("a", "gpu", Some(1)), exactly("b", "gpu", Some(1))]);
    let same_model = json!([{ "matchAttribute": format!("{DRIVER}/model") }]);
    case.claims = vec![claim("pair", requests.clone(), same_model.clone())];
    // gpu-0 (A100) first, no second A100: back to gpu-1 and gpu-2 (H100).
    assert_eq!(got(allocator, &case), names(&["gpu-1", "gpu-2"]));
    case.allocated = vec![allocated("holder", json!([result("r", "gpu-2")]))];
    assert_cannot_allocate_all(allocator, &case);
}

#[test]
fn all_takes_every_device_and_none_when_one_is_held() {
    let Some(allocator) = available("all_takes_every_device_and_none_when_one_is_held") else {
        return;
    };
    let mut case = whole_gpus();
    case.claims = vec![one_request_claim("every", "gpu", None)];
    assert_eq!(got(allocator, &case), names(&["gpu-0", "gpu-1", "gpu-2"]));
    case.allocated = vec![allocated("holder", json!([result("r", "gpu-1")]))];
    assert_cannot_allocate_all(allocator, &case);
}

#[test]
fn a_tainted_device_is_skipped_only_with_device_taints_on() {
    let Some(allocator) = available("a_tainted_device_is_skipped_only_with_device_taints_on")
    else {
        return;
    };
    let mut tainted = gpu("gpu-0", "H100");
    tainted["taints"] =
        json!([{ "key": "gpu.example.com/xid", "value": "79", "effect": "NoSchedule" }]);
    let mut case = input(
        Features::default(),
        vec![device_slice(0, 1, json!([tainted, gpu("gpu-1", "H100")]))],
        vec![class("gpu", "true")],
    );
    case.claims = vec![one_request_claim("one", "gpu", Some(1))];
    // Off, taints are not looked at: first fit takes the tainted device.
    assert_eq!(got(allocator, &case), names(&["gpu-0"]));
    case.features.device_taints = true;
    assert_eq!(got(allocator, &case), names(&["gpu-1"]));
}

#[test]
fn the_scheduler_refuses_a_missing_class_and_errs_on_a_bad_selector() {
    let Some(allocator) =
        available("the_scheduler_refuses_a_missing_class_and_errs_on_a_bad_selector")
    else {
        return;
    };
    let mut case = whole_gpus();
    case.claims = vec![one_request_claim("lost", "no-such-class", Some(1))];
    assert_unschedulable(
        &ask(allocator, &case),
        Stage::Prefilter,
        "device class no-such-class does not exist",
    );
    case.classes = vec![class("gpu", "device.attributes['gpu.example.com'].model +")];
    case.claims = vec![one_request_claim("bad", "gpu", Some(1))];
    match ask(allocator, &case) {
        Outcome::Error {
            stage: Stage::Filter,
            reason,
            allocator: Some(channel),
        } if reason.contains("CEL compile error") && channel == "stable" => {}
        other => panic!("expected a scheduling error for the selector, got {other:?}"),
    }
}

/// In v0.36.2 a claim config naming several requests is copied into the
/// allocation once per request it names (kubernetes/kubernetes commit
/// d3c9544e, after this tag, copies it once). The copies are adjacent, so
/// "later wins" reads them the same.
#[test]
fn a_config_naming_two_requests_is_copied_once_per_request() {
    let Some(allocator) = available("a_config_naming_two_requests_is_copied_once_per_request")
    else {
        return;
    };
    let mut case = whole_gpus();
    let mut pair = claim(
        "pair",
        json!([exactly("a", "gpu", Some(1)), exactly("b", "gpu", Some(1))]),
        json!([]),
    );
    let config = json!([{ "requests": ["a", "b"],
        "opaque": { "driver": DRIVER, "parameters": { "sharing": "mps" } } }]);
    if let Some(devices) = pair.spec.devices.as_mut() {
        devices.config = Some(serde_json::from_value(config).expect("config"));
    }
    case.claims = vec![pair];
    let outcome = ask(allocator, &case);
    let Outcome::Allocated {
        allocator: channel,
        allocations,
    } = &outcome
    else {
        panic!("expected an allocation, got {outcome:?}");
    };
    assert_eq!(
        (channel.as_str(), allocations[0].claim.as_str()),
        ("stable", "default/pair")
    );
    let configs = allocations[0]
        .allocation
        .devices
        .as_ref()
        .and_then(|d| d.config.clone());
    let configs = configs.unwrap_or_default();
    assert_eq!(configs.len(), 2, "{configs:?}");
    assert_eq!(configs[0], configs[1]);
    assert_eq!(
        configs[0].requests.as_deref(),
        Some(&["a".to_owned(), "b".to_owned()][..])
    );
    assert_eq!(configs[0].source, "FromClaim");
}

/// Upstream tries every combination of the requests before one that can
/// never be served (here `All` of a class no device is in) before it says
/// unschedulable; kube-scheduler bounds that by its filter timeout. The
/// tool's budget of allocateOne calls stands in for it, by count, so the
/// answer does not depend on the machine.
#[test]
fn a_budget_of_allocate_one_calls_stands_in_for_the_filter_timeout() {
    let Some(allocator) =
        available("a_budget_of_allocate_one_calls_stands_in_for_the_filter_timeout")
    else {
        return;
    };
    let gpus: Vec<_> = (0..12).map(|i| gpu(&format!("gpu-{i}"), "H100")).collect();
    let mut case = input(
        Features::default(),
        vec![device_slice(0, 1, json!(gpus))],
        vec![class("gpu", "true"), class("none", "false")],
    );
    case.claims = vec![claim(
        "hopeless",
        json!([
            exactly("a", "gpu", Some(3)),
            exactly("b", "gpu", Some(3)),
            exactly("c", "none", None)
        ]),
        json!([]),
    )];
    assert_cannot_allocate_all(allocator, &case);
    case.max_allocate_one_calls = Some(1000);
    match ask(allocator, &case) {
        Outcome::Limit { calls, reason, .. } => {
            assert!(calls > 1000, "{calls}");
            assert!(
                reason.contains("more than 1000 allocateOne calls"),
                "{reason}"
            );
        }
        other => panic!("expected the budget to run out, got {other:?}"),
    }
    // Within the budget, the answer is the allocator's.
    case.claims = vec![claim(
        "one",
        json!([exactly("a", "gpu", Some(1))]),
        json!([]),
    )];
    assert_eq!(got(allocator, &case), names(&["gpu-0"]));
}
