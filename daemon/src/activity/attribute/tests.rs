use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::prelude::*;

use super::{GpuSample, Inputs, OverShare, ProcView, attribute};
use crate::activity::fixtures::{A, B, C, GIB, held_claim, held_gpu, holding};
use crate::activity::held::{HeldClaim, HeldDevice};
use crate::activity::marker::EnvironMarks;
use crate::activity::procfs::ProcInfo;
use crate::gpu::{GpuProcess, MemoryUse, ProcessUtilization};
use crate::state::AccessKind;

const NOW: i64 = 5_000;

fn slice(index: u32, gi: u32) -> HeldDevice {
    HeldDevice {
        device: format!("gpu-{index}-mig-3g40gb-{gi}"),
        gpu_instance: Some(gi),
        uuid: format!("MIG-{gi}"),
        sharing: AccessKind::Mig,
        memory_total: 0,
        ..held_gpu(index, AccessKind::Mig, None)
    }
}

fn process(pid: u32, memory: u64) -> GpuProcess {
    GpuProcess {
        pid,
        used_memory: Some(memory),
        gpu_instance: None,
        compute_instance: None,
        mps_client: false,
    }
}

fn on_slice(pid: u32, memory: u64, gi: u32) -> GpuProcess {
    GpuProcess {
        gpu_instance: Some(gi),
        compute_instance: Some(0),
        ..process(pid, memory)
    }
}

fn gpu(index: u32, processes: Vec<GpuProcess>, sm: Option<&[(u32, u32)]>) -> GpuSample {
    GpuSample {
        index,
        name: format!("gpu-{index}"),
        processes,
        utilization: sm.map(|s| {
            s.iter()
                .map(|&(pid, sm_percent)| ProcessUtilization {
                    pid,
                    sm_percent,
                    memory_percent: 0,
                    timestamp_us: 1,
                })
                .collect()
        }),
        memory: BTreeMap::from([(
            None,
            MemoryUse {
                used: 9 * GIB,
                total: 80 * GIB,
            },
        )]),
    }
}

fn env(claims: &[&str]) -> ProcView {
    Ok(ProcInfo {
        name: "python".to_owned(),
        marks: EnvironMarks {
            claims: claims.iter().map(|c| (*c).to_owned()).collect(),
        },
        start_time: 100,
        parent: 1,
        own_daemon: false,
    })
}

fn run(
    claims: &[HeldClaim],
    gpus: &[GpuSample],
    procs: &[(u32, ProcView)],
    last: &[(&str, i64)],
) -> super::Attribution {
    let procs: HashMap<u32, ProcView> = procs.iter().cloned().collect();
    let last: BTreeMap<String, i64> = last.iter().map(|(u, t)| ((*u).to_owned(), *t)).collect();
    attribute(&Inputs {
        now: NOW,
        claims,
        gpus,
        procs: &procs,
        last_active: &last,
    })
}

#[test]
fn a_marked_process_on_its_claims_gpu_is_the_claims() {
    let claims = [holding(A, 0, AccessKind::Exclusive, None)];
    let out = run(
        &claims,
        &[gpu(
            0,
            vec![process(10, 4 * GIB)],
            Some(&[(10, 30), (10, 45)]),
        )],
        &[(10, env(&[A]))],
        &[],
    );
    let d = &out.claims[0].devices[0];
    assert_eq!(d.processes.len(), 1);
    assert_eq!(d.processes[0].name, "python");
    assert_eq!(d.processes[0].sm_percent, Some(45), "the highest sample");
    assert_eq!(d.memory_used, 4 * GIB);
    assert_eq!(d.sm_percent, Some(45));
    assert_eq!(d.device_memory_used, Some(9 * GIB));
    assert_eq!(out.claims[0].last_active, Some(NOW));
    assert!(out.unclaimed.is_empty());
    assert!(out.overshares.is_empty());
}

#[test]
fn unclaimed_processes_say_why() {
    let claims = [holding(A, 0, AccessKind::Exclusive, None)];
    let out = run(
        &claims,
        &[gpu(
            1,
            vec![process(10, GIB), process(11, GIB), process(12, GIB)],
            None,
        )],
        &[
            (10, env(&[])),
            (11, env(&[A])),
            (
                12,
                Err("environment unreadable: permission denied".to_owned()),
            ),
        ],
        &[],
    );
    let reasons: Vec<(u32, &str, &str)> = out
        .unclaimed
        .iter()
        .map(|u| (u.process.pid, u.device.as_str(), u.reason.as_str()))
        .collect();
    let named = format!("its environment names claim {A}, which does not hold gpu-1");
    assert_eq!(
        reasons,
        vec![
            (10, "gpu-1", "no gpuslice claim in its environment"),
            (11, "gpu-1", named.as_str()),
            (12, "gpu-1", "environment unreadable: permission denied"),
        ]
    );
    assert_eq!(out.unclaimed[0].process.name, "python");
    assert_eq!(out.unclaimed[2].process.name, "", "unread: no name");
    assert_eq!(out.claims[0].last_active, None, "never active");
}

#[test]
fn the_mps_daemon_is_neither_claimed_nor_unclaimed() {
    let claims = [holding(A, 0, AccessKind::Mps, Some(GIB))];
    let daemon = Ok(ProcInfo {
        name: "nvidia-cuda-mps-server".to_owned(),
        marks: EnvironMarks {
            claims: BTreeSet::new(),
        },
        start_time: 100,
        parent: 1,
        own_daemon: true,
    });
    let out = run(
        &claims,
        &[gpu(0, vec![process(10, 30 * GIB)], None)],
        &[(10, daemon)],
        &[],
    );
    assert!(out.unclaimed.is_empty());
    assert_eq!(out.claims[0].process_count(), 0);
    assert!(out.overshares.is_empty());
}

#[test]
fn slices_match_by_gpu_instance_and_any_process_makes_them_active() {
    let claims = [held_claim(A, AccessKind::Mig, vec![slice(0, 2)])];
    let out = run(
        &claims,
        &[gpu(
            0,
            vec![on_slice(10, GIB, 2), on_slice(11, GIB, 3)],
            None,
        )],
        &[(10, env(&[A])), (11, env(&[A]))],
        &[],
    );
    let d = &out.claims[0].devices[0];
    assert_eq!(
        d.processes.iter().map(|p| p.pid).collect::<Vec<_>>(),
        vec![10]
    );
    assert_eq!(d.sm_percent, None, "MIG: not sampled");
    assert_eq!(d.processes[0].sm_percent, None);
    assert_eq!(out.claims[0].last_active, Some(NOW));
    assert_eq!(out.unclaimed.len(), 1);
    assert_eq!(out.unclaimed[0].device, "gpu-0 instance 3");
    assert!(
        out.unclaimed[0]
            .reason
            .contains("does not hold gpu-0 instance 3")
    );
}

#[test]
fn a_whole_gpu_process_does_not_belong_to_a_slice_claim() {
    let claims = [held_claim(A, AccessKind::Mig, vec![slice(0, 2)])];
    let out = run(
        &claims,
        &[gpu(0, vec![process(10, GIB)], None)],
        &[(10, env(&[A]))],
        &[],
    );
    assert_eq!(out.claims[0].process_count(), 0);
    assert_eq!(out.unclaimed[0].device, "gpu-0");
}

#[test]
fn a_process_naming_two_claims_on_one_gpu_goes_to_the_first_by_uid() {
    let claims = [
        holding(A, 0, AccessKind::TimeSlicing, Some(40 * GIB)),
        holding(B, 0, AccessKind::TimeSlicing, Some(40 * GIB)),
    ];
    let out = run(
        &claims,
        &[gpu(0, vec![process(10, GIB)], None)],
        &[(10, env(&[B, A]))],
        &[],
    );
    assert_eq!(out.claims[0].process_count(), 1);
    assert_eq!(out.claims[1].process_count(), 0);
}

#[test]
fn an_idle_sampled_claim_keeps_its_last_active_time() {
    let claims = [
        holding(A, 0, AccessKind::Exclusive, None),
        holding(B, 1, AccessKind::Exclusive, None),
    ];
    let out = run(
        &claims,
        &[
            gpu(0, vec![process(10, GIB)], Some(&[(10, 0)])),
            gpu(1, vec![], Some(&[])),
        ],
        &[(10, env(&[A]))],
        &[(A, 4_000)],
    );
    assert_eq!(out.claims[0].last_active, Some(4_000));
    assert_eq!(out.claims[0].devices[0].sm_percent, Some(0));
    assert_eq!(out.claims[0].devices[0].processes[0].sm_percent, Some(0));
    assert_eq!(out.claims[1].last_active, None);
    assert_eq!(
        out.claims[1].devices[0].sm_percent,
        Some(0),
        "sampled, nothing ran"
    );
}

#[test]
fn device_sm_is_the_sum_of_its_processes_at_most_100() {
    let claims = [holding(A, 0, AccessKind::Exclusive, None)];
    let out = run(
        &claims,
        &[gpu(
            0,
            vec![process(10, GIB), process(11, GIB)],
            Some(&[(10, 70), (11, 60)]),
        )],
        &[(10, env(&[A])), (11, env(&[A]))],
        &[],
    );
    assert_eq!(out.claims[0].devices[0].sm_percent, Some(100));
    assert_eq!(out.claims[0].devices[0].memory_used, 2 * GIB);
}

#[test]
fn only_shared_devices_past_their_share_are_over_it() {
    let claims = [
        holding(A, 0, AccessKind::Mps, Some(4 * GIB)),
        holding(B, 0, AccessKind::Mps, Some(4 * GIB)),
        holding(C, 1, AccessKind::Exclusive, None),
    ];
    let out = run(
        &claims,
        &[
            gpu(0, vec![process(10, 5 * GIB), process(11, 4 * GIB)], None),
            gpu(1, vec![process(12, 79 * GIB)], None),
        ],
        &[(10, env(&[A])), (11, env(&[B])), (12, env(&[C]))],
        &[],
    );
    assert_eq!(
        out.overshares,
        vec![OverShare {
            claim: 0,
            device: 0
        }]
    );
}

#[test]
fn a_slice_takes_its_memory_from_its_own_handle() {
    let claims = [held_claim(A, AccessKind::Mig, vec![slice(0, 2)])];
    let mut sample = gpu(0, vec![], None);
    sample.memory.insert(
        Some(2),
        MemoryUse {
            used: GIB,
            total: 40 * GIB,
        },
    );
    let out = run(&claims, &[sample], &[], &[]);
    let d = &out.claims[0].devices[0];
    assert_eq!(
        (d.device_memory_used, d.memory_total),
        (Some(GIB), 40 * GIB)
    );
}

fn arb_process() -> impl Strategy<Value = (u32, Option<u32>, u8, bool)> {
    (1u32..40, prop::option::of(0u32..3), 0u8..8, any::<bool>())
}

proptest! {
    /// Every process lands in exactly one place (a claim, unclaimed, or
    /// gpuslice's own), and a claim gets only processes whose environment
    /// names it and that run on a device it holds.
    #[test]
    fn every_process_lands_once_and_only_where_its_environment_allows(
        holdings in prop::collection::vec((0u32..2, prop::option::of(0u32..3)), 3),
        processes in prop::collection::vec((0u32..2, arb_process()), 0..20),
    ) {
        let uids = [A, B, C];
        let claims: Vec<HeldClaim> = uids
            .iter()
            .zip(&holdings)
            .map(|(uid, &(g, gi))| {
                let device = match gi { Some(gi) => slice(g, gi), None => held_gpu(g, AccessKind::TimeSlicing, Some(GIB)) };
                held_claim(uid, AccessKind::TimeSlicing, vec![device])
            })
            .collect();
        let mut gpus = vec![gpu(0, vec![], None), gpu(1, vec![], None)];
        let mut procs = HashMap::new();
        let mut seen = BTreeSet::new();
        let mut ours = 0;
        for (g, (pid, gi, mask, daemon)) in &processes {
            let pid = pid + 100 * g;
            if !seen.insert(pid) { continue; }
            let named: Vec<&str> = uids.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, u)| *u).collect();
            let mut view = env(&named);
            if let Ok(info) = view.as_mut() { info.own_daemon = *daemon; }
            ours += usize::from(*daemon);
            procs.insert(pid, view);
            let p = GpuProcess { gpu_instance: *gi, ..process(pid, GIB) };
            gpus[usize::try_from(*g).unwrap()].processes.push(p);
        }
        let last = BTreeMap::new();
        let out = attribute(&Inputs { now: NOW, claims: &claims, gpus: &gpus, procs: &procs, last_active: &last });
        let claimed: usize = out.claims.iter().map(|c| c.process_count()).sum();
        prop_assert_eq!(claimed + out.unclaimed.len() + ours, seen.len());
        for (c, activity) in out.claims.iter().enumerate() {
            let held = &claims[c].devices[0];
            for p in &activity.devices[0].processes {
                let Ok(info) = &procs[&p.pid] else { unreachable!() };
                prop_assert!(info.marks.claims.contains(&activity.uid));
                prop_assert!(!info.own_daemon);
                let on = gpus.iter().find(|g| g.processes.iter().any(|q| q.pid == p.pid)).unwrap();
                let q = on.processes.iter().find(|q| q.pid == p.pid).unwrap();
                prop_assert_eq!(Some(on.index), held.gpu_index);
                prop_assert_eq!(q.gpu_instance, held.gpu_instance);
                // No claim earlier by uid could have taken it.
                for earlier in &claims[..c] {
                    let d = &earlier.devices[0];
                    let fits = d.gpu_index == Some(on.index) && d.gpu_instance == q.gpu_instance;
                    prop_assert!(!(fits && info.marks.claims.contains(&earlier.uid)));
                }
            }
        }
    }
}
