use k8s_openapi::api::resource::v1::ResourceClaim;
use serde_json::{Value, json};

use super::{Filter, render};
use crate::cluster::fixture::{
    DRIVER, claim, condition, entry, idle_train, now, ready_idle, usage,
};
use crate::cluster::usage::read;

const GIB: u64 = 1 << 30;

/// Four claims on two nodes: idle 3h (exclusive, advice give back), idle
/// 20m (MIG, no lastActive), active and over its MPS share for 10m, and
/// within its time-slice share.
fn cluster() -> Vec<ResourceClaim> {
    let mut over = ready_idle("False", "2026-09-01T11:00:00Z");
    over.push(condition(
        "OverShare",
        "True",
        "OverMemoryShare",
        "2026-09-01T11:50:00Z",
    ));
    let mut within = ready_idle("False", "2026-09-01T11:00:00Z");
    within.push(condition(
        "OverShare",
        "False",
        "WithinShare",
        "2026-09-01T11:00:00Z",
    ));
    vec![
        idle_train(usage(
            "node-1",
            "exclusive",
            json!({
                "lastActive": "2026-09-01T09:00:00Z",
                "memory": { "usedBytes": 0, "peakBytes": 0, "totalBytes": 80 * GIB },
                "advice": { "form": "giveBack", "observedSeconds": 86400, "reason": "idle" } }),
        )),
        claim(
            "dev",
            "notebook",
            "node-2",
            vec![entry(
                DRIVER,
                "gpu-0-mig-1",
                json!(ready_idle("True", "2026-09-01T11:40:00Z")),
                Some(usage(
                    "node-2",
                    "mig",
                    json!({ "memory": { "usedBytes": 512 << 20, "totalBytes": 10 * GIB } }),
                )),
            )],
        ),
        claim(
            "ml",
            "infer",
            "node-1",
            vec![entry(
                DRIVER,
                "gpu-1",
                json!(over),
                Some(usage(
                    "node-1",
                    "mps",
                    json!({
                "lastActive": "2026-09-01T11:59:00Z",
                "memory": { "usedBytes": 22 * GIB, "shareBytes": 20 * GIB, "totalBytes": 80 * GIB },
                "advice": { "form": "mig", "migProfile": "3g.40gb", "observedSeconds": 7200, "reason": "r" } }),
                )),
            )],
        ),
        claim(
            "ml",
            "batch",
            "node-2",
            vec![entry(
                DRIVER,
                "gpu-1",
                json!(within),
                Some(usage(
                    "node-2",
                    "timeslicing",
                    json!({
                "memory": { "usedBytes": 4 * GIB, "shareBytes": 40 * GIB },
                "advice": { "form": "abstain", "observedSeconds": 60, "reason": "too little" } }),
                )),
            )],
        ),
    ]
}

/// [`cluster`] as the table `filter` keeps.
fn table(filter: Filter) -> String {
    table_of(&cluster(), filter)
}

/// `claims` as the table `filter` keeps, at [`now`].
fn table_of(claims: &[ResourceClaim], filter: Filter) -> String {
    render(&read(claims, DRIVER), DRIVER, filter, now(), false)
}

/// `claims` as the JSON document `filter` keeps, at [`now`].
fn json_text(claims: &[ResourceClaim], filter: Filter) -> String {
    render(&read(claims, DRIVER), DRIVER, filter, now(), true)
}

/// `--idle SECONDS`.
fn idle(seconds: u64) -> Filter {
    Filter {
        idle: Some(seconds),
        overshare: false,
    }
}

/// `--overshare`.
const OVERSHARE: Filter = Filter {
    idle: None,
    overshare: true,
};

#[test]
fn every_device_with_its_idle_time_memory_and_advice() {
    let want = "\
NAMESPACE/NAME  NODE    DEVICE       SHARING      IDLE FOR  MEMORY               ADVICE
dev/notebook    node-2  gpu-0-mig-1  mig          20m       512 MiB / 10.0 GiB   -
ml/batch        node-2  gpu-1        timeslicing  active    4.0 GiB / 40.0 GiB   too early
ml/infer        node-1  gpu-1        mps          active    22.0 GiB / 20.0 GiB  mig 3g.40gb
ml/train        node-1  gpu-0        exclusive    3h        0 / 80.0 GiB         give back
";
    assert_eq!(table(Filter::default()), want);
}

#[test]
fn idle_keeps_the_devices_idle_at_least_that_long() {
    let want = "\
NAMESPACE/NAME  NODE    DEVICE  SHARING    IDLE FOR  MEMORY        ADVICE
ml/train        node-1  gpu-0   exclusive  3h        0 / 80.0 GiB  give back
";
    assert_eq!(table(idle(3600)), want);
    // The bound is inclusive: idle exactly 20m is kept with --idle 20m.
    let twenty = table(idle(1200));
    assert!(
        twenty.contains("dev/notebook") && twenty.contains("ml/train"),
        "{twenty}"
    );
    assert!(
        !twenty.contains("ml/infer") && !twenty.contains("ml/batch"),
        "{twenty}"
    );
    let more = table(idle(1201));
    assert!(!more.contains("dev/notebook"), "{more}");
}

#[test]
fn overshare_shows_used_of_share_and_for_how_long() {
    let want = "\
NAMESPACE/NAME  NODE    DEVICE  SHARING  IDLE FOR  USED / SHARE         OVER FOR  ADVICE
ml/infer        node-1  gpu-1   mps      active    22.0 GiB / 20.0 GiB  10m       mig 3g.40gb
";
    assert_eq!(table(OVERSHARE), want);
}

#[test]
fn nothing_kept_says_so_with_what_was_read() {
    assert_eq!(
        table(idle(86_400)),
        "no device of gpu.nvidia.com idle for 1d or more (4 devices in 4 claims read)\n"
    );
    assert_eq!(
        table(Filter {
            idle: Some(60),
            overshare: true
        }),
        "no device of gpu.nvidia.com idle for 1m or more and above its memory share \
         (4 devices in 4 claims read)\n"
    );
    assert_eq!(
        table_of(&[], Filter::default()),
        "no device of gpu.nvidia.com reports its usage (0 devices in 0 claims read)\n"
    );
}

fn with_skipped() -> Vec<ResourceClaim> {
    let mut claims = cluster();
    claims.push(claim("ml", "newer", "node-3", vec![
        entry(DRIVER, "gpu-0", json!([]), Some(json!({ "apiVersion": "gpuslice.dev/v1alpha2", "kind": "DeviceUsage" }))),
        entry(DRIVER, "gpu-1", json!([]), Some(json!({ "apiVersion": "gpuslice.dev/v1alpha1", "kind": "DeviceUsage", "node": 7 }))),
    ]));
    claims
}

#[test]
fn skipped_entries_are_counted_in_a_footer() {
    let text = table_of(&with_skipped(), idle(3600));
    let footer = text.lines().last().unwrap_or_default();
    assert_eq!(
        footer,
        "skipped 2 entries of gpu.nvidia.com: 1 of an unknown data kind or version, 1 malformed \
         (first: ml/newer gpu-0: data is gpuslice.dev/v1alpha2 DeviceUsage, unknown to this \
         gpuslicectl; --output json lists them all)"
    );
    assert!(text.starts_with("NAMESPACE/NAME"), "{text}");
    let none = table_of(&with_skipped(), idle(86_400));
    assert_eq!(none.lines().count(), 2, "{none}");
    assert!(
        none.lines()
            .nth(1)
            .unwrap_or_default()
            .starts_with("skipped 2 entries"),
        "{none}"
    );
}

#[test]
fn one_skipped_entry_is_said_in_full() {
    let mut claims = cluster();
    claims.push(claim("ml", "odd", "node-3", vec![
        entry(DRIVER, "gpu-0", json!([]), Some(json!({ "apiVersion": "gpuslice.dev/v1alpha1", "kind": "DeviceUsage", "node": "node-3" }))),
    ]));
    let text = table_of(&claims, idle(86_400));
    assert_eq!(
        text,
        "no device of gpu.nvidia.com idle for 1d or more (4 devices in 5 claims read)\n\
         skipped 1 entry of gpu.nvidia.com: ml/odd gpu-0: malformed data: missing field `sharing`\n"
    );
}

#[test]
fn json_lists_the_kept_devices_with_their_data_and_every_skipped_entry() {
    let text = json_text(&with_skipped(), OVERSHARE);
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(doc["driver"], "gpu.nvidia.com");
    assert_eq!(doc["now"], "2026-09-01T12:00:00Z");
    assert_eq!(doc["claims"], 5);
    assert_eq!(doc["idle_at_least_seconds"], Value::Null);
    assert_eq!(doc["overshare"], true);
    let devices = doc["devices"].as_array().cloned().unwrap_or_default();
    assert_eq!(devices.len(), 1, "{text}");
    let d = &devices[0];
    assert_eq!(
        (d["namespace"].as_str(), d["name"].as_str()),
        (Some("ml"), Some("infer"))
    );
    assert_eq!(
        (d["node"].as_str(), d["pool"].as_str(), d["device"].as_str()),
        (Some("node-1"), Some("node-1"), Some("gpu-1"))
    );
    assert_eq!(d["share_id"], Value::Null);
    assert_eq!(d["sharing"], "mps");
    assert_eq!(d["idle"], "False");
    assert_eq!(d["idle_since"], Value::Null);
    assert_eq!(d["overshare_since"], "2026-09-01T11:50:00Z");
    assert_eq!(d["overshare_seconds"], 600);
    assert_eq!(d["data"]["memory"]["usedBytes"], 22 * GIB);
    assert_eq!(d["data"]["advice"]["migProfile"], "3g.40gb");
    assert_eq!(
        doc["skipped"],
        json!([
            { "claim": "ml/newer", "device": "gpu-0", "skipped": "unknown",
              "reason": "gpuslice.dev/v1alpha2 DeviceUsage" },
            { "claim": "ml/newer", "device": "gpu-1", "skipped": "malformed",
              "reason": doc["skipped"][1]["reason"] },
        ])
    );
    let reason = doc["skipped"][1]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("invalid type"), "{reason}");
}

#[test]
fn json_with_idle_gives_seconds_and_since() {
    let text = json_text(&cluster(), idle(60));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert_eq!(doc["idle_at_least_seconds"], 60);
    let idle: Vec<(String, i64)> = doc["devices"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["name"].as_str().unwrap_or_default().to_owned(),
                d["idle_seconds"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(
        idle,
        [("notebook".to_owned(), 1200), ("train".to_owned(), 10_800)]
    );
    assert_eq!(doc["devices"][1]["idle_since"], "2026-09-01T09:00:00Z");
    assert_eq!(doc["skipped"], json!([]));
}

#[test]
fn memory_and_advice_cells_without_figures() {
    let claims = [claim(
        "ml",
        "bare",
        "node-1",
        vec![
            entry(
                DRIVER,
                "gpu-0",
                json!([]),
                Some(usage("node-1", "exclusive", json!({}))),
            ),
            entry(
                DRIVER,
                "gpu-1",
                json!([]),
                Some(usage(
                    "node-1",
                    "mps",
                    json!({ "memory": { "shareBytes": 20 * GIB } }),
                )),
            ),
            entry(
                DRIVER,
                "gpu-2",
                json!([]),
                Some(usage(
                    "node-1",
                    "exclusive",
                    json!({ "memory": { "usedBytes": GIB } ,
            "advice": { "form": "keep", "observedSeconds": 1, "reason": "r" } }),
                )),
            ),
        ],
    )];
    let want = "\
NAMESPACE/NAME  NODE    DEVICE  SHARING    IDLE FOR  MEMORY        ADVICE
ml/bare         node-1  gpu-0   exclusive  -         -             -
ml/bare         node-1  gpu-1   mps        -         - / 20.0 GiB  -
ml/bare         node-1  gpu-2   exclusive  -         1.0 GiB       keep
";
    assert_eq!(table_of(&claims, Filter::default()), want);
    let doc: Value = serde_json::from_str(&json_text(&claims, Filter::default()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        doc["devices"][0]["idle"],
        Value::Null,
        "no Idle condition: null"
    );
    assert_eq!(doc["devices"][0]["idle_seconds"], Value::Null);
}

#[test]
fn a_transition_after_now_counts_as_zero() {
    let claims = [claim(
        "ml",
        "skew",
        "node-1",
        vec![entry(
            DRIVER,
            "gpu-0",
            json!(ready_idle("True", "2026-09-01T12:05:00Z")),
            Some(usage("node-1", "exclusive", json!({}))),
        )],
    )];
    let text = table_of(&claims, idle(0));
    assert!(text.contains("exclusive  0s"), "{text}");
}
