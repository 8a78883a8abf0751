use std::collections::BTreeMap;

use super::*;

const GIB: u64 = 1024 * 1024 * 1024;
const GPU_A: &str = "GPU-aaaaaaaa-0000-0000-0000-000000000000";
const GPU_B: &str = "GPU-bbbbbbbb-0000-0000-0000-000000000000";
const MIG_A: &str = "MIG-aaaaaaaa-0000-0000-0000-000000000000";

fn gpu(json: &str) -> String {
    format!(r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig"{json}}}"#)
}

fn mig(json: &str) -> String {
    format!(r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"MigDeviceConfig"{json}}}"#)
}

fn memory(q: &str) -> String {
    format!(r#"{{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":{q}}}"#)
}

fn mps(inner: &str) -> String {
    gpu(&format!(
        r#","sharing":{{"strategy":"MPS","mpsConfig":{{{inner}}}}}"#
    ))
}

/// The refusal of a single config entry, as text.
fn refusal(json: &str) -> String {
    parse_entry(0, json).unwrap_err().to_string()
}

fn policies(
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

fn whole(uuid: &str) -> DeviceFacts<'_> {
    DeviceFacts {
        uuid,
        kind: ConfigKind::Gpu,
        memory_bytes: 80 * GIB,
        product: "NVIDIA H100 80GB HBM3",
        mps: (true, true),
    }
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
    let ts_default = gpu(r#","sharing":{"strategy":"TimeSlicing"}"#);
    assert!(matches!(
        parse_entry(0, &ts_default).unwrap(),
        ParsedEntry::Nvidia {
            policy: SharingPolicy::TimeSlicing {
                interval: TimeSliceInterval::Default
            },
            ..
        }
    ));
    let m = mps(&format!(
        r#""defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"10Gi","defaultPerDevicePinnedMemoryLimit":{{"1":"2Gi","{GPU_A}":1048576}}"#
    ));
    let ParsedEntry::Nvidia {
        policy: SharingPolicy::Mps(s),
        ..
    } = parse_entry(0, &m).unwrap()
    else {
        panic!("not MPS");
    };
    assert_eq!(s.default_active_thread_percentage, Some(50));
    assert_eq!(s.default_pinned_device_memory_limit, Some(10 * GIB));
    assert_eq!(s.per_device_pinned_memory_limit.get("1"), Some(&(2 * GIB)));
    assert_eq!(
        s.per_device_pinned_memory_limit.get(GPU_A),
        Some(&(1024 * 1024))
    );
    let mig_mps = mig(r#","sharing":{"strategy":"MPS"}"#);
    assert!(matches!(
        parse_entry(0, &mig_mps).unwrap(),
        ParsedEntry::Nvidia {
            kind: ConfigKind::Mig,
            policy: SharingPolicy::Mps(_)
        }
    ));
    assert_eq!(
        parse_entry(0, &memory("\"20Gi\"")).unwrap(),
        ParsedEntry::MemoryShare(20 * GIB)
    );
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
            mps(r#""defaultActiveThreadPercentage":"50""#),
            "configs[0].sharing.mpsConfig.defaultActiveThreadPercentage: invalid type",
        ),
        (
            mps(r#""defaultActiveThreadPercentage":0"#),
            "configs[0].sharing.mpsConfig.defaultActiveThreadPercentage: 0 is outside 1..100",
        ),
        (
            mps(r#""defaultActiveThreadPercentage":101"#),
            "configs[0].sharing.mpsConfig.defaultActiveThreadPercentage: 101 is outside 1..100",
        ),
        (
            mps(r#""defaultActiveThreadPercentage":-5"#),
            "defaultActiveThreadPercentage: -5 is outside 1..100",
        ),
        (
            mps(r#""defaultPinnedDeviceMemoryLimit":"1023Ki""#),
            "configs[0].sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: \"1023Ki\" is less than 1Mi",
        ),
        (
            mps(r#""defaultPinnedDeviceMemoryLimit":"lots""#),
            "configs[0].sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: \"lots\" is not a quantity",
        ),
        (
            mps(r#""defaultPerDevicePinnedMemoryLimit":{"0":"1k"}"#),
            "configs[0].sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit.0: \"1k\" is less than 1Mi",
        ),
        (
            mps(r#""multiUser":true"#),
            "configs[0].sharing.mpsConfig.multiUser: true is not supported",
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
        (
            memory("\"512Ki\""),
            "configs[0].memory: \"512Ki\" is less than 1Mi",
        ),
        (
            r#"{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig"}"#.to_owned(),
            "configs[0]: missing field `memory`",
        ),
        ("[1,2]".to_owned(), "configs[0][0]: invalid type"),
        ("{".to_owned(), "configs[0]: EOF"),
        (
            format!("{{\"pad\":\"{}\"}}", "x".repeat(MAX_CONFIG_BYTES)),
            "configs[0]: the parameters are",
        ),
    ];
    for (json, expected) in cases {
        let message = refusal(&json);
        assert!(
            message.contains(expected),
            "{json}\n  gave {message}\n  want {expected}"
        );
    }
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

#[test]
fn a_bad_entry_is_refused_even_when_it_does_not_win() {
    let entries = vec![
        (
            ConfigSource::Class,
            vec!["other".to_owned()],
            mps(r#""defaultActiveThreadPercentage":500"#),
        ),
        (ConfigSource::Claim, vec![], gpu("")),
    ];
    let err = policies(&entries, &["a"]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("configs[0].sharing.mpsConfig.defaultActiveThreadPercentage"),
        "{err}"
    );
}

#[test]
fn a_memory_share_implies_mps_and_combines_with_mps_settings() {
    let alone = vec![(ConfigSource::Claim, vec![], memory("\"20Gi\""))];
    let out = policies(&alone, &["a"]).unwrap();
    assert_eq!(
        out["a"].policy,
        SharingPolicy::Mps(MpsSettings {
            memory_share: Some(20 * GIB),
            ..MpsSettings::default()
        })
    );
    let with_mps = vec![
        (
            ConfigSource::Class,
            vec![],
            mps(r#""defaultActiveThreadPercentage":25"#),
        ),
        (ConfigSource::Claim, vec![], memory("\"20Gi\"")),
    ];
    let out = policies(&with_mps, &["a"]).unwrap();
    let SharingPolicy::Mps(s) = &out["a"].policy else {
        panic!("not MPS")
    };
    assert_eq!(
        (s.default_active_thread_percentage, s.memory_share),
        (Some(25), Some(20 * GIB))
    );
    let with_ts = vec![
        (
            ConfigSource::Claim,
            vec![],
            gpu(r#","sharing":{"strategy":"TimeSlicing"}"#),
        ),
        (ConfigSource::Claim, vec![], memory("\"20Gi\"")),
    ];
    let err = policies(&with_ts, &["a"]).unwrap_err().to_string();
    assert!(
        err.starts_with("configs[1].memory: a memory share needs strategy MPS"),
        "{err}"
    );
    let with_limit = vec![
        (
            ConfigSource::Claim,
            vec![],
            mps(r#""defaultPinnedDeviceMemoryLimit":"1Gi""#),
        ),
        (ConfigSource::Claim, vec![], memory("\"20Gi\"")),
    ];
    let err = policies(&with_limit, &["a"]).unwrap_err().to_string();
    assert!(
        err.starts_with("configs[1].memory: configs[0].sharing.mpsConfig already sets"),
        "{err}"
    );
}

#[test]
fn validate_for_device_resolves_limits_per_uuid() {
    let entries = vec![(
        ConfigSource::Claim,
        vec![],
        mps(
            r#""defaultActiveThreadPercentage":50,"defaultPinnedDeviceMemoryLimit":"10Gi","defaultPerDevicePinnedMemoryLimit":{"1":"2Gi"}"#,
        ),
    )];
    let out = policies(&entries, &["a"]).unwrap();
    let resolved = validate_for_device("a", &out["a"], &[whole(GPU_B), whole(GPU_A)]).unwrap();
    let ResolvedSharing::Mps {
        key,
        limits,
        memory_share,
    } = resolved
    else {
        panic!("not MPS")
    };
    assert_eq!(key.uuids(), [GPU_A, GPU_B]);
    assert_eq!(limits.active_thread_percentage, Some(50));
    assert_eq!(limits.pinned_memory_limits[GPU_B], 10 * GIB);
    assert_eq!(
        limits.pinned_memory_limits[GPU_A],
        2 * GIB,
        "index 1 is the second device"
    );
    assert!(memory_share.is_empty());
}

#[test]
fn validate_for_device_refusals_name_the_field() {
    let check = |json: String, devices: &[DeviceFacts<'_>], expected: &str| {
        let out = policies(&[(ConfigSource::Claim, vec![], json.clone())], &["a"]).unwrap();
        let err = validate_for_device("a", &out["a"], devices)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(expected),
            "{json}\n  gave {err}\n  want {expected}"
        );
    };
    let mig_dev = DeviceFacts {
        uuid: MIG_A,
        kind: ConfigKind::Mig,
        memory_bytes: 10 * GIB,
        ..whole(MIG_A)
    };
    check(
        mps(r#""defaultPinnedDeviceMemoryLimit":"81Gi""#),
        &[whole(GPU_A)],
        "configs[0].sharing.mpsConfig.defaultPinnedDeviceMemoryLimit: 86973087744 bytes is more than device GPU-aaaaaaaa",
    );
    check(
        mps(r#""defaultPerDevicePinnedMemoryLimit":{"2":"1Gi"}"#),
        &[whole(GPU_A)],
        "configs[0].sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit.2: key \"2\" names none",
    );
    check(
        gpu(r#","sharing":{"strategy":"TimeSlicing"}"#),
        &[mig_dev],
        "configs[0].kind: kind GpuConfig cannot apply to device MIG-aaaaaaaa",
    );
    check(
        mig(""),
        &[whole(GPU_A)],
        "configs[0].kind: kind MigDeviceConfig cannot apply",
    );
    check(
        memory("\"4Gi\""),
        &[mig_dev],
        "configs[0].memory: device MIG-aaaaaaaa",
    );
    check(
        memory("\"100Gi\""),
        &[whole(GPU_A)],
        "configs[0].memory: 107374182400 bytes is more than",
    );
    check(
        mig(
            r#","sharing":{"strategy":"MPS","mpsConfig":{"defaultPinnedDeviceMemoryLimit":"11Gi"}}"#,
        ),
        &[mig_dev],
        "is more than device MIG-aaaaaaaa-0000-0000-0000-000000000000 has (10737418240 bytes)",
    );
}

#[test]
fn validate_for_device_gives_time_slicing_and_memory_shares() {
    let ts =
        gpu(r#","sharing":{"strategy":"TimeSlicing","timeSlicingConfig":{"interval":"Medium"}}"#);
    let out = policies(&[(ConfigSource::Claim, vec![], ts)], &["a"]).unwrap();
    assert_eq!(
        validate_for_device("a", &out["a"], &[whole(GPU_B), whole(GPU_A)]).unwrap(),
        ResolvedSharing::TimeSlicing {
            interval: TimeSliceInterval::Medium,
            gpus: vec![GPU_A.to_owned(), GPU_B.to_owned()]
        }
    );
    let out = policies(&[(ConfigSource::Claim, vec![], memory("\"20Gi\""))], &["a"]).unwrap();
    let ResolvedSharing::Mps {
        limits,
        memory_share,
        ..
    } = validate_for_device("a", &out["a"], &[whole(GPU_A)]).unwrap()
    else {
        panic!("not MPS")
    };
    assert_eq!(limits, crate::mps::MpsLimits::default());
    assert_eq!(memory_share, BTreeMap::from([(GPU_A.to_owned(), 20 * GIB)]));
    assert_eq!(TimeSliceInterval::Long.level(), 3);
}

#[test]
fn the_sharing_module_is_pure() {
    for (file, source) in [
        ("mod.rs", include_str!("mod.rs")),
        ("parse.rs", include_str!("parse.rs")),
        ("model.rs", include_str!("model.rs")),
        ("resolve.rs", include_str!("resolve.rs")),
        ("admit.rs", include_str!("admit.rs")),
    ] {
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

/// MPS needs compute capability 3.5, its client limits Volta: a GPU below
/// either is refused, naming it, what it lacks and what to use instead.
#[test]
fn mps_and_its_limits_are_refused_on_gpus_without_them() {
    let policy = |json: String| policies(&[(ConfigSource::Claim, vec![], json)], &["a"]).unwrap();
    let pascal = DeviceFacts {
        product: "Tesla P4",
        mps: (true, false),
        ..whole(GPU_A)
    };
    let kepler = DeviceFacts {
        product: "Tesla K80",
        mps: (false, false),
        ..whole(GPU_A)
    };
    let plain = policy(mps(""));
    validate_for_device("a", &plain["a"], &[pascal]).unwrap();
    let err = validate_for_device("a", &plain["a"], &[kepler])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("{GPU_A} is a Tesla K80, which has no MPS")),
        "{err}"
    );
    let limited = policy(mps(r#""defaultActiveThreadPercentage":50"#));
    let err = validate_for_device("a", &limited["a"], &[pascal])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("which has no MPS client limits (MPS client limits need Volta"),
        "{err}"
    );
    assert!(
        err.contains("leave out defaultActiveThreadPercentage"),
        "{err}"
    );
}
