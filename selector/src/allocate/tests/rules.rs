//! Each rule of the allocator on a small pool.

use crate::allocate::tests::fixtures::{
    claim, consuming, gpu, holding, pool, run, shareable, slice_dev, strings, tainted,
    with_counters, with_memory,
};
use crate::allocate::{AllocateError, Held, allocate};
use k8s_openapi::api::resource::v1::ResourceClaim;

fn four_slices() -> Vec<k8s_openapi::api::resource::v1::ResourceSliceSpec> {
    pool(vec![
        slice_dev("a-0", "GPU-A", "1g.10gb"),
        slice_dev("a-1", "GPU-A", "3g.40gb"),
        slice_dev("b-0", "GPU-B", "1g.10gb"),
        slice_dev("b-1", "GPU-B", "3g.40gb"),
    ])
}

const BIG: &str = "selectors: [{cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == '3g.40gb'\"}}]";

/// A pool of `count` 1g.10gb MIG slices of one GPU, `s-0` onward.
fn small_mig_slices(count: usize) -> Vec<k8s_openapi::api::resource::v1::ResourceSliceSpec> {
    let devices = (0..count)
        .map(|i| slice_dev(&format!("s-{i}"), "GPU-0", "1g.10gb"))
        .collect();
    pool(devices)
}

#[test]
fn exact_count_takes_that_many_first_fit_or_fails() {
    let slices = four_slices();
    let two = claim(
        "c",
        &format!(
            "requests: [{{name: big, exactly: {{deviceClassName: mig.example, count: 2, {BIG}}}}}]"
        ),
    );
    assert_eq!(
        run(&slices, &[two], &Held::default()),
        Some(vec![strings(&["big=a-1", "big=b-1"])])
    );
    let three = claim(
        "c",
        &format!(
            "requests: [{{name: big, exactly: {{deviceClassName: mig.example, count: 3, {BIG}}}}}]"
        ),
    );
    assert_eq!(run(&slices, &[three], &Held::default()), None);
    let one = claim(
        "c",
        "requests: [{name: any, exactly: {deviceClassName: mig.example}}]",
    );
    assert_eq!(
        run(&slices, std::slice::from_ref(&one), &Held::default()),
        Some(vec![strings(&["any=a-0"])]),
        "count defaults to 1"
    );
    assert_eq!(
        run(&slices, &[one], &holding(&["a-0", "a-1"])),
        Some(vec![strings(&["any=b-0"])]),
        "held devices are skipped"
    );
}

#[test]
fn all_takes_every_selected_device_or_none() {
    let slices = four_slices();
    let all = claim(
        "c",
        "requests: [{name: all, exactly: {deviceClassName: mig.example, allocationMode: All}}]",
    );
    assert_eq!(
        run(&slices, std::slice::from_ref(&all), &Held::default()),
        Some(vec![strings(&["all=a-0", "all=a-1", "all=b-0", "all=b-1"])])
    );
    assert_eq!(
        run(&slices, std::slice::from_ref(&all), &holding(&["b-0"])),
        None,
        "one selected device held fails All"
    );
    let tainted_pool = pool(vec![
        slice_dev("a-0", "GPU-A", "1g.10gb"),
        tainted(
            slice_dev("a-1", "GPU-A", "1g.10gb"),
            "gpu.nvidia.com/unhealthy",
        ),
    ]);
    assert_eq!(
        run(&tainted_pool, std::slice::from_ref(&all), &Held::default()),
        None
    );
    let tolerant = claim(
        "c",
        "requests: [{name: all, exactly: {deviceClassName: mig.example, allocationMode: All, \
         tolerations: [{key: gpu.nvidia.com/unhealthy, operator: Exists}]}}]",
    );
    assert_eq!(
        run(&tainted_pool, &[tolerant], &Held::default()),
        Some(vec![strings(&["all=a-0", "all=a-1"])])
    );
    let none = pool(vec![gpu("g-0", "H100")]);
    assert_eq!(
        run(&none, &[all], &Held::default()),
        None,
        "All needs one device"
    );
}

#[test]
fn two_claims_of_a_pod_never_share_a_device() {
    let slices = four_slices();
    let c = |n: &str| {
        claim(
            n,
            &format!("requests: [{{name: big, exactly: {{deviceClassName: mig.example, {BIG}}}}}]"),
        )
    };
    assert_eq!(
        run(&slices, &[c("x"), c("y")], &Held::default()),
        Some(vec![strings(&["big=a-1"]), strings(&["big=b-1"])])
    );
    assert_eq!(
        run(&slices, &[c("x"), c("y"), c("z")], &Held::default()),
        None
    );
}

#[test]
fn match_attribute_backtracks_to_a_set_that_agrees() {
    let slices = four_slices();
    let pair = claim(
        "c",
        "requests: [{name: small, exactly: {deviceClassName: mig.example}}, \
                    {name: other, exactly: {deviceClassName: mig.example}}]\n\
         constraints: [{matchAttribute: gpu.nvidia.com/parentUUID}]",
    );
    // a-0 is held: small takes a-1 first, other then needs GPU-A: none left,
    // so small moves to b-0 and other takes b-1.
    assert_eq!(
        run(&slices, std::slice::from_ref(&pair), &holding(&["a-0"])),
        Some(vec![strings(&["small=b-0", "other=b-1"])])
    );
    assert_eq!(run(&slices, &[pair], &holding(&["a-0", "b-1"])), None);
    // A constraint on one request leaves the other free.
    let one = claim(
        "c",
        "requests: [{name: small, exactly: {deviceClassName: mig.example}}, \
                    {name: other, exactly: {deviceClassName: mig.example}}]\n\
         constraints: [{requests: [small], matchAttribute: gpu.nvidia.com/parentUUID}]",
    );
    assert_eq!(
        run(&slices, &[one], &holding(&["a-0", "b-1"])),
        Some(vec![strings(&["small=a-1", "other=b-0"])])
    );
}

#[test]
fn distinct_attribute_needs_different_values() {
    let slices = four_slices();
    let spread = claim(
        "c",
        "requests: [{name: s, exactly: {deviceClassName: mig.example, count: 2}}]\n\
         constraints: [{distinctAttribute: gpu.nvidia.com/parentUUID}]",
    );
    assert_eq!(
        run(&slices, std::slice::from_ref(&spread), &Held::default()),
        Some(vec![strings(&["s=a-0", "s=b-0"])])
    );
    assert_eq!(run(&slices, &[spread], &holding(&["b-0", "b-1"])), None);
}

#[test]
fn first_available_takes_the_first_alternative_that_fits() {
    let slices = four_slices();
    let c = claim(
        "c",
        &format!(
            "requests: [{{name: r, firstAvailable: [\
               {{name: many, deviceClassName: mig.example, count: 3, {BIG}}}, \
               {{name: two, deviceClassName: mig.example, count: 2}}, \
               {{name: one, deviceClassName: mig.example}}]}}]"
        ),
    );
    assert_eq!(
        run(&slices, std::slice::from_ref(&c), &Held::default()),
        Some(vec![strings(&["r/two=a-0", "r/two=a-1"])])
    );
    assert_eq!(
        run(&slices, &[c], &holding(&["a-0", "a-1", "b-0"])),
        Some(vec![strings(&["r/one=b-1"])])
    );
}

#[test]
fn counters_keep_a_gpu_and_its_slices_apart() {
    // Partitionable: the whole GPU takes all 8, each slice 4.
    let slices = with_counters(
        pool(vec![
            consuming(gpu("g-0", "A100"), "g-0-counters", 8),
            consuming(slice_dev("s-0", "GPU-0", "3g.20gb"), "g-0-counters", 4),
            consuming(slice_dev("s-1", "GPU-0", "3g.20gb"), "g-0-counters", 4),
            consuming(slice_dev("s-2", "GPU-0", "3g.20gb"), "g-0-counters", 4),
        ]),
        &[("g-0-counters", 8)],
    );
    let both = claim(
        "c",
        "requests: [{name: whole, exactly: {deviceClassName: gpu.example}}, \
                    {name: part, exactly: {deviceClassName: mig.example}}]",
    );
    assert_eq!(run(&slices, &[both], &Held::default()), None);
    let three = claim(
        "c",
        "requests: [{name: s, exactly: {deviceClassName: mig.example, count: 3}}]",
    );
    assert_eq!(
        run(&slices, &[three], &Held::default()),
        None,
        "8 counters hold two slices"
    );
    let two = claim(
        "c",
        "requests: [{name: s, exactly: {deviceClassName: mig.example, count: 2}}]",
    );
    assert_eq!(
        run(&slices, std::slice::from_ref(&two), &Held::default()),
        Some(vec![strings(&["s=s-0", "s=s-1"])])
    );
    assert_eq!(
        run(&slices, &[two], &holding(&["s-2"])),
        None,
        "a held slice uses its counters"
    );
    let whole = claim(
        "c",
        "requests: [{name: whole, exactly: {deviceClassName: gpu.example}}]",
    );
    assert_eq!(run(&slices, &[whole], &holding(&["s-1"])), None);
}

#[test]
fn capacity_is_shared_within_the_device() {
    let slices = pool(vec![shareable(gpu("g-0", "H100"), "80Gi")]);
    let share = |n: &str, gi: u32| {
        claim(
            n,
            &format!(
                "requests: [{{name: m, exactly: {{deviceClassName: mps.example, \
                 capacity: {{requests: {{memory: {gi}Gi}}}}}}}}]"
            ),
        )
    };
    let out = allocate(&crate::allocate::tests::fixtures::input(
        &slices,
        &[share("x", 30), share("y", 50)],
        &Held::default(),
    ))
    .expect("allocate")
    .expect("both fit in 80Gi");
    let consumed: Vec<_> = out
        .iter()
        .map(|a| {
            let r = &a
                .devices
                .as_ref()
                .and_then(|d| d.results.clone())
                .unwrap_or_default()[0];
            r.consumed_capacity.clone().unwrap_or_default()["memory"]
                .0
                .clone()
        })
        .collect();
    assert_eq!(consumed, ["30Gi", "50Gi"]);
    assert_eq!(
        run(&slices, &[share("x", 30), share("y", 51)], &Held::default()),
        None,
        "81Gi is over"
    );
    // What is held counts: 50Gi held leaves 30Gi.
    let mut held = Held::default();
    for a in &out[1..] {
        held.add(a).expect("held");
    }
    assert_eq!(run(&slices, &[share("z", 31)], &held), None);
    assert!(run(&slices, &[share("z", 30)], &held).is_some());
    held.remove(&out[1]).expect("released");
    assert_eq!(
        held,
        Held::default(),
        "releasing every share frees the device"
    );
    // No amount: the policy's default, all of it.
    let whole = claim(
        "w",
        "requests: [{name: m, exactly: {deviceClassName: mps.example}}]",
    );
    assert_eq!(
        run(&slices, &[share("x", 1), whole], &Held::default()),
        None
    );
}

#[test]
fn capacity_requests_round_up_and_need_the_capacity() {
    let slices = pool(vec![
        with_memory(gpu("g-0", "A100"), "40Gi"),
        shareable(gpu("g-1", "H100"), "80Gi"),
    ]);
    let asking = |amount: &str| {
        claim(
            "c",
            &format!(
                "requests: [{{name: m, exactly: {{deviceClassName: gpu.example, \
                 capacity: {{requests: {{memory: \"{amount}\"}}}}}}}}]"
            ),
        )
    };
    // g-0 (no policy, not shareable) serves a request up to its capacity.
    assert_eq!(
        run(&slices, &[asking("40Gi")], &Held::default()),
        Some(vec![strings(&["m=g-0"])])
    );
    assert_eq!(
        run(&slices, &[asking("41Gi")], &Held::default()),
        Some(vec![strings(&["m=g-1"])])
    );
    // With g-0 held, the memory consumed from g-1 is the request's.
    let consumed = |amount: &str| {
        let out = allocate(&crate::allocate::tests::fixtures::input(
            &slices,
            &[asking(amount)],
            &holding(&["g-0"]),
        ))
        .expect("allocate")
        .expect("fits g-1");
        let results = out[0].devices.as_ref().and_then(|d| d.results.clone());
        let capacity = results.unwrap_or_default()[0].consumed_capacity.clone();
        capacity.unwrap_or_default()["memory"].0.clone()
    };
    assert_eq!(consumed("41Gi"), "41Gi");
    // 1.5Mi rounds up to the 1Mi step: 2Mi.
    assert_eq!(consumed("1536Ki"), "2Mi");
    let other = claim(
        "c",
        "requests: [{name: m, exactly: {deviceClassName: gpu.example, \
         capacity: {requests: {cores: 1}}}}]",
    );
    assert_eq!(
        run(&slices, &[other], &Held::default()),
        None,
        "no device has cores"
    );
}

#[test]
fn a_selector_error_on_a_device_considered_aborts() {
    let slices = pool(vec![
        gpu("g-0", "H100"),
        slice_dev("s-0", "GPU-0", "1g.10gb"),
    ]);
    let c = claim(
        "c",
        "requests: [{name: p, exactly: {deviceClassName: gpu.example, count: 2, selectors: \
         [{cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == 'x'\"}}]}}]",
    );
    let err = allocate(&crate::allocate::tests::fixtures::input(
        &slices,
        std::slice::from_ref(&c),
        &Held::default(),
    ));
    assert!(
        matches!(&err, Err(AllocateError::Evaluation { device, .. }) if device == "g-0"),
        "{err:?}"
    );
    // Held, g-0 is never considered, so its selectors never run.
    assert_eq!(run(&slices, &[c], &holding(&["g-0"])), None);
}

#[test]
fn claims_the_scheduler_refuses_are_errors() {
    let slices = four_slices();
    let cases = [
        (
            "requests: [{name: r, exactly: {deviceClassName: nope.example}}]",
            "device class nope.example does not exist",
        ),
        (
            "requests: [{name: r, exactly: {deviceClassName: mig.example, count: 33}}]",
            "exceeds the claim limit of 32",
        ),
        (
            "requests: [{name: r, exactly: {deviceClassName: mig.example, allocationMode: Some}}]",
            "unsupported allocation mode",
        ),
        (
            "requests: [{name: r, exactly: {deviceClassName: mig.example, count: 0}}]",
            "count 0",
        ),
        (
            "requests: [{name: r}]",
            "neither exactly nor firstAvailable",
        ),
        (
            "requests: [{name: r, exactly: {deviceClassName: mig.example}}]\nconstraints: [{}]",
            "empty constraint",
        ),
        (
            "requests: [{name: r, exactly: {deviceClassName: mig.example, allocationMode: All}}]\n\
             constraints: [{matchAttribute: gpu.nvidia.com/parentUUID}]",
            "because a claim constraint would not be satisfied",
        ),
    ];
    for (devices, want) in cases {
        let err = allocate(&crate::allocate::tests::fixtures::input(
            &slices,
            &[claim("c", devices)],
            &Held::default(),
        ));
        match err {
            Err(e) => assert!(e.to_string().contains(want), "{devices}: {e}"),
            Ok(found) => panic!("{devices}: no error but {found:?}"),
        }
    }
}

#[test]
fn a_count_one_more_than_the_devices_fails_without_trying_every_subset() {
    // 29 slices and a request for 30: every subset would be 2^29 tries,
    // past the step limit.
    let slices = small_mig_slices(29);
    let thirty = claim(
        "c",
        "requests: [{name: s, exactly: {deviceClassName: mig.example, count: 30}}]",
    );
    assert_eq!(run(&slices, &[thirty], &Held::default()), None);
    let held = holding(&["s-0"]);
    let all = claim(
        "c",
        "requests: [{name: s, exactly: {deviceClassName: mig.example, count: 29}}]",
    );
    assert_eq!(run(&slices, &[all], &held), None, "one of them held");
}

#[test]
fn a_request_no_device_can_ever_serve_fails_the_pod_without_trying_the_requests_before_it() {
    // Three slices each for two requests before it: with 40 slices that
    // is C(40,3) * C(37,3) combinations, past the step limit, before the
    // All request over whole GPUs (there are none) is even reached.
    let slices = small_mig_slices(40);
    let requests = |last: &str| {
        format!(
            "requests: [{{name: a, exactly: {{deviceClassName: mig.example, count: 3}}}}, \
             {{name: b, exactly: {{deviceClassName: mig.example, count: 3}}}}, {last}]"
        )
    };
    let all_gpus = claim(
        "c",
        &requests("{name: g, exactly: {deviceClassName: gpu.example, allocationMode: All}}"),
    );
    assert_eq!(run(&slices, &[all_gpus], &Held::default()), None);
    let one_gpu = claim(
        "c",
        &requests("{name: g, exactly: {deviceClassName: gpu.example, count: 1}}"),
    );
    assert_eq!(run(&slices, &[one_gpu], &Held::default()), None);
    // More slices for the last request than are left once 15 are held.
    let many = claim(
        "c",
        &requests("{name: g, exactly: {deviceClassName: mig.example, count: 26}}"),
    );
    let fifteen: Vec<String> = (0..15).map(|i| format!("s-{i}")).collect();
    let held = holding(&fifteen.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(run(&slices, std::slice::from_ref(&many), &Held::default()).is_some());
    assert_eq!(run(&slices, &[many], &held), None);
    // A selector failing on a device is still the error upstream's walk
    // meets first, not an early "no allocation".
    let failing = claim(
        "c",
        &requests(
            "{name: g, exactly: {deviceClassName: gpu.example, allocationMode: All, \
             selectors: [{cel: {expression: \"device.attributes['gpu.nvidia.com'].missing == 1\"}}]}}",
        ),
    );
    let failing_first = claim(
        "c",
        "requests: [{name: a, exactly: {deviceClassName: mig.example, count: 1, \
         selectors: [{cel: {expression: \"device.attributes['gpu.nvidia.com'].missing == 1\"}}]}}, \
         {name: g, exactly: {deviceClassName: gpu.example, allocationMode: All}}]",
    );
    let input = |c: &ResourceClaim| {
        crate::allocate::tests::fixtures::input(&slices, std::slice::from_ref(c), &Held::default())
    };
    assert_eq!(
        allocate(&input(&failing)),
        Ok(None),
        "no gpu to evaluate it on"
    );
    assert!(
        matches!(
            allocate(&input(&failing_first)),
            Err(AllocateError::Evaluation { .. })
        ),
        "{:?}",
        allocate(&input(&failing_first))
    );
}
