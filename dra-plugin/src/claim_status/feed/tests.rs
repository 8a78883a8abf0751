use gpuslice_proto::gpuslice::v1 as pb;
use k8s_openapi::api::resource::v1::AllocatedDeviceStatus;

use super::feed;
use crate::claim_status::entries::Context;

const GIB: u64 = 1 << 30;
const PREPARED: i64 = 1_780_000_000;
const UID_A: &str = "00000000-0000-4000-8000-00000000000a";
const UID_B: &str = "00000000-0000-4000-8000-00000000000b";

fn context() -> Context {
    Context {
        driver: "gpu.nvidia.com".into(),
        node: "node-1".into(),
        refresh_s: 300,
    }
}

fn claim(uid: &str, name: &str, devices: Vec<pb::DeviceActivity>) -> pb::ClaimActivity {
    pb::ClaimActivity {
        claim: Some(pb::ClaimRef {
            uid: uid.into(),
            namespace: "team-a".into(),
            name: name.into(),
        }),
        kind: devices
            .first()
            .map(|d| d.sharing.clone())
            .unwrap_or_default(),
        prepared_at: PREPARED,
        devices,
        ..Default::default()
    }
}

fn device(
    name: &str,
    sharing: &str,
    summary: Option<pb::DeviceUsageSummary>,
) -> pb::DeviceActivity {
    pb::DeviceActivity {
        device: name.into(),
        gpu: name.into(),
        sharing: sharing.into(),
        memory_used_bytes: 4 * GIB,
        memory_share_bytes: (sharing == "mps").then_some(20 * GIB),
        memory_total_bytes: 80 * GIB,
        pool: "node-1".into(),
        summary,
        ..Default::default()
    }
}

fn idle_summary() -> pb::DeviceUsageSummary {
    pb::DeviceUsageSummary {
        window_seconds: 300,
        memory_peak_bytes: 4 * GIB,
        idle_since: Some(PREPARED + 60),
        within_share_since: Some(PREPARED),
        ..Default::default()
    }
}

fn activity(claims: Vec<pb::ClaimActivity>) -> pb::GetActivityResponse {
    pb::GetActivityResponse {
        enabled: true,
        interval_ms: 5_000,
        sampled_at_ms: (PREPARED + 4_000) * 1000,
        claims,
        ..Default::default()
    }
}

/// What one sample of claim A ("train") with `devices` feeds, no advice.
fn feed_train(devices: Vec<pb::DeviceActivity>) -> super::Feed {
    feed(
        &context(),
        &activity(vec![claim(UID_A, "train", devices)]),
        None,
    )
}

fn condition<'a>(entry: &'a AllocatedDeviceStatus, type_: &str) -> (&'a str, &'a str, String) {
    let c = entry
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .unwrap_or_else(|| panic!("no {type_} in {entry:?}"));
    (&c.status, &c.reason, c.last_transition_time.0.to_string())
}

fn data(entry: &AllocatedDeviceStatus) -> serde_json::Value {
    entry.data.as_ref().map(|d| d.0.clone()).unwrap_or_default()
}

#[test]
fn a_sampled_idle_mps_claim_gets_its_conditions_dated_by_gpusliced_and_its_figures() {
    let got = feed_train(vec![device("gpu-1", "mps", Some(idle_summary()))]);
    let a = &got.claims[UID_A];
    assert_eq!(
        (a.claim.namespace.as_str(), a.claim.name.as_str()),
        ("team-a", "train")
    );
    let [entry] = a.entries.as_slice() else {
        panic!("{a:?}")
    };
    assert_eq!(
        (entry.pool.as_str(), entry.device.as_str()),
        ("node-1", "gpu-1")
    );
    assert_eq!(
        condition(entry, "Idle"),
        ("True", "NoGpuActivity", "2026-05-28T20:27:40Z".to_owned())
    );
    assert_eq!(
        condition(entry, "OverShare"),
        ("False", "WithinShare", "2026-05-28T20:26:40Z".to_owned())
    );
    let d = data(entry);
    assert_eq!(d["sharing"], "mps");
    assert_eq!(d["memory"]["usedBytes"], 4 * GIB);
    assert_eq!(d["memory"]["shareBytes"], 20 * GIB);
    assert_eq!(d["sampledAt"], "2026-05-28T21:33:20Z");
    assert!(got.unread.is_empty() && got.skipped.is_empty());
}

#[test]
fn activity_resumed_is_dated_from_active_since_and_an_open_episode_from_overshare_since() {
    let summary = pb::DeviceUsageSummary {
        active_since: Some(PREPARED + 120),
        overshare_since: Some(PREPARED + 130),
        ..idle_summary()
    };
    let summary = pb::DeviceUsageSummary {
        idle_since: None,
        within_share_since: None,
        ..summary
    };
    let got = feed_train(vec![device("gpu-1", "timeslicing", Some(summary))]);
    let entry = &got.claims[UID_A].entries[0];
    assert_eq!(condition(entry, "Idle").0, "False");
    assert_eq!(condition(entry, "Idle").2, "2026-05-28T20:28:40Z");
    assert_eq!(condition(entry, "OverShare").0, "True");
    assert_eq!(condition(entry, "OverShare").2, "2026-05-28T20:28:50Z");
}

#[test]
fn a_claim_not_read_yet_is_unread_not_gone_and_sampling_off_says_so() {
    let mut fresh = claim(UID_B, "new", vec![device("gpu-2", "exclusive", None)]);
    fresh.not_sampled_yet = true;
    let got = feed(&context(), &activity(vec![fresh.clone()]), None);
    assert!(got.claims.is_empty());
    assert_eq!(got.unread.iter().collect::<Vec<_>>(), [UID_B]);

    let off = pb::GetActivityResponse {
        enabled: false,
        ..activity(vec![fresh])
    };
    let got = feed(&context(), &off, None);
    let entry = &got.claims[UID_B].entries[0];
    assert_eq!(condition(entry, "Idle").0, "Unknown");
    assert_eq!(condition(entry, "Idle").1, "SamplingOff");
    let d = data(entry);
    assert!(
        d.get("sampledAt").is_none() && d["memory"].get("usedBytes").is_none(),
        "{d}"
    );
    assert!(got.unread.is_empty());
}

#[test]
fn advice_is_joined_by_claim_and_device_and_the_last_action_becomes_process_ended() {
    let mut held = device("gpu-3", "exclusive", Some(idle_summary()));
    held.last_action = Some(pb::LimitAction {
        kind: "overshare".into(),
        mode: "end".into(),
        outcome: "not-permitted".into(),
        pid: 4242,
        comm: "python".into(),
        memory_used_bytes: 12 * GIB,
        over_for_s: 3,
        at_ms: (PREPARED + 300) * 1000,
    });
    let advice = |uid: &str, device: &str, profile: &str| pb::ClaimAdvice {
        claim: Some(pb::ClaimRef {
            uid: uid.into(),
            ..Default::default()
        }),
        devices: vec![pb::DeviceAdvice {
            device: device.into(),
            advice: Some(pb::Advice {
                form: pb::AdviceForm::Mig.into(),
                mig_profile: profile.into(),
                device_class: "mig.nvidia.com".into(),
                observed_seconds: 86_400,
                reason: "fits".into(),
                ..Default::default()
            }),
            ..Default::default()
        }],
    };
    let answers = pb::GetAdviceResponse {
        enabled: true,
        claims: vec![
            advice(UID_B, "gpu-3", "7g.80gb"),
            advice(UID_A, "gpu-3", "1g.10gb"),
        ],
        ..Default::default()
    };
    let got = feed(
        &context(),
        &activity(vec![claim(UID_A, "train", vec![held])]),
        Some(&answers),
    );
    let entry = &got.claims[UID_A].entries[0];
    let d = data(entry);
    assert_eq!(d["advice"]["migProfile"], "1g.10gb", "{d}");
    assert_eq!(d["advice"]["form"], "mig");
    assert_eq!(d["lastAction"]["outcome"], "notPermitted");
    assert_eq!(condition(entry, "ProcessEnded").1, "NotPermitted");
    assert!(
        entry
            .conditions
            .iter()
            .flatten()
            .all(|c| c.type_ != "OverShare"),
        "not shared"
    );
}

#[test]
fn a_device_of_an_unknown_sharing_is_left_out_and_said() {
    let got = feed_train(vec![
        device("gpu-1", "exclusive", Some(idle_summary())),
        device("gpu-2", "vgpu", Some(idle_summary())),
    ]);
    assert_eq!(got.claims[UID_A].entries.len(), 1);
    assert_eq!(
        got.skipped,
        [format!("{UID_A} / gpu-2: unknown sharing \"vgpu\"")]
    );
}
