use std::path::PathBuf;

use super::*;
use crate::opaque::TimeSliceInterval::{Default, Long, Short};

const GPU: &str = "GPU-aaaaaaaa-0000-0000-0000-000000000000";

#[test]
fn the_first_claim_sets_the_interval_and_the_last_resets_it() {
    let mut p = TimeSlicePolicy::new();
    assert_eq!(p.join(GPU, "c1", Long), Ok(Action::Set(Long)));
    assert_eq!(p.join(GPU, "c2", Long), Ok(Action::Nothing));
    assert_eq!(p.join(GPU, "c2", Long), Ok(Action::Nothing), "idempotent");
    assert_eq!(p.claims(GPU), ["c1", "c2"]);
    assert_eq!(p.leave(GPU, "c1"), Action::Nothing);
    assert_eq!(p.leave(GPU, "c2"), Action::Set(Default));
    assert_eq!(p.interval(GPU), None);
    assert_eq!(
        p.leave(GPU, "c2"),
        Action::Nothing,
        "leaving twice does nothing"
    );
}

#[test]
fn a_default_interval_needs_no_reset() {
    let mut p = TimeSlicePolicy::new();
    assert_eq!(p.join(GPU, "c1", Default), Ok(Action::Set(Default)));
    assert_eq!(p.leave(GPU, "c1"), Action::Nothing);
}

#[test]
fn a_conflicting_interval_names_the_other_claim() {
    let mut p = TimeSlicePolicy::new();
    p.join(GPU, "c1", Long).unwrap();
    let err = p.join(GPU, "c2", Short).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "GPU {GPU} is time-sliced at Long for claim c1; this claim asks for Short: ask for Long, or for another GPU"
        )
    );
    assert_eq!(p.claims(GPU), ["c1"], "the refused claim is not recorded");
}

#[test]
fn mps_and_time_slicing_never_share_a_gpu() {
    let mut p = TimeSlicePolicy::new();
    p.join_mps(GPU, "m1").unwrap();
    let err = p.join(GPU, "t1", Long).unwrap_err();
    assert!(
        matches!(&err, TimeSliceError::MpsInUse { holder, .. } if holder == "m1"),
        "{err}"
    );
    p.leave_mps(GPU, "m1");
    p.join(GPU, "t1", Long).unwrap();
    let err = p.join_mps(GPU, "m2").unwrap_err();
    assert!(
        err.to_string().contains("time-sliced for claim t1"),
        "{err}"
    );
}

fn tool(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/tools")
        .join(name)
}

#[test]
fn nvidia_smi_is_run_with_the_level_and_not_supported_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("smi.log");
    // The fake reads its settings from a wrapper script's environment.
    let wrapper = dir.path().join("nvidia-smi");
    let body = format!(
        "#!/bin/sh\nFAKE_SMI_RECORD={} FAKE_SMI_UNSUPPORTED=GPU-p4 exec {} \"$@\"\n",
        record.display(),
        tool("fake-nvidia-smi").display()
    );
    gpuslice_cdi::write_atomic(dir.path(), "nvidia-smi", body.as_bytes(), 0o755).unwrap();
    let smi = NvidiaSmi::new(&wrapper);
    assert_eq!(smi.set_timeslice(GPU, Long), Ok(SetOutcome::Applied));
    let outcome = smi.set_timeslice("GPU-p4", Short).unwrap();
    assert!(
        matches!(&outcome, SetOutcome::NotSupported { message } if message.contains("Not Supported")),
        "{outcome:?}"
    );
    let log = std::fs::read_to_string(&record).unwrap();
    assert_eq!(
        log,
        format!(
            "compute-policy -i {GPU} --set-timeslice=3\ncompute-policy -i GPU-p4 --set-timeslice=1\n"
        )
    );
    let missing = NvidiaSmi::new(&dir.path().join("absent"));
    let err = missing.set_timeslice(GPU, Long).unwrap_err();
    assert!(err.to_string().contains("cannot run it"), "{err}");
}
