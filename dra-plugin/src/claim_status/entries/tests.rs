//! The entries: each kind of sharing mapped, quantisation, every rendered
//! `data` valid against docs/schemas/device-usage-v1alpha1.json, and for
//! arbitrary summaries `data` within the API server's limit and the
//! conditions valid as metav1 `ValidateConditions` checks them.

use k8s_openapi::api::resource::v1::AllocatedDeviceStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::jiff::Timestamp;
use proptest::prelude::*;

use super::*;

const SCHEMA: &str = include_str!("../../../../docs/schemas/device-usage-v1alpha1.json");

fn validator() -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

fn t(s: &str) -> Timestamp {
    s.parse().expect("test time")
}

fn context() -> Context {
    Context {
        driver: "gpu.nvidia.com".to_owned(),
        node: "node-1".to_owned(),
        refresh_s: 300,
    }
}

fn usage(sharing: Sharing) -> DeviceUsage {
    DeviceUsage {
        pool: "node-1".to_owned(),
        device: "gpu-0".to_owned(),
        share_id: None,
        sharing,
        prepared_at: t("2026-09-01T09:00:00.250Z"),
        sampled_at: Some(t("2026-09-01T10:00:05.750Z")),
        window_seconds: 300,
        memory: Memory {
            used: Some(12 * 1024 * 1024 * 1024 + 12345),
            peak: Some(14 * 1024 * 1024 * 1024),
            share: sharing.is_shared().then_some(20 * 1024 * 1024 * 1024),
            total: Some(85_520_809_984),
        },
        sm_mean_percent: (sharing != Sharing::Mig).then_some(35),
        sm_peak_percent: (sharing != Sharing::Mig).then_some(70),
        processes: Some(2),
        last_active: Some(t("2026-09-01T10:03:59Z")),
        thread_percentage: (sharing == Sharing::Mps).then_some(50),
        idleness: Idleness::Active {
            since: t("2026-09-01T09:00:01Z"),
        },
        overshare: sharing.is_shared().then_some(OverShare::Within {
            since: t("2026-09-01T09:00:00Z"),
        }),
        advice: None,
        last_action: None,
    }
}

/// What metav1 `ValidateConditions` refuses in one condition, if anything.
fn condition_problem(c: &Condition) -> Option<String> {
    let name_ok = |n: &str| {
        !n.is_empty()
            && n.len() <= 63
            && n.starts_with(|c: char| c.is_ascii_alphanumeric())
            && n.ends_with(|c: char| c.is_ascii_alphanumeric())
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    if !name_ok(&c.type_) {
        return Some(format!("type {:?}", c.type_));
    }
    if !["True", "False", "Unknown"].contains(&c.status.as_str()) {
        return Some(format!("status {:?}", c.status));
    }
    let r = &c.reason;
    let reason_ok = !r.is_empty()
        && r.len() <= 1024
        && r.starts_with(|c: char| c.is_ascii_alphabetic())
        && r.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
        && r.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_,:".contains(c));
    if !reason_ok {
        return Some(format!("reason {r:?}"));
    }
    if c.message.len() > 32768 {
        return Some("message longer than 32768".to_owned());
    }
    if c.last_transition_time.0.subsec_nanosecond() != 0 {
        return Some("lastTransitionTime not whole seconds (RFC 3339 round trip)".to_owned());
    }
    None
}

fn check(entry: &AllocatedDeviceStatus, validator: &jsonschema::Validator) -> Result<(), String> {
    let conditions = entry.conditions.as_deref().unwrap_or_default();
    if conditions.len() > MAX_CONDITIONS {
        return Err(format!("{} conditions", conditions.len()));
    }
    let mut types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    if types.len() != conditions.len() {
        return Err("duplicate condition types".to_owned());
    }
    if let Some(problem) = conditions.iter().find_map(condition_problem) {
        return Err(problem);
    }
    let data = &entry.data.as_ref().ok_or("no data")?.0;
    let bytes = serde_json::to_vec(data).map_err(|e| e.to_string())?.len();
    if bytes > DATA_MAX_BYTES {
        return Err(format!("data is {bytes} bytes"));
    }
    let errors: Vec<String> = validator.iter_errors(data).map(|e| e.to_string()).collect();
    if !errors.is_empty() {
        return Err(format!("schema: {errors:?} in {data}"));
    }
    Ok(())
}

fn types(entry: &AllocatedDeviceStatus) -> Vec<(String, String, String)> {
    entry
        .conditions
        .iter()
        .flatten()
        .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
        .collect()
}

fn triple(t: &str, s: &str, r: &str) -> (String, String, String) {
    (t.to_owned(), s.to_owned(), r.to_owned())
}

#[test]
fn each_sharing_kind_maps_to_its_entry() {
    let validator = validator();
    for sharing in [
        Sharing::Exclusive,
        Sharing::Mig,
        Sharing::Mps,
        Sharing::Timeslicing,
    ] {
        let e = entry(&context(), &usage(sharing));
        check(&e, &validator).expect("valid");
        assert_eq!(
            (e.driver.as_str(), e.pool.as_str(), e.device.as_str()),
            ("gpu.nvidia.com", "node-1", "gpu-0")
        );
        let mut want = vec![
            triple("Ready", "True", "Prepared"),
            triple("Idle", "False", "Active"),
        ];
        if sharing.is_shared() {
            want.push(triple("OverShare", "False", "WithinShare"));
        }
        assert_eq!(types(&e), want, "{sharing:?}");
        let data = &e.data.as_ref().expect("data").0;
        assert_eq!(data["apiVersion"], "gpuslice.dev/v1alpha1");
        assert_eq!(data["kind"], "DeviceUsage");
        assert_eq!(
            data["sharing"],
            serde_json::to_value(sharing).expect("enum")
        );
        // MIG: SM use is not sampled, so `sm` is absent, never null.
        assert_eq!(data.get("sm").is_none(), sharing == Sharing::Mig, "{data}");
        assert_eq!(
            data.get("share").is_some(),
            sharing == Sharing::Mps,
            "{data}"
        );
        assert!(data.get("advice").is_none() && data.get("lastAction").is_none());
    }
}

#[test]
fn figures_are_quantised() {
    let e = entry(&context(), &usage(Sharing::Mps));
    let data = &e.data.as_ref().expect("data").0;
    // Bytes down to the MiB; times to the second; lastActive to refresh_s (300 s).
    assert_eq!(data["memory"]["usedBytes"], 12u64 * 1024 * 1024 * 1024);
    assert_eq!(data["memory"]["totalBytes"], 81_559u64 * 1024 * 1024);
    assert_eq!(data["sampledAt"], "2026-09-01T10:00:05Z");
    assert_eq!(data["lastActive"], "2026-09-01T10:00:00Z");
    let ready = &e.conditions.as_ref().expect("conditions")[0];
    assert_eq!(ready.last_transition_time.0, t("2026-09-01T09:00:00Z"));
    // Jitter below the resolution renders the same entry for the planner.
    let mut jittered = usage(Sharing::Mps);
    jittered.memory.used = jittered.memory.used.map(|b| b + 1000);
    jittered.last_active = Some(t("2026-09-01T10:04:58Z"));
    jittered.sampled_at = Some(t("2026-09-01T10:00:10Z"));
    let again = entry(&context(), &jittered);
    assert_eq!(desired(std::slice::from_ref(&e)), desired(&[again]));
    // A MiB more is a change of figures, not of conditions.
    jittered.memory.used = jittered.memory.used.map(|b| b + 1024 * 1024);
    let (before, after) = (desired(&[e]), desired(&[entry(&context(), &jittered)]));
    assert_eq!(before.conditions, after.conditions);
    assert_ne!(before.figures, after.figures);
}

#[test]
fn the_advice_growing_with_the_clock_alone_is_no_change() {
    // An idle claim's advice abstains ("observed 3s of the 24h needed") or
    // says give it back ("never active in 2h observed"): its observed time
    // and reason grow with every sample while nothing else moves. Like
    // sampledAt, they go with every write but never cause one.
    let advice = |form, observed_seconds, reason: &str| Advice {
        form,
        mig_profile: None,
        device_class: None,
        observed_seconds,
        memory_peak_bytes: None,
        sm_p95_percent: None,
        reason: reason.to_owned(),
    };
    let with = |a: Advice| {
        let mut u = usage(Sharing::Exclusive);
        u.advice = Some(a);
        desired(&[entry(&context(), &u)])
    };
    let early = with(advice(
        AdviceForm::Abstain,
        3,
        "observed 3s of the 24h needed",
    ));
    let later = with(advice(
        AdviceForm::Abstain,
        6,
        "observed 6s of the 24h needed",
    ));
    assert_eq!(early, later);
    let back = with(advice(
        AdviceForm::GiveBack,
        86_400,
        "never active in 24h observed",
    ));
    assert_ne!(early.figures, back.figures, "a new form is a change");
    let mut peak = advice(AdviceForm::GiveBack, 90_000, "never active in 25h observed");
    peak.memory_peak_bytes = Some(1 << 30);
    assert_ne!(back.figures, with(peak).figures, "a new peak is a change");
}

#[test]
fn idle_overshare_and_actions_set_their_conditions() {
    let validator = validator();
    let mut u = usage(Sharing::Timeslicing);
    u.idleness = Idleness::Idle {
        since: t("2026-09-01T09:30:00.5Z"),
    };
    u.overshare = Some(OverShare::Over {
        since: t("2026-09-01T09:40:00Z"),
    });
    u.last_action = Some(LastAction {
        kind: ActionKind::Overshare,
        mode: ActionMode::End,
        pid: 18836,
        name: "python".to_owned(),
        memory_used_bytes: 22 * 1024 * 1024 * 1024,
        at: t("2026-09-01T09:41:05Z"),
        outcome: ActionOutcome::Terminated,
    });
    u.advice = Some(Advice {
        form: AdviceForm::Mig,
        mig_profile: Some("1g.10gb".to_owned()),
        device_class: Some("mig.nvidia.com".to_owned()),
        observed_seconds: 172_800,
        memory_peak_bytes: Some(4_398_046_511),
        sm_p95_percent: Some(5),
        reason: "peak 4.1 GiB + 15% fits 1g.10gb".to_owned(),
    });
    let e = entry(&context(), &u);
    check(&e, &validator).expect("valid");
    assert_eq!(
        types(&e),
        vec![
            triple("Ready", "True", "Prepared"),
            triple("Idle", "True", "NoGpuActivity"),
            triple("OverShare", "True", "OverMemoryShare"),
            triple("ProcessEnded", "True", "LimitEnforced"),
        ]
    );
    let idle = &e.conditions.as_ref().expect("conditions")[1];
    assert_eq!(idle.last_transition_time.0, t("2026-09-01T09:30:00Z"));
    let data = &e.data.as_ref().expect("data").0;
    assert_eq!(data["advice"]["migProfile"], "1g.10gb");
    assert_eq!(data["lastAction"]["outcome"], "terminated");
    // Sampling off: Idle Unknown; exclusive devices never carry OverShare.
    let mut off = usage(Sharing::Exclusive);
    off.idleness = Idleness::SamplingOff;
    off.overshare = Some(OverShare::Over {
        since: t("2026-09-01T09:40:00Z"),
    });
    assert_eq!(
        types(&entry(&context(), &off)),
        vec![
            triple("Ready", "True", "Prepared"),
            triple("Idle", "Unknown", "SamplingOff"),
        ]
    );
}

#[test]
fn a_share_id_is_part_of_the_entry_and_its_key() {
    let mut u = usage(Sharing::Mps);
    u.share_id = Some("6b1c2e7a-0000-4000-8000-000000000001".to_owned());
    let e = entry(&context(), &u);
    assert_eq!(e.share_id.as_deref(), u.share_id.as_deref());
    assert_eq!(
        entry_key(&e),
        "node-1/gpu-0/6b1c2e7a-0000-4000-8000-000000000001"
    );
    assert!(
        desired(&[e])
            .conditions
            .iter()
            .all(|c| c.entry.ends_with("0001"))
    );
}

fn time() -> impl Strategy<Value = Timestamp> {
    (0..4_102_444_800i64, 0..1_000_000_000i32)
        .prop_map(|(s, n)| Timestamp::new(s, n).expect("in range"))
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![".{0,40}", ".{0,3000}"]
}

prop_compose! {
    fn any_usage()(
        sharing in prop_oneof![Just(Sharing::Exclusive), Just(Sharing::Mig), Just(Sharing::Mps), Just(Sharing::Timeslicing)],
        share_id in prop::option::of("[a-f0-9-]{36}"),
        (prepared_at, sampled_at, last_active, since) in (time(), prop::option::of(time()), prop::option::of(time()), time()),
        window_seconds in any::<u32>(),
        memory in (prop::option::of(any::<u64>()), prop::option::of(any::<u64>()), prop::option::of(any::<u64>()), prop::option::of(any::<u64>())),
        sm in (prop::option::of(any::<u32>()), prop::option::of(any::<u32>()), prop::option::of(any::<u32>()), prop::option::of(any::<u32>())),
        idle in 0..3u8,
        over in 0..3u8,
        advice in prop::option::of((0..6u8, prop::option::of(text()), prop::option::of(text()), any::<u64>(), prop::option::of(any::<u64>()), prop::option::of(any::<u32>()), text())),
        action in prop::option::of((any::<bool>(), any::<bool>(), any::<u32>(), text(), any::<u64>(), time(), 0..6u8)),
    ) -> DeviceUsage {
        let forms = [AdviceForm::Abstain, AdviceForm::Keep, AdviceForm::GiveBack, AdviceForm::Mig, AdviceForm::Mps, AdviceForm::Timeslicing];
        let outcomes = [ActionOutcome::Terminated, ActionOutcome::Killed, ActionOutcome::WouldEnd, ActionOutcome::Gone, ActionOutcome::PidReused, ActionOutcome::NotPermitted, ActionOutcome::Failed];
        DeviceUsage {
            pool: "node-1".to_owned(),
            device: "gpu-0".to_owned(),
            share_id,
            sharing,
            prepared_at,
            sampled_at,
            window_seconds,
            memory: Memory { used: memory.0, peak: memory.1, share: memory.2, total: memory.3 },
            sm_mean_percent: sm.0,
            sm_peak_percent: sm.1,
            processes: sm.2,
            last_active,
            thread_percentage: sm.3,
            idleness: match idle { 0 => Idleness::SamplingOff, 1 => Idleness::Active { since }, _ => Idleness::Idle { since } },
            overshare: match over { 0 => None, 1 => Some(OverShare::Within { since }), _ => Some(OverShare::Over { since }) },
            advice: advice.map(|(f, mig_profile, device_class, observed_seconds, memory_peak_bytes, sm_p95_percent, reason)| Advice {
                form: forms[usize::from(f)], mig_profile, device_class, observed_seconds, memory_peak_bytes, sm_p95_percent, reason,
            }),
            last_action: action.map(|(k, m, pid, name, memory_used_bytes, at, o)| LastAction {
                kind: if k { ActionKind::Overshare } else { ActionKind::Unclaimed },
                mode: if m { ActionMode::End } else { ActionMode::DryRun },
                pid, name, memory_used_bytes, at, outcome: outcomes[usize::from(o)],
            }),
        }
    }
}

proptest! {
    /// Any summary renders an entry the API server takes: data a JSON
    /// object of at most 10240 bytes that the schema accepts, at most 8
    /// conditions, each metav1-valid, no type twice.
    #[test]
    fn every_rendered_entry_is_valid(u in any_usage(), node in "[a-z0-9.-]{1,300}", refresh_s in 0..100_000u64) {
        let context = Context { driver: "gpu.nvidia.com".to_owned(), node, refresh_s };
        let e = entry(&context, &u);
        if let Err(problem) = check(&e, &validator()) {
            prop_assert!(false, "{problem}");
        }
        prop_assert!(e.data.as_ref().is_some_and(|d| d.0.is_object()));
    }
}

#[test]
fn the_example_in_claim_status_md_is_valid_data() {
    const PAGE: &str = include_str!("../../../../docs/claim-status.md");
    let example = PAGE
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("a json block in docs/claim-status.md");
    let data: serde_json::Value = serde_json::from_str(example).expect("the example is JSON");
    let errors: Vec<String> = validator()
        .iter_errors(&data)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(data["kind"], KIND);
    assert_eq!(data["apiVersion"], API_VERSION);
}
