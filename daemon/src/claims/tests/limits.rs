//! A claim's own `LimitsConfig` at prepare: refused under `[limits]
//! claim_override = "off"` (and looser-than-the-node under "stricter")
//! before anything is reserved, so nothing is left; kept in the record
//! otherwise, and only then.

use super::requests::request as req;
use crate::claims::ClaimError;
use crate::config::{ClaimOverride, LimitMode, LimitsConfig};
use crate::opaque::ClaimLimits;
use crate::testkit::requests::request_with;
use crate::testkit::{SimNode, SimNodeBuilder};

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000d1";

const END_IN_30: &str = r#"{"apiVersion":"gpuslice.dev/v1alpha1","kind":"LimitsConfig","overshare":"end","graceSeconds":30}"#;

fn node(claim_override: ClaimOverride, overshare: LimitMode) -> SimNode {
    SimNodeBuilder::h100s(1)
        .limits(LimitsConfig {
            overshare,
            claim_override,
            ..LimitsConfig::default()
        })
        .start()
}

fn refused_leaving_nothing(node: &SimNode, expected: &str) {
    let err = node
        .engine()
        .prepare(&request_with(A, &["gpu-0"], &[END_IN_30]))
        .unwrap_err();
    assert!(matches!(err, ClaimError::Limits(_)), "{err}");
    assert!(err.to_string().contains(expected), "{err}");
    assert!(!node.has_record(A));
    assert!(node.cdi_files().is_empty());
    assert!(node.engine().claims().is_empty());
    node.engine()
        .prepare(&req(A, &["gpu-0"]))
        .expect("the device is free again");
}

#[test]
fn off_refuses_a_claim_with_limits_and_leaves_nothing() {
    refused_leaving_nothing(
        &node(ClaimOverride::Off, LimitMode::Warn),
        "this node does not let claims set limits ([limits] claim_override = \"off\"); remove \
         the LimitsConfig or ask the node's admin",
    );
}

#[test]
fn stricter_refuses_a_looser_grace_and_leaves_nothing() {
    let node = SimNodeBuilder::h100s(1)
        .limits(LimitsConfig {
            overshare: LimitMode::End,
            grace_s: 10,
            claim_override: ClaimOverride::Stricter,
            ..LimitsConfig::default()
        })
        .start();
    refused_leaving_nothing(&node, "configs[0].graceSeconds: 30 is longer than");
}

#[test]
fn an_admitted_claims_limits_are_kept_in_its_record_and_survive_a_restart() {
    let mut node = node(ClaimOverride::Any, LimitMode::Warn);
    let prepared = node
        .engine()
        .prepare(&request_with(A, &["gpu-0"], &[END_IN_30]))
        .unwrap();
    let expected = Some(ClaimLimits {
        overshare: Some(LimitMode::End),
        grace_s: Some(30),
    });
    assert_eq!(prepared.record().limits, expected);
    let text = std::fs::read_to_string(node.record_path(A)).unwrap();
    let stored: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        stored["limits"],
        serde_json::json!({"overshare": "end", "grace_s": 30})
    );
    node.restart();
    assert_eq!(node.engine().claims()[0].limits, expected);
}

#[test]
fn a_record_without_limits_does_not_mention_them() {
    let node = node(ClaimOverride::Any, LimitMode::Warn);
    node.engine().prepare(&req(A, &["gpu-0"])).unwrap();
    let text = std::fs::read_to_string(node.record_path(A)).unwrap();
    assert!(!text.contains("limits"), "{text}");
}
