//! The kit's node and fakes: a node starts as gpusliced does, the fakes
//! answer and record as the stand-ins in tests/tools do, and a restart or a
//! reboot treats MPS daemons as the real ones are treated.

use super::SimNodeBuilder;
use super::requests::{mps, request_with, timeslicing};
use crate::claims::compute_policy::TimeSliceError;
use crate::claims::mps_daemon::{MpsError, MpsKey};
use crate::gpu::ComputeMode;

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000a1";
const B: &str = "bbbbbbbb-0000-4000-8000-0000000000b2";

#[test]
fn sim_fake_tools_record_what_the_stand_ins_record() {
    let node = SimNodeBuilder::h100s(2).fake_tools().start();
    let e = node.engine();
    e.prepare(&request_with(A, &["gpu-0"], &[mps(50)])).unwrap();
    e.prepare(&request_with(B, &["gpu-1"], &[timeslicing("Long")]))
        .unwrap();
    let (gpu0, gpu1) = (node.uuid(0), node.uuid(1));
    let mps_fake = node.mps.as_ref().unwrap();
    assert_eq!(
        mps_fake.record(),
        [
            format!("start CUDA_VISIBLE_DEVICES={gpu0} ATP=50"),
            "get_server_list".to_owned(),
            "set_default_active_thread_percentage 50".to_owned(),
            "get_default_active_thread_percentage".to_owned(),
        ]
    );
    assert_eq!(
        node.smi.as_ref().unwrap().calls(),
        [format!("compute-policy -i {gpu1} --set-timeslice=3")]
    );
    assert_eq!(node.mode(0), ComputeMode::ExclusiveProcess);
    e.unprepare(A).unwrap();
    e.unprepare(B).unwrap();
    assert_eq!(mps_fake.record().last().map(String::as_str), Some("quit"));
    assert!(mps_fake.running().is_empty(), "the daemon quit");
    assert_eq!(
        node.smi.as_ref().unwrap().calls().last(),
        Some(&format!("compute-policy -i {gpu1} --set-timeslice=0"))
    );
    assert_eq!(node.mode(0), ComputeMode::Default);
}

#[test]
fn sim_a_restart_adopts_the_running_daemon_and_a_reboot_starts_it_again() {
    let mut node = SimNodeBuilder::h100s(1).fake_tools().start();
    node.engine()
        .prepare(&request_with(A, &["gpu-0"], &[mps(50)]))
        .unwrap();
    node.restart();
    let mps_fake = node.mps.clone().unwrap();
    assert_eq!(mps_fake.starts(), 1, "taken over, not started again");
    assert_eq!(node.engine().sharing_view()[0].daemons.len(), 1);
    node.reboot("boot-2");
    assert_eq!(
        mps_fake.starts(),
        2,
        "the reboot ended it; start-up restarts it"
    );
    assert!(node.has_record(A) && node.spec(A).is_some());
}

#[test]
fn sim_injected_failures_fail_the_prepare_and_leave_nothing() {
    let node = SimNodeBuilder::h100s(1).fake_tools().start();
    let e = node.engine();
    node.mps.as_ref().unwrap().fail_next_start();
    let err = e
        .prepare(&request_with(A, &["gpu-0"], &[mps(50)]))
        .unwrap_err();
    assert!(err.to_string().contains("exited during start-up"), "{err}");
    assert!(!node.has_record(A) && node.spec(A).is_none());
    assert_eq!(node.mode(0), ComputeMode::Default);
    node.smi
        .as_ref()
        .unwrap()
        .fail_next(TimeSliceError::Command {
            command: "nvidia-smi".to_owned(),
            problem: "injected".to_owned(),
        });
    let err = e
        .prepare(&request_with(A, &["gpu-0"], &[timeslicing("Short")]))
        .unwrap_err();
    assert!(err.to_string().contains("injected"), "{err}");
    assert!(!node.has_record(A));
    e.prepare(&request_with(A, &["gpu-0"], &[timeslicing("Short")]))
        .unwrap();
}

#[test]
fn sim_a_killed_fake_daemon_is_restarted_with_its_limits() {
    let node = SimNodeBuilder::h100s(1).fake_tools().start();
    let e = node.engine();
    e.prepare(&request_with(A, &["gpu-0"], &[mps(50)])).unwrap();
    let mps_fake = node.mps.as_ref().unwrap();
    let key = MpsKey::new([node.uuid(0).as_str()]);
    assert!(mps_fake.kill(&key.hash()));
    let daemon = &e.sharing_view()[0].daemons[0];
    assert_eq!(daemon.restarts, 1);
    let record = mps_fake.record();
    let second = record
        .iter()
        .rposition(|l| l.starts_with("start "))
        .unwrap();
    assert!(
        record[second..].contains(&"set_default_active_thread_percentage 50".to_owned()),
        "{record:?}"
    );
    mps_fake.fail_command(
        "quit",
        MpsError::Command {
            command: "quit".to_owned(),
            pipe_dir: "pipe".into(),
            problem: "injected".to_owned(),
        },
    );
    e.unprepare(A).unwrap();
    assert!(mps_fake.running().is_empty(), "stopped even so");
}
