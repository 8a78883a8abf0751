//! MPS's checks of a request's winning settings against its devices.

use std::collections::BTreeMap;

use crate::claims::request::resolve::tests::{check, mig_device, whole};
use crate::claims::request::resolve::{DeviceFacts, ResolvedSharing, validate_for_device};
use crate::opaque::ConfigSource;
use crate::opaque::tests::{GIB, GPU_A, GPU_B, memory, mig, mps, policies};

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
fn mps_refusals_name_the_field() {
    let mig_dev = mig_device();
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
fn a_memory_share_resolves_per_gpu() {
    let out = policies(&[(ConfigSource::Claim, vec![], memory("\"20Gi\""))], &["a"]).unwrap();
    let ResolvedSharing::Mps {
        limits,
        memory_share,
        ..
    } = validate_for_device("a", &out["a"], &[whole(GPU_A)]).unwrap()
    else {
        panic!("not MPS")
    };
    assert_eq!(limits, crate::claims::mps_daemon::MpsLimits::default());
    assert_eq!(memory_share, BTreeMap::from([(GPU_A.to_owned(), 20 * GIB)]));
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

#[test]
fn the_resolution_is_pure() {
    crate::opaque::tests::assert_pure("resolve.rs", include_str!("../resolve.rs"));
}
