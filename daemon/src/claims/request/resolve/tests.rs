//! The resolution of a request's winning opaque config against its devices.

use super::*;
use crate::opaque::tests::{GIB, GPU_A, GPU_B, MIG_A, gpu, memory, mig, mps, policies};
use crate::opaque::{ConfigSource, TimeSliceInterval};

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
    assert_eq!(limits, crate::claims::mps_daemon::MpsLimits::default());
    assert_eq!(memory_share, BTreeMap::from([(GPU_A.to_owned(), 20 * GIB)]));
    assert_eq!(TimeSliceInterval::Long.level(), 3);
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
