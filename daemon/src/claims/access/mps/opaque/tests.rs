//! MPS's opaque configs: the settings of strategy MPS and the memory share,
//! parsed and refused through `opaque`'s entry point, as a claim's configs
//! reach them.

use crate::opaque::tests::{GIB, GPU_A, assert_refusals, gpu, memory, mps, policies};
use crate::opaque::{ConfigSource, MpsSettings, ParsedEntry, SharingPolicy, parse_entry};

#[test]
fn mps_settings_parse_to_the_policy() {
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
    assert_eq!(
        parse_entry(0, &memory("\"20Gi\"")).unwrap(),
        ParsedEntry::MemoryShare(20 * GIB)
    );
}

#[test]
fn every_mps_refusal_names_its_field() {
    let cases: Vec<(String, &str)> = vec![
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
            memory("\"512Ki\""),
            "configs[0].memory: \"512Ki\" is less than 1Mi",
        ),
        (
            r#"{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig"}"#.to_owned(),
            "configs[0]: missing field `memory`",
        ),
    ];
    assert_refusals(cases);
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
