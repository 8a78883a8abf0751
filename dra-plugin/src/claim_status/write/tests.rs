//! The apply's body and the reading of its answer.

use k8s_openapi::api::resource::v1::{AllocatedDeviceStatus, ResourceClaim, ResourceClaimStatus};

use super::{Answer, ClaimRef, WriteError, body, kept};
use crate::claim_status::plan::Outcome;
use crate::probe::Refusal;
use crate::probe::answer::verdict;

fn claim() -> ClaimRef {
    ClaimRef {
        namespace: "ml".to_owned(),
        name: "infer-a".to_owned(),
        uid: "7a1e".to_owned(),
    }
}

fn entry(driver: &str, device: &str) -> AllocatedDeviceStatus {
    AllocatedDeviceStatus {
        driver: driver.to_owned(),
        pool: "node-1".to_owned(),
        device: device.to_owned(),
        ..AllocatedDeviceStatus::default()
    }
}

#[test]
fn the_body_holds_identity_and_our_entries_only() {
    let b = body(&claim(), &[entry("gpu.nvidia.com", "gpu-0")]);
    let keys: Vec<&String> = b.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["apiVersion", "kind", "metadata", "status"]);
    assert_eq!(b["apiVersion"], "resource.k8s.io/v1");
    assert_eq!(b["kind"], "ResourceClaim");
    assert_eq!(
        b["metadata"],
        serde_json::json!({"name": "infer-a", "namespace": "ml", "uid": "7a1e"})
    );
    let status: Vec<&String> = b["status"].as_object().expect("status").keys().collect();
    assert_eq!(status, ["devices"], "never allocation or reservedFor");
    assert_eq!(b["status"]["devices"][0]["device"], "gpu-0");
    // Unprepared: an empty list, which drops our entries.
    assert_eq!(
        body(&claim(), &[])["status"]["devices"],
        serde_json::json!([])
    );
}

#[test]
fn an_answer_without_our_entries_is_a_drop() {
    let sent = [
        entry("gpu.nvidia.com", "gpu-0"),
        entry("gpu.nvidia.com", "gpu-1"),
    ];
    let answer = |devices: Vec<AllocatedDeviceStatus>| ResourceClaim {
        status: Some(ResourceClaimStatus {
            devices: Some(devices),
            ..ResourceClaimStatus::default()
        }),
        ..ResourceClaim::default()
    };
    let other = entry("other.example.com", "gpu-0");
    assert_eq!(
        kept(
            &sent,
            &answer(vec![other.clone(), sent[0].clone(), sent[1].clone()])
        ),
        Answer::Kept
    );
    assert_eq!(
        kept(&sent, &answer(vec![other, sent[0].clone()])),
        Answer::Dropped
    );
    assert_eq!(kept(&sent, &ResourceClaim::default()), Answer::Dropped);
    assert_eq!(kept(&[], &ResourceClaim::default()), Answer::Kept);
}

#[test]
fn refusals_of_the_claim_end_it_and_the_rest_are_retried() {
    // Refused is made only of an answer read as a verdict (a 409 only
    // from the uid precondition).
    let refused = |code, message: &str| WriteError::Refused {
        namespace: "ml".to_owned(),
        name: "infer-a".to_owned(),
        refusal: Refusal {
            verdict: verdict(code, message).expect("a verdict"),
            code,
            message: message.to_owned(),
        },
    };
    let replaced = "Precondition failed: UID in precondition: 9, UID in object meta: 7";
    for (code, message, want) in [
        (404, "", Outcome::Done),
        (409, replaced, Outcome::Done),
        (422, "", Outcome::Done),
        (400, "", Outcome::Done),
        (401, "", Outcome::Failed),
        (403, "", Outcome::Failed),
    ] {
        assert_eq!(refused(code, message).outcome(), want, "{code}");
    }
}
