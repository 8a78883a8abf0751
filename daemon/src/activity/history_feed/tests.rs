use std::collections::BTreeSet;

use super::figures;
use crate::activity::attribute::empty_claim;
use crate::activity::fixtures::{A, GIB};
use crate::activity::held::held_claims;
use crate::activity::{ClaimActivity, ProcessActivity};
use crate::advice::DeviceFigures;

/// Claim A holding gpu-0 and gpu-1 whole, nothing read of it yet.
fn claim() -> ClaimActivity {
    use crate::activity::fixtures::{record, whole};
    let inv = crate::testkit::inventory(2);
    let uuid = |i: usize| inv.gpus[i].info.uuid.clone();
    let records = [record(
        A,
        vec![whole("gpu-0", &uuid(0)), whole("gpu-1", &uuid(1))],
    )];
    empty_claim(&held_claims(&records, &inv)[0])
}

fn process(memory: Option<u64>, sm: Option<u32>) -> ProcessActivity {
    ProcessActivity {
        pid: 7,
        name: "python3".into(),
        memory_used: memory,
        sm_percent: sm,
        mps_client: false,
    }
}

fn gpu0(claim: &ClaimActivity) -> DeviceFigures {
    figures(std::slice::from_ref(claim), &BTreeSet::new())[0].devices[0].clone()
}

#[test]
fn an_idle_device_reports_no_memory_in_use_and_is_not_active() {
    let figures = gpu0(&claim());
    assert_eq!(figures.device, "gpu-0");
    assert_eq!(figures.memory_used, Some(0));
    assert!(!figures.active);
}

#[test]
fn a_running_process_gives_its_memory_sm_and_activity() {
    let mut c = claim();
    c.devices[0].processes.push(process(Some(4 * GIB), Some(5)));
    c.devices[0].memory_used = 4 * GIB;
    c.devices[0].sm_percent = Some(5);
    let figures = gpu0(&c);
    assert_eq!(figures.memory_used, Some(4 * GIB));
    assert_eq!(figures.sm_percent, Some(5));
    assert!(figures.active);
}

#[test]
fn processes_without_a_memory_figure_report_none() {
    let mut c = claim();
    c.devices[0].processes.push(process(None, None));
    let figures = gpu0(&c);
    assert_eq!(figures.memory_used, None, "not 0: nothing was reported");
    assert!(figures.active, "a process where SM is not sampled (MIG)");
}

#[test]
fn a_process_at_zero_sm_is_not_active() {
    let mut c = claim();
    c.devices[0].processes.push(process(Some(GIB), Some(0)));
    assert!(!gpu0(&c).active);
}

#[test]
fn devices_on_unread_gpus_are_left_out_but_the_claim_stays() {
    let unread = BTreeSet::from(["gpu-0".to_owned()]);
    let out = figures(&[claim()], &unread);
    assert_eq!(out[0].uid, A);
    let devices: Vec<&str> = out[0].devices.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(devices, vec!["gpu-1"]);
}
