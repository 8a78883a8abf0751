//! Targets from claims and classes, claims whole, and files that cannot be
//! used.

use std::collections::BTreeMap;

use super::{InputError, parse};

const CLAIM: &str = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: big.example.com}
spec:
  selectors:
  - cel: {expression: "device.driver == 'gpu.nvidia.com'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: train}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: big.example.com
        selectors:
        - cel: {expression: "device.attributes['gpu.nvidia.com'].type == 'gpu'"}
    - name: slice
      firstAvailable:
      - name: small
        deviceClassName: mig.nvidia.com
      - name: other
        deviceClassName: unknown.example.com
"#;

#[test]
fn claims_take_their_class_selectors_first() {
    let known = BTreeMap::from([("mig.nvidia.com".to_owned(), vec!["m".to_owned()])]);
    let targets = parse(CLAIM)
        .and_then(|d| d.targets(&known))
        .unwrap_or_else(|e| panic!("{e}"));
    let summary: Vec<(String, Vec<String>, usize)> = targets
        .iter()
        .map(|t| {
            (
                t.label.clone(),
                t.selectors.iter().map(|s| s.origin.clone()).collect(),
                t.notes.len(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "claim train, request gpu".to_owned(),
                vec![
                    "class big.example.com, selector 1".to_owned(),
                    "claim train, request gpu, selector 1".to_owned()
                ],
                0
            ),
            (
                "claim train, request slice/small".to_owned(),
                vec!["class mig.nvidia.com, selector 1".to_owned()],
                0
            ),
            ("claim train, request slice/other".to_owned(), vec![], 1),
        ]
    );
}

#[test]
fn classes_alone_and_bad_files() {
    let text =
        "kind: DeviceClass\nmetadata: {name: a}\nspec: {selectors: [{cel: {expression: x}}]}\n";
    let targets = parse(text)
        .and_then(|d| d.targets(&BTreeMap::new()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(targets[0].label, "class a");
    assert_eq!(targets[0].selectors[0].expression, "x");
    let pod = parse("kind: Pod\nmetadata: {name: p}\n").and_then(|d| d.targets(&BTreeMap::new()));
    assert_eq!(pod, Err(InputError::Empty(vec!["Pod p".to_owned()])));
    assert!(matches!(parse("a: [\n"), Err(InputError::Yaml { .. })));
    assert_eq!(
        parse("").and_then(|d| d.targets(&BTreeMap::new())),
        Err(InputError::Empty(vec![]))
    );
    let no_cel = "kind: DeviceClass\nmetadata: {name: a}\nspec: {selectors: [{}]}\n";
    assert!(matches!(
        parse(no_cel),
        Err(InputError::NoExpression { .. })
    ));
}

#[test]
fn claims_are_kept_whole_in_the_v1_shape() {
    let v1beta1 = r#"
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaimTemplate
metadata: {name: old, namespace: team}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        deviceClassName: gpu.nvidia.com
        count: 2
        selectors:
        - cel: {expression: "true"}
      constraints:
      - {matchAttribute: gpu.nvidia.com/productName}
"#;
    let docs = parse(&format!("{CLAIM}---{v1beta1}")).unwrap_or_else(|e| panic!("{e}"));
    let labels: Vec<&str> = docs.claims.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["claim train", "template old"]);
    let old = &docs.claims[1].claim;
    assert_eq!(old.metadata.namespace.as_deref(), Some("team"));
    let devices = old.spec.devices.as_ref().expect("devices");
    let exactly = devices.requests.as_ref().expect("requests")[0]
        .exactly
        .as_ref()
        .expect("moved under exactly");
    assert_eq!(
        (exactly.device_class_name.as_str(), exactly.count),
        ("gpu.nvidia.com", Some(2))
    );
    let train = &docs.claims[0].claim;
    let first = &train
        .spec
        .devices
        .as_ref()
        .expect("devices")
        .requests
        .as_ref()
        .expect("requests")[1];
    assert_eq!(first.first_available.as_ref().map(Vec::len), Some(2));
    // Targets know their claim.
    let targets = docs
        .targets(&BTreeMap::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let claims: Vec<Option<usize>> = targets.iter().map(|t| t.claim).collect();
    assert_eq!(claims, [Some(0), Some(0), Some(0), Some(1)]);
}

#[test]
fn a_claim_that_is_not_a_claim_spec_is_refused_by_name() {
    let bad = "kind: ResourceClaim\nmetadata: {name: bad}\nspec:\n  devices:\n    requests:\n    - name: r\n      exactly: {deviceClassName: gpu.nvidia.com, count: two}\n";
    match parse(bad) {
        Err(InputError::Claim { label, message }) => {
            assert_eq!(label, "claim bad");
            assert!(
                message.contains("not a resource.k8s.io/v1 claim spec"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}
