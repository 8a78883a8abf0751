use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::api::resource::v1::ResourceClaim;
use serde_json::json;

use super::{ClaimError, plan, request_name};

const UID: &str = "3f0b7d6e-4c1a-4e2b-9a8d-7c6b5a4f3e2d";
const DRIVER: &str = "gpu.nvidia.com";

fn claim(status: serde_json::Value) -> ResourceClaim {
    serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"namespace": "ml", "name": "train", "uid": UID},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
        "status": status,
    }))
    .expect("valid claim")
}

fn result(request: &str, driver: &str, device: &str) -> serde_json::Value {
    json!({"request": request, "driver": driver, "pool": "node-1", "device": device})
}

fn config(source: &str, driver: &str, requests: &[&str], tag: &str) -> serde_json::Value {
    json!({"source": source, "requests": requests,
           "opaque": {"driver": driver, "parameters": {"kind": "GpuConfig", "tag": tag}}})
}

#[test]
fn takes_only_our_results_with_subrequests_stripped() {
    let claim = claim(json!({"allocation": {"devices": {"results": [
        result("gpu", DRIVER, "gpu-0"),
        result("nic", "net.example.com", "eth-1"),
        result("big/h100", DRIVER, "gpu-1"),
    ]}}}));
    let plan = plan(&claim, UID, DRIVER).expect("plan");
    assert_eq!(
        plan.devices,
        vec![
            pb::AllocatedDevice {
                device: "gpu-0".into(),
                request_names: vec!["gpu".into()],
                pool: "node-1".into(),
                ..Default::default()
            },
            pb::AllocatedDevice {
                device: "gpu-1".into(),
                request_names: vec!["big".into()],
                pool: "node-1".into(),
                ..Default::default()
            },
        ]
    );
    assert!(plan.configs.is_empty());
}

#[test]
fn class_configs_come_first_then_claim_configs_in_order() {
    let claim = claim(json!({"allocation": {"devices": {
    "results": [result("gpu", DRIVER, "gpu-0")],
    "config": [
        config("FromClaim", DRIVER, &["gpu"], "claim-1"),
        config("FromClass", DRIVER, &[], "class-1"),
        config("FromClaim", "other.example.com", &[], "foreign"),
        config("FromClaim", DRIVER, &["gpu/sub"], "claim-2"),
        config("FromClass", DRIVER, &[], "class-2"),
    ]}}}));
    let configs = plan(&claim, UID, DRIVER).expect("plan").configs;
    let tags: Vec<String> = configs
        .iter()
        .map(|c| {
            let v: serde_json::Value = serde_json::from_str(&c.parameters_json).expect("json");
            v["tag"].as_str().expect("tag").to_owned()
        })
        .collect();
    assert_eq!(tags, ["class-1", "class-2", "claim-1", "claim-2"]);
    assert_eq!(configs[0].source, i32::from(pb::ConfigSource::Class));
    assert_eq!(configs[2].source, i32::from(pb::ConfigSource::Claim));
    assert_eq!(configs[2].requests, ["gpu"]);
    assert_eq!(configs[3].requests, ["gpu"], "sub-request stripped");
    assert!(configs[0].requests.is_empty());
}

#[test]
fn parameters_pass_through_as_the_same_json() {
    let params = json!({"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
                        "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50}}});
    let claim = claim(json!({"allocation": {"devices": {
        "results": [result("gpu", DRIVER, "gpu-0")],
        "config": [{"source": "FromClaim", "opaque": {"driver": DRIVER, "parameters": params}}]}}}));
    let configs = plan(&claim, UID, DRIVER).expect("plan").configs;
    let back: serde_json::Value = serde_json::from_str(&configs[0].parameters_json).expect("json");
    assert_eq!(back, params);
}

#[test]
fn refuses_a_replaced_claim() {
    let claim =
        claim(json!({"allocation": {"devices": {"results": [result("gpu", DRIVER, "gpu-0")]}}}));
    let other = "4f0b7d6e-4c1a-4e2b-9a8d-7c6b5a4f3e2d";
    let err = plan(&claim, other, DRIVER).expect_err("uid differs");
    assert!(matches!(err, ClaimError::UidMismatch { ref found, .. } if found == UID));
    assert!(err.to_string().contains("re-created"), "{err}");
}

#[test]
fn refuses_an_unallocated_claim() {
    for status in [json!(null), json!({}), json!({"allocation": {}})] {
        let err = plan(&claim(status), UID, DRIVER).expect_err("not allocated");
        assert_eq!(
            err,
            ClaimError::NotAllocated {
                claim: "ml/train".into()
            }
        );
    }
}

#[test]
fn refuses_a_claim_without_our_devices() {
    let claim = claim(
        json!({"allocation": {"devices": {"results": [result("nic", "net.example.com", "eth-1")]}}}),
    );
    let err = plan(&claim, UID, DRIVER).expect_err("none ours");
    assert!(matches!(err, ClaimError::NoDevices { .. }));
}

#[test]
fn refuses_an_unknown_config_source() {
    let claim = claim(json!({"allocation": {"devices": {
        "results": [result("gpu", DRIVER, "gpu-0")],
        "config": [config("FromSomewhere", DRIVER, &[], "x")]}}}));
    let err = plan(&claim, UID, DRIVER).expect_err("unknown source");
    assert!(err.to_string().contains("FromSomewhere"), "{err}");
}

#[test]
fn request_names() {
    assert_eq!(request_name("gpu"), "gpu");
    assert_eq!(request_name("gpu/h100"), "gpu");
    assert_eq!(request_name(""), "");
}

#[test]
fn consumed_memory_and_share_ids_go_along() {
    let mut shared = result("gpu", DRIVER, "gpu-0");
    shared["consumedCapacity"] = json!({"memory": "10Gi"});
    shared["shareID"] = json!("0b6f2c4e-7a1d-4e8b-9c3f-5d2a1b0e9f87");
    let claim = claim(json!({"allocation": {"devices": {"results": [shared]}}}));
    let planned = plan(&claim, UID, DRIVER).expect("plan");
    assert_eq!(planned.devices[0].consumed_memory_bytes, Some(10 << 30));
    assert_eq!(
        planned.devices[0].share_id,
        "0b6f2c4e-7a1d-4e8b-9c3f-5d2a1b0e9f87"
    );
    let mut bad = result("gpu", DRIVER, "gpu-0");
    bad["consumedCapacity"] = json!({"memory": "100m"});
    let err = plan(&claim_of(bad), UID, DRIVER).expect_err("a milli amount of memory");
    assert!(err.to_string().contains("\"100m\""), "{err}");
}

fn claim_of(result: serde_json::Value) -> ResourceClaim {
    claim(json!({"allocation": {"devices": {"results": [result]}}}))
}
