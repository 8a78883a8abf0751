use std::collections::BTreeMap;

use super::*;

pub(crate) const GIB: u64 = 1024 * 1024 * 1024;
pub(crate) const GPU_A: &str = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
pub(crate) const GPU_B: &str = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
pub(crate) const MIG_A: &str = "MIG-aaaaaaaa-0000-0000-0000-000000000000";

pub(crate) fn gpu(json: &str) -> String {
    format!(r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"{json}}}"#)
}

pub(crate) fn mig(json: &str) -> String {
    format!(r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig"{json}}}"#)
}

pub(crate) fn memory(q: &str) -> String {
    format!(r#"{{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":{q}}}"#)
}

pub(crate) fn mps(inner: &str) -> String {
    gpu(&format!(
        r#","sharing":{{"strategy":"MPS","mpsConfig":{{{inner}}}}}"#
    ))
}

/// Fails unless each config entry is refused with a message containing its
/// expected text.
pub(crate) fn assert_refusals(cases: Vec<(String, &str)>) {
    for (json, expected) in cases {
        let message = refusal(&json);
        assert!(
            message.contains(expected),
            "{json}\n  gave {message}\n  want {expected}"
        );
    }
}

/// The refusal of a single config entry, as text.
pub(crate) fn refusal(json: &str) -> String {
    parse_entry(0, json).unwrap_err().to_string()
}

pub(crate) fn policies(
    entries: &[(ConfigSource, Vec<String>, String)],
    requests: &[&str],
) -> Result<BTreeMap<String, RequestSharing>, SharingError> {
    let borrowed: Vec<ConfigEntry<'_>> = entries
        .iter()
        .map(|(source, requests, json)| ConfigEntry {
            source: *source,
            requests,
            parameters_json: json,
        })
        .collect();
    parse_configs(&borrowed, requests)
}

#[test]
fn quantities_parse_as_kubernetes_does() {
    for (text, bytes) in [
        ("10Gi", 10 * GIB),
        ("512Mi", 512 * 1024 * 1024),
        ("1G", 1_000_000_000),
        ("1e9", 1_000_000_000),
        ("1.5Gi", 3 * GIB / 2),
        ("0.5", 1),
        ("1048576", 1024 * 1024),
        ("2k", 2000),
    ] {
        assert_eq!(parse_bytes(text), Ok(bytes), "{text}");
    }
    for bad in [
        "",
        "Gi",
        "-1Gi",
        "10GB",
        "10GiB",
        "1.2.3",
        "10m",
        "99999999999Ei",
    ] {
        assert!(parse_bytes(bad).is_err(), "{bad}");
    }
}

#[test]
fn nvidia_configs_parse_to_policies() {
    assert_eq!(
        parse_entry(0, &gpu("")).unwrap(),
        ParsedEntry::Nvidia {
            kind: ConfigKind::Gpu,
            policy: SharingPolicy::Exclusive
        }
    );
    let ts =
        gpu(r#","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Long"}}"#);
    assert_eq!(
        parse_entry(0, &ts).unwrap(),
        ParsedEntry::Nvidia {
            kind: ConfigKind::Gpu,
            policy: SharingPolicy::TimeSlicing {
                interval: TimeSliceInterval::Long
            }
        }
    );
    // No settings is the Default interval; so is a null setting, the chosen
    // strategy's or another's (an absent one, as serde reads an `Option`).
    for ts_default in [
        gpu(r#","sharing":{"strategy":"TimeSlicing"}"#),
        gpu(r#","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":null,"mpsConfig":null}"#),
    ] {
        assert!(
            matches!(
                parse_entry(0, &ts_default).unwrap(),
                ParsedEntry::Nvidia {
                    policy: SharingPolicy::TimeSlicing {
                        interval: TimeSliceInterval::Default
                    },
                    ..
                }
            ),
            "{ts_default}"
        );
    }
    let mig_mps = mig(r#","sharing":{"strategy":"MPS"}"#);
    assert!(matches!(
        parse_entry(0, &mig_mps).unwrap(),
        ParsedEntry::Nvidia {
            kind: ConfigKind::Mig,
            policy: SharingPolicy::Mps(_)
        }
    ));
}

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
fn every_refusal_names_its_field() {
    let cases: Vec<(String, &str)> = vec![
        (
            gpu(r#","sharing":{"strategy":"MPS","bogus":1}"#),
            "configs[0].sharing.bogus: unknown field `bogus`",
        ),
        (
            gpu(r#","extra":true"#),
            "configs[0].extra: unknown field `extra`",
        ),
        (
            gpu(r#","sharing":{"strategy":"MPS","timeSlicingConfig":{}}"#),
            "configs[0].sharing.timeSlicingConfig is set but the strategy is \"MPS\"",
        ),
        (
            gpu(r#","sharing":{"strategy":"TimeSlicing","mpsConfig":{}}"#),
            "configs[0].sharing.mpsConfig is set but the strategy is \"TimeSlicing\"",
        ),
        (
            gpu(r#","sharing":{"strategy":"Both"}"#),
            "configs[0].sharing.strategy: \"Both\" is not a sharing strategy",
        ),
        (
            gpu(r#","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"long"}}"#),
            "configs[0].sharing.timeSlicingConfig.interval: \"long\" is not an interval",
        ),
        (
            mig(r#","sharing":{"strategy":"TimeSlicing"}"#),
            "configs[0].sharing.strategy: TimeSlicing cannot be set on a MigDeviceConfig",
        ),
        (
            mig(r#","sharing":{"strategy":"MPS","timeSlicingConfig":{}}"#),
            "configs[0].sharing.timeSlicingConfig: unknown field `timeSlicingConfig`",
        ),
        (
            r#"{"apiVersion":"resource.nvidia.com/v1","kind":"GpuConfig"}"#.to_owned(),
            "configs[0].apiVersion: apiVersion \"resource.nvidia.com/v1\" is not supported",
        ),
        (
            r#"{"kind":"GpuConfig"}"#.to_owned(),
            "configs[0].apiVersion: apiVersion \"\" is not supported",
        ),
        (
            r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"VfioDeviceConfig"}"#.to_owned(),
            "configs[0].kind: kind \"VfioDeviceConfig\" is not supported",
        ),
        (
            r#"{"apiVersion":"gpuslice.dev/v1alpha1","kind":"GpuConfig"}"#.to_owned(),
            "configs[0].kind: kind \"GpuConfig\" is not supported under gpuslice.dev/v1alpha1",
        ),
        ("[1,2]".to_owned(), "configs[0][0]: invalid type"),
        ("{".to_owned(), "configs[0]: EOF"),
        (
            format!("{{\"pad\":\"{}\"}}", "x".repeat(MAX_CONFIG_BYTES)),
            "configs[0]: the parameters are",
        ),
    ];
    assert_refusals(cases);
}

#[test]
fn claim_configs_win_over_class_configs_and_later_over_earlier() {
    let ts = |i: &str| {
        gpu(&format!(
            r#","sharing":{{"strategy":"TimeSlicing","timeSlicingConfig":{{"interval":"{i}"}}}}"#
        ))
    };
    let entries = vec![
        (ConfigSource::Claim, vec![], ts("Short")),
        (ConfigSource::Claim, vec!["b".to_owned()], ts("Long")),
        (ConfigSource::Class, vec![], ts("Medium")),
    ];
    let out = policies(&entries, &["a", "b"]).unwrap();
    assert_eq!(
        out["a"].policy,
        SharingPolicy::TimeSlicing {
            interval: TimeSliceInterval::Short
        }
    );
    assert_eq!(out["a"].nvidia, Some((ConfigKind::Gpu, 0)));
    assert_eq!(
        out["b"].policy,
        SharingPolicy::TimeSlicing {
            interval: TimeSliceInterval::Long
        }
    );
    let class_only = vec![(ConfigSource::Class, vec![], ts("Medium"))];
    assert_eq!(
        policies(&class_only, &["a"]).unwrap()["a"].policy,
        SharingPolicy::TimeSlicing {
            interval: TimeSliceInterval::Medium
        }
    );
    let none = policies(&[], &["a"]).unwrap();
    assert_eq!(none["a"].policy, SharingPolicy::Exclusive);
    assert_eq!(none["a"].nvidia, None);
}

/// Fails when `source` (of `file`) names an I/O module of std.
pub(crate) fn assert_pure(file: &str, source: &str) {
    for word in [
        "std::fs",
        "std::io",
        "std::net",
        "std::env",
        "std::process",
        "std::time",
    ] {
        assert!(!source.contains(word), "{file} mentions {word}");
    }
}

#[test]
fn the_opaque_configs_are_pure() {
    for (file, source) in [
        ("mod.rs", include_str!("mod.rs")),
        ("parse.rs", include_str!("parse.rs")),
        ("model.rs", include_str!("model.rs")),
        ("admit.rs", include_str!("admit.rs")),
        (
            "claims/access/mps/opaque.rs",
            include_str!("../claims/access/mps/opaque.rs"),
        ),
        (
            "claims/access/timeslicing/opaque.rs",
            include_str!("../claims/access/timeslicing/opaque.rs"),
        ),
    ] {
        assert_pure(file, source);
    }
}

#[test]
fn an_interval_prints_as_its_name_in_records_and_parses_back() {
    for &interval in <TimeSliceInterval as strum::VariantArray>::VARIANTS {
        let text = interval.to_string();
        assert_eq!(
            serde_json::to_string(&interval).unwrap(),
            format!("\"{text}\"")
        );
        assert_eq!(TimeSliceInterval::parse(&text), Some(interval));
    }
    assert_eq!(TimeSliceInterval::parse("long"), None);
}

fn limits(fields: &str) -> String {
    format!(r#"{{"apiVersion":"gpuslice.dev/v1alpha1","kind":"LimitsConfig"{fields}}}"#)
}

#[test]
fn a_limits_config_parses_to_the_claims_limits() {
    let cases = [
        (
            r#","overshare":"end","graceSeconds":30"#,
            Some(LimitMode::End),
            Some(30),
        ),
        (r#","overshare":"dry-run""#, Some(LimitMode::DryRun), None),
        (r#","overshare":"warn""#, Some(LimitMode::Warn), None),
        (r#","graceSeconds":0"#, None, Some(0)),
        (r#","graceSeconds":86400"#, None, Some(86_400)),
    ];
    for (fields, overshare, grace_s) in cases {
        assert_eq!(
            parse_entry(0, &limits(fields)).unwrap(),
            ParsedEntry::Limits(ClaimLimits { overshare, grace_s }),
            "{fields}"
        );
    }
}

#[test]
fn a_bad_limits_config_is_refused_saying_what_to_fix() {
    let cases = [
        (
            limits(r#","overshare":"kill""#),
            "configs[0].overshare: \"kill\" is not a limits mode; use \"warn\", \"dry-run\" or \"end\"",
        ),
        (
            limits(r#","graceSeconds":86401"#),
            "configs[0].graceSeconds: 86401 is more than 86400 (a day); use e.g. 60",
        ),
        (
            limits(r#","graceSeconds":-1"#),
            "configs[0].graceSeconds: invalid value",
        ),
        (
            limits(r#","overshare":"end","unclaimed":"end""#),
            "unknown field `unclaimed`",
        ),
        (
            limits(""),
            "configs[0]: a LimitsConfig sets neither overshare nor graceSeconds; set one of them or remove the LimitsConfig",
        ),
        (
            r#"{"apiVersion":"gpuslice.dev/v1alpha1","kind":"Limits"}"#.to_owned(),
            "use \"MpsMemoryConfig\" or \"LimitsConfig\"",
        ),
        (
            limits(&format!(
                r#","overshare":"end","x":"{}""#,
                "a".repeat(MAX_CONFIG_BYTES)
            )),
            "at most 10240 are allowed",
        ),
    ];
    for (json, expected) in cases {
        let err = refusal(&json);
        assert!(err.contains(expected), "{json:.80}: {err}");
    }
}

#[test]
fn the_claims_limits_are_its_last_limits_config_claim_over_class() {
    let claim = limits(r#","overshare":"end""#);
    let class = limits(r#","graceSeconds":5"#);
    let later = limits(r#","overshare":"dry-run""#);
    let entry = |source, json| ConfigEntry {
        source,
        requests: &[],
        parameters_json: json,
    };
    let entries = [
        entry(ConfigSource::Claim, &claim),
        entry(ConfigSource::Class, &class),
        entry(ConfigSource::Claim, &later),
    ];
    let (index, won) = claim_limits(&entries).unwrap().unwrap();
    assert_eq!(index, 2);
    assert_eq!(won.overshare, Some(LimitMode::DryRun));
    let (index, _) = claim_limits(&entries[..2]).unwrap().unwrap();
    assert_eq!(index, 0, "a claim config wins over a later class config");
    let none = gpu("");
    assert_eq!(
        claim_limits(&[entry(ConfigSource::Claim, &none)]).unwrap(),
        None
    );
    let bad = limits(r#","overshare":"never""#);
    let err = claim_limits(&[entry(ConfigSource::Class, &bad)]).unwrap_err();
    assert!(
        err.to_string().contains("\"never\" is not a limits mode"),
        "{err}"
    );
    let parsed = policies(&[(ConfigSource::Claim, Vec::new(), claim.clone())], &["r"]).unwrap();
    assert_eq!(
        parsed["r"].policy,
        SharingPolicy::Exclusive,
        "limits do not share"
    );
}

#[test]
fn claim_limits_are_stored_with_only_the_fields_set() {
    let only_mode = ClaimLimits {
        overshare: Some(LimitMode::DryRun),
        grace_s: None,
    };
    let text = serde_json::to_string(&only_mode).unwrap();
    assert_eq!(text, r#"{"overshare":"dry-run"}"#);
    assert_eq!(
        serde_json::from_str::<ClaimLimits>(&text).unwrap(),
        only_mode
    );
}
