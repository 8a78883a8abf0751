use std::collections::BTreeSet;

use serde_json::json;

use super::*;

fn domain(uid: &str) -> ComputeDomain {
    serde_json::from_value(json!({
        "apiVersion": "resource.nvidia.com/v1beta1",
        "kind": "ComputeDomain",
        "metadata": {"name": "training", "namespace": "ml", "uid": uid},
        "spec": {"numNodes": 2, "channel": {"resourceClaimTemplate": {"name": "training-channel"}}}
    }))
    .expect("a ComputeDomain")
}

const UID: &str = "5b9c2d0e-7a41-4f3b-9c8d-2e6f1a0b3c4d";

#[test]
fn the_plugins_template_is_nvidias_owned_by_its_domain_without_a_finalizer() {
    let cd = domain(UID);
    let nvidias = workload_template(&cd).expect("NVIDIA's");
    let owned = owned_template(&cd).expect("ours");
    assert_eq!(owned.spec, nvidias.spec);
    assert_eq!(owned.metadata.labels, nvidias.metadata.labels);
    assert_eq!(owned.metadata.finalizers, None);
    let owner = json!(owned.metadata.owner_references);
    assert_eq!(
        owner,
        json!([{"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain",
                "name": "training", "uid": UID, "controller": true}])
    );
}

#[test]
fn a_template_found_is_taken_only_when_it_is_the_domains() {
    let made = owned_template(&domain(UID)).expect("ours");
    assert_eq!(check_found(&made, &made), Ok(()));
    let other = owned_template(&domain("6c0d3e1f-8b52-4a4c-8d9e-3f7a2b1c4d5e")).expect("theirs");
    assert!(matches!(
        check_found(&other, &made),
        Err(NotTheDomains::Label { .. })
    ));
    let mut unowned = made.clone();
    unowned.metadata.owner_references = None;
    let err = check_found(&unowned, &made).expect_err("no owner");
    assert_eq!(
        err.to_string(),
        "it has no ownerReference to the domain (controller) but none"
    );
    let mut changed = made.clone();
    if let Some(devices) = changed.spec.spec.devices.as_mut() {
        devices.config = None;
    }
    assert_eq!(check_found(&changed, &made), Err(NotTheDomains::Spec));
}

#[test]
fn creation_delays_are_stable_within_the_window_and_spread_out() {
    assert_eq!(creation_delay("node-1", UID), creation_delay("node-1", UID));
    let delays: Vec<Duration> = (0..1000)
        .map(|n| creation_delay(&format!("ip-10-0-{}-{}", n / 250, n % 250), UID))
        .collect();
    assert!(delays.iter().all(|d| *d <= CREATION_WINDOW));
    let distinct: BTreeSet<Duration> = delays.iter().copied().collect();
    assert!(distinct.len() > 990, "{}", distinct.len());
    let mut sorted = delays.clone();
    sorted.sort();
    // Of 1,000 nodes, few begin within 0.1 s of the first.
    let early = sorted
        .iter()
        .filter(|d| **d < sorted[0] + Duration::from_millis(100))
        .count();
    assert!(early <= 3, "{early} nodes within 0.1 s of the first");
    // Of 4, the first waits at most the window, and usually far less.
    let small: Vec<Duration> = (1..=4)
        .map(|n| creation_delay(&format!("node-{n}"), UID))
        .collect();
    assert!(small.iter().min().is_some_and(|d| *d < CREATION_WINDOW));
}
