//! The resolution of a request's winning opaque config against its devices.

use super::*;
use crate::opaque::tests::{GIB, GPU_A, GPU_B, MIG_A, gpu, mig, policies};
use crate::opaque::{ConfigSource, TimeSliceInterval};

pub(crate) fn whole(uuid: &str) -> DeviceFacts<'_> {
    DeviceFacts {
        uuid,
        kind: ConfigKind::Gpu,
        memory_bytes: 80 * GIB,
        product: "NVIDIA H100 80GB HBM3",
        mps: (true, true),
    }
}

/// A MIG device of 10 GiB.
pub(crate) fn mig_device() -> DeviceFacts<'static> {
    DeviceFacts {
        uuid: MIG_A,
        kind: ConfigKind::Mig,
        memory_bytes: 10 * GIB,
        ..whole(MIG_A)
    }
}

/// Fails unless the claim config `json`, checked against `devices`, is
/// refused with a message containing `expected`.
pub(crate) fn check(json: String, devices: &[DeviceFacts<'_>], expected: &str) {
    let out = policies(&[(ConfigSource::Claim, vec![], json.clone())], &["a"]).unwrap();
    let err = validate_for_device("a", &out["a"], devices)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(expected),
        "{json}\n  gave {err}\n  want {expected}"
    );
}

#[test]
fn validate_for_device_refusals_name_the_field() {
    let mig_dev = mig_device();
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
}

#[test]
fn validate_for_device_gives_time_slicing() {
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
    assert_eq!(TimeSliceInterval::Long.level(), 3);
}

#[test]
fn the_resolution_is_pure() {
    crate::opaque::tests::assert_pure("resolve.rs", include_str!("../resolve.rs"));
}
