//! One claim judged now and on an empty node, and what falls short.

use k8s_openapi::api::resource::v1::ResourceSliceSpec;

use crate::allocate::tests::fixtures::{
    claim, classes, consuming, gpu, holding, pool, slice_dev, tainted, with_counters,
};
use crate::allocate::{Blocker, Fit, Held, Judgement, Shortfall, When, judge};

/// The README's node, MIG part: 3g.40gb, 2g.20gb and two 1g.10gb slices on
/// each of two GPUs, and one whole GPU.
fn node() -> Vec<ResourceSliceSpec> {
    let mut devices = vec![gpu("gpu-2", "NVIDIA H100 80GB HBM3")];
    for g in ["0", "1"] {
        let parent = format!("GPU-{g}");
        for (name, profile) in [
            ("3g40gb-4", "3g.40gb"),
            ("2g20gb-0", "2g.20gb"),
            ("1g10gb-2", "1g.10gb"),
            ("1g10gb-3", "1g.10gb"),
        ] {
            devices.push(slice_dev(&format!("gpu-{g}-mig-{name}"), &parent, profile));
        }
    }
    pool(devices)
}

fn judged(slices: &[ResourceSliceSpec], devices: &str, held: &Held) -> Judgement {
    judge(slices, &classes(), &claim("c", devices), held).expect("judge")
}

fn shortfalls(fit: &Fit) -> Vec<Shortfall> {
    match fit {
        Fit::Yes { devices } => panic!("fits: {devices:?}"),
        Fit::No { shortfalls } => shortfalls.clone(),
    }
}

const FIVE: &str = "requests: [{name: slices, exactly: {deviceClassName: mig.example, count: 5, \
    selectors: [{cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == '3g.40gb'\"}}]}}]";

#[test]
fn more_devices_than_exist_never_fit_and_say_by_how_much() {
    let j = judged(&node(), FIVE, &holding(&["gpu-0-mig-3g40gb-4"]));
    let short = shortfalls(&j.empty_node);
    assert_eq!(short.len(), 1, "{short:?}");
    assert!(
        matches!(
            &short[0],
            Shortfall::Devices {
                needs: 5,
                exist: 2,
                usable: 2,
                free: 1,
                all: false,
                when: When::EmptyNode,
                ..
            }
        ),
        "{short:?}"
    );
    assert_eq!(
        short[0].to_string(),
        "request slices: needs 5 devices matching class mig.example and its selectors; \
         2 exist on this node, 1 is free now"
    );
    assert!(!j.now.fits());
}

#[test]
fn a_claim_whose_devices_are_held_fits_only_on_an_empty_node() {
    let two = FIVE.replace("count: 5", "count: 2");
    let j = judged(&node(), &two, &holding(&["gpu-1-mig-3g40gb-4"]));
    assert!(j.empty_node.fits());
    let short = shortfalls(&j.now);
    assert_eq!(
        short[0].to_string(),
        "request slices: needs 2 devices matching class mig.example and its selectors; \
         2 exist on this node, 1 is free now"
    );
    let Shortfall::Devices { blocked, .. } = &short[0] else {
        panic!("{short:?}")
    };
    assert_eq!(blocked[0].device, "gpu-1-mig-3g40gb-4");
    assert_eq!(blocked[0].blocker, Blocker::Held);
    let j = judged(&node(), &two, &Held::default());
    assert_eq!(
        j.now,
        Fit::Yes {
            devices: vec![
                crate::allocate::Assigned {
                    request: "slices".to_owned(),
                    device: "gpu-0-mig-3g40gb-4".to_owned()
                },
                crate::allocate::Assigned {
                    request: "slices".to_owned(),
                    device: "gpu-1-mig-3g40gb-4".to_owned()
                },
            ]
        }
    );
}

#[test]
fn match_attribute_shortfall_names_the_best_set() {
    // Three 1g.10gb slices on one GPU are wanted; each GPU has two.
    let three = "requests: [{name: mig, exactly: {deviceClassName: mig.example, count: 3, \
        selectors: [{cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'\"}}]}}]\n\
        constraints: [{requests: [mig], matchAttribute: gpu.nvidia.com/parentUUID}]";
    let j = judged(&node(), three, &Held::default());
    let short = shortfalls(&j.empty_node);
    assert_eq!(
        short,
        [Shortfall::Constraint {
            attribute: "gpu.nvidia.com/parentUUID".to_owned(),
            distinct: false,
            requests: vec!["mig".to_owned()],
            needs: 3,
            best: 2,
            value: Some("GPU-0".to_owned()),
            when: When::EmptyNode,
        }]
    );
    assert_eq!(
        short[0].to_string(),
        "no set of 3 devices for request mig agrees on gpu.nvidia.com/parentUUID on an empty node; \
         the best has 2 (gpu.nvidia.com/parentUUID GPU-0)"
    );
}

#[test]
fn requests_that_fit_alone_but_not_together() {
    let both = "requests: [{name: a, exactly: {deviceClassName: gpu.example}}, \
                           {name: b, exactly: {deviceClassName: gpu.example}}]";
    let short = shortfalls(&judged(&node(), both, &Held::default()).empty_node);
    assert_eq!(
        short,
        [Shortfall::Together {
            requests: vec!["a".to_owned(), "b".to_owned()],
            needs: 2,
            free: 1,
            when: When::EmptyNode,
        }]
    );
}

#[test]
fn all_names_the_devices_it_cannot_take() {
    let slices = pool(vec![
        slice_dev("s-0", "GPU-0", "1g.10gb"),
        tainted(
            slice_dev("s-1", "GPU-0", "1g.10gb"),
            "gpu.nvidia.com/unhealthy",
        ),
        slice_dev("s-2", "GPU-0", "1g.10gb"),
    ]);
    let all =
        "requests: [{name: all, exactly: {deviceClassName: mig.example, allocationMode: All}}]";
    let j = judged(&slices, all, &holding(&["s-2"]));
    assert_eq!(
        shortfalls(&j.now)[0].to_string(),
        "request all: allocationMode All takes every device matching class mig.example (3 here), \
         and 2 cannot be taken now: s-1 (tainted gpu.nvidia.com/unhealthy:NoSchedule, not tolerated), \
         s-2 (held by another claim)"
    );
    assert_eq!(
        shortfalls(&j.empty_node)[0].to_string(),
        "request all: allocationMode All takes every device matching class mig.example (3 here), \
         and 1 cannot be taken on an empty node: s-1 (tainted gpu.nvidia.com/unhealthy:NoSchedule, not tolerated)"
    );
}

#[test]
fn counters_limit_how_many_fit_together() {
    let slices = with_counters(
        pool(vec![
            consuming(slice_dev("s-0", "GPU-0", "3g.20gb"), "g", 4),
            consuming(slice_dev("s-1", "GPU-0", "3g.20gb"), "g", 4),
            consuming(slice_dev("s-2", "GPU-0", "3g.20gb"), "g", 4),
        ]),
        &[("g", 8)],
    );
    let three = "requests: [{name: s, exactly: {deviceClassName: mig.example, count: 3}}]";
    let short = shortfalls(&judged(&slices, three, &Held::default()).empty_node);
    assert!(
        matches!(
            &short[0],
            Shortfall::Devices {
                free: 3,
                together: Some(2),
                ..
            }
        ),
        "{short:?}"
    );
    assert!(
        short[0].to_string().ends_with(
            "3 are free now; at most 2 can be allocated together (counters or capacity)"
        ),
        "{}",
        short[0]
    );
}

#[test]
fn first_available_falls_short_when_every_alternative_does() {
    let alternatives = "requests: [{name: r, firstAvailable: [\
        {name: whole, deviceClassName: gpu.example, count: 2}, \
        {name: big, deviceClassName: mig.example, count: 3, \
         selectors: [{cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == '3g.40gb'\"}}]}]}]";
    let short = shortfalls(&judged(&node(), alternatives, &Held::default()).empty_node);
    let named: Vec<String> = short
        .iter()
        .filter_map(|s| match s {
            Shortfall::Devices { request, .. } => Some(request.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(named, ["r/whole", "r/big"]);
}

#[test]
fn a_claim_the_scheduler_refuses_says_why() {
    let unknown = "requests: [{name: r, exactly: {deviceClassName: nope.example}}]";
    let j = judged(&node(), unknown, &Held::default());
    assert!(
        matches!(&shortfalls(&j.now)[0], Shortfall::Refused { message } if message.contains("device class nope.example does not exist")),
        "{j:?}"
    );
    assert_eq!(j.now, j.empty_node);
}
