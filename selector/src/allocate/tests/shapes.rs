//! The `AllocationResult` written (request names, configs by class and
//! claim, tolerations, node selector), taints against tolerations, the
//! input as JSON, and a pool the allocator cannot read.

use k8s_openapi::api::resource::v1::{DeviceTaint, DeviceToleration};

use crate::allocate::taints::tolerates;
use crate::allocate::tests::fixtures::{claim, gpu, input, pool, shareable, slice_dev};
use crate::allocate::{AllocateError, Held, Input, PoolError, allocate};

#[test]
fn the_result_names_requests_and_carries_class_and_claim_configs() {
    let slices = pool(vec![
        shareable(gpu("g-0", "H100"), "80Gi"),
        slice_dev("s-0", "GPU-0", "1g.10gb"),
    ]);
    let c = claim(
        "c",
        "requests:\n\
         - {name: share, exactly: {deviceClassName: mps.example, capacity: {requests: {memory: 10Gi}}, \
            tolerations: [{key: k, operator: Exists}]}}\n\
         - {name: mig, firstAvailable: [{name: one, deviceClassName: mig.example}]}\n\
         config:\n\
         - {requests: [mig/one], opaque: {driver: gpu.nvidia.com, parameters: {kind: MigDeviceConfig}}}\n\
         - {opaque: {driver: gpu.nvidia.com, parameters: {kind: All}}}",
    );
    let out = allocate(&input(&slices, &[c], &Held::default()))
        .expect("allocate")
        .expect("fits");
    let devices = out[0].devices.clone().expect("devices");
    let results = devices.results.expect("results");
    assert_eq!(
        results
            .iter()
            .map(|r| (
                r.request.as_str(),
                r.device.as_str(),
                r.pool.as_str(),
                r.driver.as_str()
            ))
            .collect::<Vec<_>>(),
        [
            ("share", "g-0", "node-a", "gpu.nvidia.com"),
            ("mig/one", "s-0", "node-a", "gpu.nvidia.com")
        ]
    );
    assert_eq!(results[0].tolerations.as_ref().map(Vec::len), Some(1));
    assert_eq!(results[0].share_id, None, "share ids are the caller's");
    assert_eq!(results[1].consumed_capacity, None);
    let config = devices.config.expect("config");
    let summary: Vec<(String, Option<Vec<String>>)> = config
        .iter()
        .map(|c| (c.source.clone(), c.requests.clone()))
        .collect();
    assert_eq!(
        summary,
        [
            ("FromClass".to_owned(), Some(vec!["share".to_owned()])),
            ("FromClaim".to_owned(), Some(vec!["mig/one".to_owned()])),
            ("FromClaim".to_owned(), None),
        ]
    );
    let node = out[0].node_selector.clone().expect("node selector");
    let field = &node.node_selector_terms[0]
        .match_fields
        .as_ref()
        .expect("fields")[0];
    assert_eq!(
        (field.key.as_str(), field.values.clone()),
        ("metadata.name", Some(vec!["node-a".to_owned()]))
    );
}

#[test]
fn tolerations_match_taints_as_core_v1_does() {
    let taint = DeviceTaint {
        key: "gpu.nvidia.com/unhealthy".to_owned(),
        value: Some("xid".to_owned()),
        effect: "NoSchedule".to_owned(),
        time_added: None,
    };
    let t = |key: Option<&str>, op: Option<&str>, value: Option<&str>, effect: Option<&str>| {
        DeviceToleration {
            key: key.map(str::to_owned),
            operator: op.map(str::to_owned),
            value: value.map(str::to_owned),
            effect: effect.map(str::to_owned),
            toleration_seconds: None,
        }
    };
    let cases = [
        (
            t(Some("gpu.nvidia.com/unhealthy"), Some("Exists"), None, None),
            true,
        ),
        (t(None, Some("Exists"), None, None), true),
        (
            t(Some("gpu.nvidia.com/unhealthy"), None, Some("xid"), None),
            true,
        ),
        (
            t(
                Some("gpu.nvidia.com/unhealthy"),
                Some("Equal"),
                Some("other"),
                None,
            ),
            false,
        ),
        (
            t(
                Some("gpu.nvidia.com/unhealthy"),
                Some("Exists"),
                None,
                Some("NoExecute"),
            ),
            false,
        ),
        (
            t(Some("other"), Some("Exists"), None, Some("NoSchedule")),
            false,
        ),
        (
            t(
                Some("gpu.nvidia.com/unhealthy"),
                Some("Lt"),
                Some("xid"),
                None,
            ),
            false,
        ),
    ];
    for (toleration, want) in cases {
        assert_eq!(tolerates(&toleration, &taint), want, "{toleration:?}");
    }
}

#[test]
fn the_input_travels_as_json_in_v1_shapes() {
    let slices = pool(vec![gpu("g-0", "H100")]);
    let c = claim(
        "c",
        "requests: [{name: g, exactly: {deviceClassName: gpu.example}}]",
    );
    let mut problem = input(&slices, &[c], &Held::default());
    problem.held.devices.insert("g-9".to_owned());
    let json = serde_json::to_value(&problem).expect("to JSON");
    assert_eq!(json["slices"][0]["devices"][0]["name"], "g-0");
    assert_eq!(
        json["claims"][0]["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"],
        "gpu.example"
    );
    assert_eq!(json["held"]["devices"][0], "g-9");
    let back: Input = serde_json::from_value(json).expect("from JSON");
    assert_eq!(back, problem);
}

#[test]
fn a_pool_it_cannot_read_is_an_error() {
    let mut slices = pool(vec![gpu("g-0", "H100")]);
    let mut other = slices[0].clone();
    other.pool.name = "node-b".to_owned();
    slices.push(other);
    let c = claim(
        "c",
        "requests: [{name: g, exactly: {deviceClassName: gpu.example}}]",
    );
    let err = allocate(&input(&slices, std::slice::from_ref(&c), &Held::default()));
    assert!(
        matches!(err, Err(AllocateError::Pool(PoolError::MixedPools { .. }))),
        "{err:?}"
    );
    let twice = pool(vec![gpu("g-0", "H100"), gpu("g-0", "A100")]);
    let err = allocate(&input(&twice, std::slice::from_ref(&c), &Held::default()));
    assert!(
        matches!(err, Err(AllocateError::Pool(PoolError::DuplicateDevice(_)))),
        "{err:?}"
    );
    let bad = pool(vec![crate::allocate::tests::fixtures::with_memory(
        gpu("g-0", "H100"),
        "80GB",
    )]);
    let err = allocate(&input(&bad, &[c], &Held::default()));
    assert!(
        matches!(
            &err,
            Err(AllocateError::Pool(
                PoolError::Device(_) | PoolError::Quantity { .. }
            ))
        ),
        "{err:?}"
    );
}
