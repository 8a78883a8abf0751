//! Real processes standing for GPU processes: attribution by their
//! environment, over-share and unclaimed episodes, MIG slices, a GPU the
//! backend cannot list.

use super::*;
use crate::state::AccessKind;

fn pids(device: &crate::activity::DeviceActivity) -> Vec<u32> {
    device.processes.iter().map(|p| p.pid).collect()
}

#[test]
fn sim_processes_go_to_the_claims_their_environment_names_and_the_rest_are_unclaimed() {
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    let (a, b) = (Sleeper::in_claim(A), Sleeper::in_claim(B));
    let stray = Sleeper::new(&[]);
    let elsewhere = Sleeper::in_claim(B);
    let daemon = Sleeper::new(&[]);
    node.run(&a, 0, 4 * GIB, 30, false);
    node.run(&stray, 0, GIB, 5, false);
    node.run(&elsewhere, 0, GIB, 0, false);
    node.run(&b, 1, 2 * GIB, 0, false);
    node.run(&daemon, 1, GIB, 0, false);
    let mut sampler = node.sampler_with_daemons(&[daemon.pid()]);
    let first = sampler.sample_once();
    let now = first.sampled_at_ms / 1000;
    let (ca, cb) = (&first.claims[0], &first.claims[1]);
    assert_eq!(pids(&ca.devices[0]), vec![a.pid()]);
    let pa = &ca.devices[0].processes[0];
    assert_eq!(pa.name, "sh");
    assert_eq!((pa.memory_used, pa.sm_percent), (Some(4 * GIB), Some(30)));
    assert_eq!(ca.devices[0].memory_used, 4 * GIB);
    assert_eq!(
        ca.devices[0].device_memory_used,
        Some(6 * GIB),
        "every process on gpu-0"
    );
    assert_eq!(ca.last_active, Some(now));
    assert_eq!(
        pids(&cb.devices[0]),
        vec![b.pid()],
        "the MPS daemon is not the claim's"
    );
    assert_eq!(cb.last_active, None, "no SM use: idle");
    let mut unclaimed: Vec<(u32, String)> = first
        .unclaimed
        .iter()
        .map(|u| (u.process.pid, u.reason.clone()))
        .collect();
    unclaimed.sort();
    let mut want = vec![
        (
            stray.pid(),
            "no gpuslice claim in its environment".to_owned(),
        ),
        (
            elsewhere.pid(),
            format!("its environment names claim {B}, which does not hold gpu-0"),
        ),
    ];
    want.sort();
    assert_eq!(unclaimed, want);
    assert_eq!(first.warnings.len(), 2);
    assert!(
        first
            .warnings
            .iter()
            .all(|w| w.kind == WarningKind::Unclaimed)
    );
    assert_eq!(first.episodes.unclaimed, 2);
    // The same processes again: the same episodes, none new.
    assert_eq!(sampler.sample_once().episodes.unclaimed, 2);
    assert!(node.backend.stop_process(stray.pid()));
    let third = sampler.sample_once();
    assert_eq!(third.warnings.len(), 1);
    assert_eq!(third.warnings[0].pid, elsewhere.pid());
    assert_eq!(third.episodes.unclaimed, 2, "openings, not open ones");
}

#[test]
fn sim_a_time_sliced_claim_over_its_share_raises_one_warning_per_episode() {
    let node = Node::new(1);
    node.time_slice_gpu_0_between_a_and_b();
    let a = Sleeper::in_claim(A);
    node.run(&a, 0, 50 * GIB, 10, false);
    let mut sampler = node.sampler();
    let mut last = sampler.sample_once();
    for _ in 0..3 {
        last = sampler.sample_once();
    }
    assert_eq!(last.warnings.len(), 1, "{:?}", last.unclaimed);
    let w = &last.warnings[0];
    assert_eq!(
        (w.kind, w.claim_uid.as_str(), w.device.as_str()),
        (WarningKind::OverShare, A, "gpu-0"),
        "{:?}",
        last.unclaimed
    );
    assert!(
        w.message.contains("over its timeslicing share of 39.8 GiB"),
        "{}",
        w.message
    );
    assert_eq!(last.episodes.overshare(AccessKind::TimeSlicing), 1);
    assert_eq!(last.episodes.overshare(AccessKind::Mps), 0);
    // Back under its share: the episode ends; over again: a second one.
    node.run(&a, 0, 10 * GIB, 10, false);
    assert!(sampler.sample_once().warnings.is_empty());
    node.run(&a, 0, 41 * GIB, 10, false);
    assert_eq!(
        sampler
            .sample_once()
            .episodes
            .overshare(AccessKind::TimeSlicing),
        2
    );
}

#[test]
fn sim_an_mps_client_over_its_memory_share_raises_one_warning() {
    let node = Node::new(1);
    let mps = r#"{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{"strategy":"MPS","mpsConfig":{"defaultActiveThreadPercentage":50}}}"#;
    let memory =
        r#"{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":"4Gi"}"#;
    node.engine
        .prepare(&request_with(
            A,
            &["gpu-0"],
            &[mps.to_owned(), memory.to_owned()],
        ))
        .unwrap();
    let a = Sleeper::in_claim(A);
    node.run(&a, 0, 6 * GIB, 20, true);
    // A process of a daemon gpusliced keeps on the GPU (the fake starts
    // none, so the test names it): gpuslice's own, never unclaimed.
    let server = Sleeper::new(&[]);
    node.run(&server, 0, GIB, 0, false);
    let mut sampler = node.sampler_with_daemons(&[server.pid()]);
    let first = sampler.sample_once();
    let d = &first.claims[0].devices[0];
    assert_eq!(
        (d.sharing, d.memory_share),
        (AccessKind::Mps, Some(4 * GIB))
    );
    assert!(d.processes[0].mps_client);
    sampler.sample_once();
    let last = sampler.sample_once();
    assert_eq!(last.warnings.len(), 1);
    assert_eq!(last.episodes.overshare(AccessKind::Mps), 1);
    assert!(
        last.unclaimed.is_empty(),
        "the MPS daemon is gpuslice's own"
    );
}

#[test]
fn sim_last_active_survives_a_restart() {
    let node = Node::held_by_a();
    let a = Sleeper::in_claim(A);
    node.run(&a, 0, GIB, 40, false);
    let active_at = {
        let mut before = node.sampler();
        let s = before.sample_once();
        s.claims[0].last_active.expect("active")
    };
    assert!(node.backend.stop_process(a.pid()));
    // A new sampler (the daemon restarted), later, with nothing running.
    let later = Duration::from_secs(u64::try_from(active_at).unwrap() + 600);
    let after = node.sampler().sample_at(later);
    assert_eq!(after.claims[0].last_active, Some(active_at));
    assert_eq!(after.claims[0].idle_for(active_at + 600), 600);
}

#[test]
fn sim_a_slice_claim_gets_its_processes_by_gpu_instance_and_is_active_without_sm_samples() {
    let node = Node::partitionable();
    let slice = node.node.slice("3g.40gb");
    let (_, mig_uuid) = node.prepare_slice(A, &slice);
    let (a, stray) = (Sleeper::in_claim(A), Sleeper::new(&[]));
    for (process, memory) in [(&a, 2 * GIB), (&stray, GIB)] {
        node.run_on_slice(process, &mig_uuid, memory);
    }
    let snapshot = node.sampler().sample_once();
    let d = &snapshot.claims[0].devices[0];
    assert_eq!(
        (d.device.as_str(), d.uuid.as_str(), d.sharing),
        (slice.as_str(), mig_uuid.as_str(), AccessKind::Mig)
    );
    assert_eq!(pids(d), vec![a.pid()]);
    assert_eq!(d.sm_percent, None, "no per-process SM in MIG mode");
    assert_eq!(
        d.device_memory_used,
        Some(3 * GIB),
        "the slice's own handle"
    );
    assert!(
        d.memory_total > 0 && d.memory_total < node.engine.inventory().gpus[0].info.memory_bytes
    );
    assert!(
        snapshot.claims[0].last_active.is_some(),
        "any process counts as active"
    );
    assert_eq!(snapshot.unclaimed.len(), 1);
    assert_eq!(
        snapshot.unclaimed[0].device, slice,
        "named by the slice it runs on"
    );
}

#[test]
fn sim_a_gpu_the_backend_cannot_list_is_left_out_and_the_others_sampled() {
    use crate::gpu::GpuError;
    use crate::gpu::sim::op;
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    let (a, stray) = (Sleeper::in_claim(A), Sleeper::new(&[]));
    node.run(&a, 0, GIB, 0, false);
    node.run(&stray, 1, GIB, 0, false);
    node.fail_listing(1);
    node.backend.faults().fail_next(
        op::PROCESS_UTILIZATION,
        GpuError::Injected {
            call: op::PROCESS_UTILIZATION,
        },
    );
    let mut sampler = node.sampler();
    let first = sampler.sample_once();
    assert_eq!(pids(&first.claims[0].devices[0]), vec![a.pid()]);
    assert_eq!(first.claims[0].devices[0].sm_percent, None, "not read");
    assert!(
        first.claims[0].last_active.is_some(),
        "utilization unknown: a process counts as activity, never as idle"
    );
    assert_eq!(first.claims[1].process_count(), 0);
    assert!(first.unclaimed.is_empty(), "GPU 1 left out of this sample");
    node.heal_listing(1);
    let second = sampler.sample_once();
    assert_eq!(
        second.claims[0].devices[0].sm_percent,
        Some(0),
        "read again"
    );
    assert_eq!(second.unclaimed.len(), 1);
    assert_eq!(second.unclaimed[0].process.pid, stray.pid());
}

/// A container's process may set the variable gpusliced gives its MPS
/// daemons: that makes it neither gpuslice's own nor exempt. It is still
/// its claim's (and counted against the claim's share), or unclaimed.
#[test]
fn sim_a_process_that_sets_the_daemon_marker_is_not_taken_for_gpuslices_own() {
    let node = Node::held_by_a();
    let marker = (DAEMON_MARKER.to_owned(), "/run/gpuslice/mps/x");
    let in_a = Sleeper::new(&[marker.clone(), (claim_var_name(A), A)]);
    let stray = Sleeper::new(&[marker]);
    node.run(&in_a, 0, 2 * GIB, 10, false);
    node.run(&stray, 0, GIB, 0, false);
    let first = node.sampler().sample_once();
    assert_eq!(pids(&first.claims[0].devices[0]), vec![in_a.pid()]);
    let unclaimed: Vec<u32> = first.unclaimed.iter().map(|u| u.process.pid).collect();
    assert_eq!(unclaimed, vec![stray.pid()]);
}

/// A daemon gpusliced keeps and its children are its own; a grandchild, a
/// process whose parent ended, or any other process is not.
#[test]
fn own_daemons_and_their_children_are_gpuslices_own() {
    let own = std::collections::HashSet::from([100]);
    let info = |parent| crate::activity::procfs::ProcInfo {
        parent,
        ..Default::default()
    };
    assert!(super::super::is_own(&own, 100, &info(1)), "the daemon");
    assert!(super::super::is_own(&own, 101, &info(100)), "its server");
    assert!(!super::super::is_own(&own, 102, &info(101)), "a grandchild");
    assert!(!super::super::is_own(&own, 103, &info(1)), "an orphan");
}
