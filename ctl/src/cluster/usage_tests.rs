use serde_json::{Value, json};

use super::{Why, read};
use crate::cluster::fixture::{DRIVER, claim, condition, entry, idle_train, ready_idle, usage};

fn at(text: &str) -> k8s_openapi::jiff::Timestamp {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn an_idle_entry_is_idle_since_its_last_activity() {
    let data = usage(
        "node-1",
        "exclusive",
        json!({ "lastActive": "2026-09-01T09:00:00Z",
                "memory": { "usedBytes": 0, "totalBytes": 85899345920_u64 } }),
    );
    let claims = [idle_train(data.clone())];
    let reading = read(&claims, DRIVER);
    assert_eq!(reading.claims, 1);
    assert!(reading.skipped.is_empty(), "{:?}", reading.skipped);
    let [e] = reading.entries.as_slice() else {
        panic!("one entry: {:?}", reading.entries)
    };
    assert_eq!((e.namespace.as_str(), e.name.as_str()), ("ml", "train"));
    assert_eq!((e.pool.as_str(), e.device.as_str()), ("node-1", "gpu-0"));
    assert_eq!(e.share_id, None);
    assert_eq!(e.usage.node, "node-1");
    assert_eq!(e.usage.sharing, "exclusive");
    assert_eq!(e.usage.window_seconds, 300);
    assert_eq!(e.usage.memory.total_bytes, Some(85_899_345_920));
    assert_eq!(e.idle_status, "True");
    assert_eq!(e.idle_since, Some(at("2026-09-01T09:00:00Z")));
    assert_eq!(e.overshare_since, None);
    assert_eq!(e.data, data);
}

#[test]
fn without_last_activity_idleness_dates_from_the_condition() {
    let data = usage("node-1", "mig", json!({}));
    let claims = [claim(
        "ml",
        "never",
        "node-1",
        vec![entry(
            DRIVER,
            "gpu-0-mig-1",
            json!(ready_idle("True", "2026-09-01T10:00:00Z")),
            Some(data),
        )],
    )];
    let reading = read(&claims, DRIVER);
    assert_eq!(
        reading.entries[0].idle_since,
        Some(at("2026-09-01T10:00:00Z"))
    );
}

#[test]
fn active_and_unsampled_entries_are_not_idle() {
    let claims = [claim(
        "ml",
        "busy",
        "node-1",
        vec![
            entry(
                DRIVER,
                "gpu-0",
                json!(ready_idle("False", "2026-09-01T10:00:00Z")),
                Some(usage(
                    "node-1",
                    "exclusive",
                    json!({ "lastActive": "2026-09-01T11:59:00Z" }),
                )),
            ),
            entry(
                DRIVER,
                "gpu-1",
                json!(ready_idle("Unknown", "2026-09-01T10:00:00Z")),
                Some(usage("node-1", "exclusive", json!({}))),
            ),
            entry(
                DRIVER,
                "gpu-2",
                json!([]),
                Some(usage("node-1", "exclusive", json!({}))),
            ),
        ],
    )];
    let reading = read(&claims, DRIVER);
    let got: Vec<(&str, Option<_>)> = reading
        .entries
        .iter()
        .map(|e| (e.idle_status.as_str(), e.idle_since))
        .collect();
    assert_eq!(got, [("False", None), ("Unknown", None), ("", None)]);
}

#[test]
fn overshare_is_read_from_its_condition_and_only_when_true() {
    let mut over = ready_idle("False", "2026-09-01T10:00:00Z");
    over.push(condition(
        "OverShare",
        "True",
        "OverMemoryShare",
        "2026-09-01T11:50:00Z",
    ));
    let mut within = ready_idle("False", "2026-09-01T10:00:00Z");
    within.push(condition(
        "OverShare",
        "False",
        "WithinShare",
        "2026-09-01T11:00:00Z",
    ));
    let data = usage(
        "node-2",
        "mps",
        json!({ "memory": { "usedBytes": 23622320128_u64, "shareBytes": 21474836480_u64 },
                "share": { "threadPercentage": 50 } }),
    );
    let mut shared = entry(DRIVER, "gpu-1", json!(over), Some(data.clone()));
    shared["shareID"] = json!("4f0a0b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b");
    let claims = [
        claim("ml", "over", "node-2", vec![shared]),
        claim(
            "ml",
            "within",
            "node-2",
            vec![entry(DRIVER, "gpu-1", json!(within), Some(data))],
        ),
    ];
    let reading = read(&claims, DRIVER);
    assert_eq!(
        reading.entries[0].overshare_since,
        Some(at("2026-09-01T11:50:00Z"))
    );
    assert_eq!(
        reading.entries[0].share_id.as_deref(),
        Some("4f0a0b1c-2d3e-4f50-8a6b-7c8d9e0f1a2b")
    );
    assert_eq!(
        reading.entries[0].usage.memory.share_bytes,
        Some(21_474_836_480)
    );
    assert_eq!(reading.entries[1].overshare_since, None);
}

#[test]
fn entries_of_other_drivers_are_left_alone() {
    let claims = [claim(
        "net",
        "nic",
        "node-1",
        vec![
            entry("dra.net", "eth1", json!([]), Some(json!({ "anything": 1 }))),
            entry("dra.net", "eth2", json!([]), None),
        ],
    )];
    let reading = read(&claims, DRIVER);
    assert!(reading.entries.is_empty());
    assert!(reading.skipped.is_empty(), "{:?}", reading.skipped);
    assert_eq!(reading.claims, 1);
}

#[test]
fn claims_without_status_or_entries_give_nothing() {
    let mut bare = claim("ml", "pending", "node-1", vec![]);
    bare.status = None;
    let claims = [bare, claim("ml", "allocated", "node-1", vec![])];
    let reading = read(&claims, DRIVER);
    assert_eq!(reading.claims, 2);
    assert!(reading.entries.is_empty() && reading.skipped.is_empty());
}

#[test]
fn the_advice_is_read() {
    let data = usage(
        "node-1",
        "exclusive",
        json!({ "advice": { "form": "mig", "migProfile": "1g.10gb", "deviceClass": "mig.nvidia.com",
                            "observedSeconds": 172800, "reason": "peak 4.1 GiB fits 1g.10gb" } }),
    );
    let claims = [claim(
        "ml",
        "small",
        "node-1",
        vec![entry(DRIVER, "gpu-0", json!([]), Some(data))],
    )];
    let advice = read(&claims, DRIVER).entries[0].usage.advice.clone();
    let advice = advice.unwrap_or_else(|| panic!("advice read"));
    assert_eq!(advice.form, "mig");
    assert_eq!(advice.mig_profile.as_deref(), Some("1g.10gb"));
}

/// Every way `data` can be unreadable: skipped with why, never a panic.
#[test]
fn unreadable_data_is_skipped_and_said_why() {
    let cases: Vec<(Option<Value>, Why)> = vec![
        (
            Some(
                json!({ "apiVersion": "gpuslice.dev/v1alpha2", "kind": "DeviceUsage", "node": "n" }),
            ),
            Why::Unknown("gpuslice.dev/v1alpha2 DeviceUsage".to_owned()),
        ),
        (
            Some(json!({ "apiVersion": "gpuslice.dev/v1alpha1", "kind": "DeviceHistory" })),
            Why::Unknown("gpuslice.dev/v1alpha1 DeviceHistory".to_owned()),
        ),
        (None, Why::Malformed("no data".to_owned())),
        (
            Some(json!({ "node": "n" })),
            Why::Malformed("data has no apiVersion or kind".to_owned()),
        ),
        (
            Some(json!({ "apiVersion": 1, "kind": "DeviceUsage" })),
            Why::Malformed("data has no apiVersion or kind".to_owned()),
        ),
    ];
    for (data, want) in cases {
        let claims = [claim(
            "ml",
            "odd",
            "node-1",
            vec![entry(DRIVER, "gpu-0", json!([]), data.clone())],
        )];
        let reading = read(&claims, DRIVER);
        assert!(reading.entries.is_empty(), "{data:?}");
        assert_eq!(reading.skipped.len(), 1, "{data:?}");
        assert_eq!(reading.skipped[0].claim, "ml/odd");
        assert_eq!(reading.skipped[0].device, "gpu-0");
        assert_eq!(reading.skipped[0].why, want, "{data:?}");
    }
}

/// Known kind and version whose fields do not parse: malformed, naming the
/// field.
#[test]
fn malformed_fields_of_a_known_version_are_skipped_with_the_parse_error() {
    let cases = [
        (
            json!({ "windowSeconds": "300" }),
            "windowSeconds: invalid type",
        ),
        (
            json!({ "sampledAt": "yesterday" }),
            "sampledAt: failed to parse",
        ),
        (
            json!({ "memory": { "usedBytes": -1 } }),
            "memory.usedBytes: invalid value",
        ),
        (json!({ "memory": "lots" }), "memory: invalid type"),
        (
            json!({ "advice": { "migProfile": "1g.10gb" } }),
            "advice: missing field `form`",
        ),
        (json!({ "lastActive": 5 }), "lastActive: invalid type"),
    ];
    for (extra, says) in cases {
        let data = usage("node-1", "mps", extra.clone());
        let claims = [claim(
            "ml",
            "odd",
            "node-1",
            vec![entry(DRIVER, "gpu-0", json!([]), Some(data))],
        )];
        let reading = read(&claims, DRIVER);
        assert!(reading.entries.is_empty(), "{extra}");
        match &reading.skipped[..] {
            [skipped] => match &skipped.why {
                Why::Malformed(error) => assert!(error.contains(says), "{extra}: {error}"),
                Why::Unknown(what) => panic!("{extra}: unknown {what}"),
            },
            other => panic!("{extra}: {other:?}"),
        }
    }
    let missing = json!({ "apiVersion": "gpuslice.dev/v1alpha1", "kind": "DeviceUsage" });
    let claims = [claim(
        "ml",
        "odd",
        "node-1",
        vec![entry(DRIVER, "gpu-0", json!([]), Some(missing))],
    )];
    assert!(
        matches!(&read(&claims, DRIVER).skipped[0].why, Why::Malformed(e) if e.contains("missing field"))
    );
}

#[test]
fn a_bad_entry_loses_none_of_the_good_ones() {
    let claims = [
        claim(
            "a",
            "one",
            "node-1",
            vec![
                entry(DRIVER, "gpu-0", json!([]), Some(json!("not an object"))),
                entry(
                    DRIVER,
                    "gpu-1",
                    json!([]),
                    Some(usage("node-1", "exclusive", json!({}))),
                ),
            ],
        ),
        claim(
            "b",
            "two",
            "node-2",
            vec![entry(
                DRIVER,
                "gpu-0",
                json!([]),
                Some(usage("node-2", "timeslicing", json!({}))),
            )],
        ),
    ];
    let reading = read(&claims, DRIVER);
    let kept: Vec<(&str, &str)> = reading
        .entries
        .iter()
        .map(|e| (e.name.as_str(), e.device.as_str()))
        .collect();
    assert_eq!(kept, [("one", "gpu-1"), ("two", "gpu-0")]);
    assert_eq!(
        reading.skipped[0].why,
        Why::Malformed("data is not a JSON object".to_owned())
    );
}
