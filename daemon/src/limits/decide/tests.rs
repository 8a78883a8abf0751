use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::prelude::*;

use super::{Decider, Decision, Policy};
use crate::activity::WarningKind;
use crate::activity::attribute::{Attribution, GpuSample, Inputs, ProcView, attribute};
use crate::activity::episodes::{Episodes, SavedEpisode};
use crate::activity::fixtures::holding;
use crate::activity::held::HeldClaim;
use crate::activity::marker::EnvironMarks;
use crate::activity::procfs::ProcInfo;
use crate::activity::publish::Sample;
use crate::activity::warnings::conditions;
use crate::config::LimitMode;
use crate::gpu::{GpuProcess, MemoryUse};
use crate::opaque::ClaimLimits;
use crate::state::AccessKind;

const A: &str = "aaaaaaaa-0000-4000-8000-000000000001";
const B: &str = "bbbbbbbb-0000-4000-8000-000000000002";
const GIB: u64 = 1 << 30;
const OWN_PID: u32 = 4242;

/// Who a process says it is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Env {
    Claim(&'static str),
    NoClaim,
    MpsDaemon,
    Unreadable,
}

#[derive(Debug, Clone)]
struct Proc {
    pid: u32,
    gpu: u32,
    memory: u64,
    env: Env,
    start: u64,
    comm: &'static str,
}

fn proc(pid: u32, gpu: u32, gib: u64, env: Env) -> Proc {
    Proc {
        pid,
        gpu,
        memory: gib * GIB,
        env,
        start: 1000 + u64::from(pid),
        comm: "python",
    }
}

/// Claims A and B, each an MPS share of 20 GiB of gpu-0; gpu-1 held by none.
fn claims() -> Vec<HeldClaim> {
    [A, B]
        .iter()
        .map(|uid| HeldClaim {
            prepared_at: 0,
            ..holding(uid, 0, AccessKind::Mps, Some(20 * GIB))
        })
        .collect()
}

fn views(procs: &[Proc]) -> HashMap<u32, ProcView> {
    procs
        .iter()
        .map(|p| {
            let info = |claims: &[&str], own_daemon| {
                Ok(ProcInfo {
                    name: p.comm.to_owned(),
                    marks: EnvironMarks {
                        claims: claims.iter().map(|c| (*c).to_owned()).collect(),
                    },
                    start_time: p.start,
                    parent: 1,
                    own_daemon,
                })
            };
            let view = match p.env {
                Env::Claim(uid) => info(&[uid], false),
                Env::NoClaim => info(&[], false),
                Env::MpsDaemon => info(&[], true),
                Env::Unreadable => Err("environment unreadable: permission denied".to_owned()),
            };
            (p.pid, view)
        })
        .collect()
}

fn gpus(procs: &[Proc]) -> Vec<GpuSample> {
    (0..2)
        .map(|index| GpuSample {
            index,
            name: format!("gpu-{index}"),
            processes: procs
                .iter()
                .filter(|p| p.gpu == index)
                .map(|p| GpuProcess {
                    pid: p.pid,
                    used_memory: Some(p.memory),
                    gpu_instance: None,
                    compute_instance: None,
                    mps_client: true,
                })
                .collect(),
            utilization: None,
            memory: BTreeMap::from([(
                None,
                MemoryUse {
                    used: 0,
                    total: 80 * GIB,
                },
            )]),
        })
        .collect()
}

/// A node sampled over and over: the episodes and the decider carry on.
struct Node {
    policy: Policy,
    episodes: Episodes,
    decider: Decider,
    /// Claims' own limits, as their records keep them.
    own: Vec<(&'static str, ClaimLimits)>,
}

/// One sample's inputs and what was decided.
struct Seen {
    attribution: Attribution,
    procs: HashMap<u32, ProcView>,
    episodes: Vec<SavedEpisode>,
    decisions: Vec<Decision>,
}

impl Node {
    fn new(overshare: LimitMode, unclaimed: LimitMode, grace_s: u64) -> Self {
        Self {
            policy: Policy {
                overshare,
                unclaimed,
                grace_s,
                exempt: BTreeSet::from(["nv-hostengine".to_owned()]),
                own_pid: OWN_PID,
            },
            episodes: Episodes::default(),
            decider: Decider::default(),
            own: Vec::new(),
        }
    }

    fn sample(&mut self, now: i64, procs: &[Proc]) -> Seen {
        let mut claims = claims();
        for claim in &mut claims {
            claim.limits = (self.own.iter())
                .find(|(uid, _)| *uid == claim.uid)
                .map(|(_, limits)| *limits);
        }
        let gpus = gpus(procs);
        let procs = views(procs);
        let attribution = attribute(&Inputs {
            now,
            claims: &claims,
            gpus: &gpus,
            procs: &procs,
            last_active: &BTreeMap::new(),
        });
        self.episodes.observe(now, conditions(&attribution));
        let episodes = self.episodes.saved();
        let decisions = self.decider.decide(
            &self.policy,
            &Sample {
                now,
                attribution: &attribution,
                procs: &procs,
                episodes: &episodes,
                claims: &claims,
                unread: &BTreeSet::new(),
            },
        );
        Seen {
            attribution,
            procs,
            episodes,
            decisions,
        }
    }

    fn pids(&mut self, now: i64, procs: &[Proc]) -> Vec<(u32, LimitMode)> {
        self.sample(now, procs)
            .decisions
            .iter()
            .map(|d| (d.pid, d.mode))
            .collect()
    }
}

/// A over its share with 12 + 10 GiB, B within it with 5 GiB.
fn overshare_world() -> Vec<Proc> {
    vec![
        proc(100, 0, 12, Env::Claim(A)),
        proc(101, 0, 10, Env::Claim(A)),
        proc(200, 0, 5, Env::Claim(B)),
    ]
}

#[test]
fn the_claims_largest_process_is_ended_once_the_grace_has_passed() {
    let mut node = Node::new(LimitMode::End, LimitMode::Warn, 60);
    let world = overshare_world();
    assert!(node.pids(1000, &world).is_empty(), "the episode begins");
    assert!(node.pids(1059, &world).is_empty(), "within the grace");
    let seen = node.sample(1060, &world);
    assert_eq!(seen.decisions.len(), 1);
    let d = &seen.decisions[0];
    assert_eq!(
        (d.pid, d.mode, d.kind),
        (100, LimitMode::End, WarningKind::OverShare)
    );
    assert_eq!((d.claim_uid.as_str(), d.claim.as_str()), (A, "ns/c-a"));
    assert_eq!(
        (d.device.as_str(), d.sharing),
        ("gpu-0", Some(AccessKind::Mps))
    );
    assert_eq!((d.start_time, d.comm.as_str()), (1100, "python"));
    assert_eq!((d.memory_used, d.claim_memory_used), (12 * GIB, 22 * GIB));
    assert_eq!((d.share, d.over_for_s, d.grace_s), (Some(20 * GIB), 60, 60));
    assert!(
        node.pids(1200, &world).is_empty(),
        "the ended process is still listed: nothing more while it dies"
    );
    let without = &world[1..];
    assert!(node.pids(1201, without).is_empty(), "back within the share");
}

#[test]
fn warn_decides_nothing() {
    let mut node = Node::new(LimitMode::Warn, LimitMode::Warn, 0);
    let mut world = overshare_world();
    world.push(proc(300, 1, 1, Env::NoClaim));
    for now in [0, 100, 10_000] {
        assert!(node.pids(now, &world).is_empty());
    }
}

#[test]
fn a_tie_ends_the_newest_process() {
    let mut node = Node::new(LimitMode::End, LimitMode::Warn, 0);
    let mut world = vec![
        proc(100, 0, 11, Env::Claim(A)),
        proc(101, 0, 11, Env::Claim(A)),
    ];
    world[0].start = 5000;
    assert_eq!(node.pids(0, &world), [(100, LimitMode::End)]);
}

#[test]
fn dry_run_names_the_process_once_per_episode() {
    let mut node = Node::new(LimitMode::DryRun, LimitMode::Warn, 10);
    let world = overshare_world();
    assert!(node.pids(0, &world).is_empty());
    assert_eq!(node.pids(10, &world), [(100, LimitMode::DryRun)]);
    assert!(node.pids(20, &world).is_empty());
    assert!(node.pids(1000, &world).is_empty());
    assert!(node.pids(1001, &world[1..]).is_empty(), "the episode ends");
    assert!(node.pids(1002, &world).is_empty(), "a new one begins");
    assert_eq!(node.pids(1012, &world), [(100, LimitMode::DryRun)]);
}

#[test]
fn after_an_end_the_grace_restarts() {
    let mut node = Node::new(LimitMode::End, LimitMode::Warn, 10);
    let world = vec![
        proc(100, 0, 15, Env::Claim(A)),
        proc(101, 0, 15, Env::Claim(A)),
        proc(102, 0, 15, Env::Claim(A)),
    ];
    assert!(node.pids(0, &world).is_empty());
    assert_eq!(node.pids(10, &world), [(102, LimitMode::End)]);
    let rest = &world[..2];
    assert!(node.pids(15, rest).is_empty(), "ended 5 s ago");
    assert_eq!(node.pids(20, rest), [(101, LimitMode::End)]);
}

#[test]
fn the_largest_process_that_may_be_ended_is_chosen() {
    let mut node = Node::new(LimitMode::End, LimitMode::Warn, 0);
    let mut hostengine = proc(102, 0, 30, Env::Claim(A));
    hostengine.comm = "nv-hostengine";
    let world = vec![
        proc(1, 0, 40, Env::Claim(A)),
        proc(OWN_PID, 0, 40, Env::Claim(A)),
        hostengine,
        proc(100, 0, 9, Env::Claim(A)),
        proc(101, 0, 2, Env::Claim(A)),
    ];
    assert_eq!(node.pids(0, &world), [(100, LimitMode::End)]);
}

#[test]
fn a_process_without_a_start_time_is_never_chosen() {
    let mut node = Node::new(LimitMode::End, LimitMode::End, 0);
    let mut a = proc(100, 0, 30, Env::Claim(A));
    a.start = 0;
    let mut stray = proc(300, 1, 1, Env::NoClaim);
    stray.start = 0;
    assert!(node.pids(0, &[a, stray]).is_empty());
}

#[test]
fn only_a_process_whose_environment_names_no_claim_is_ended_as_unclaimed() {
    let mut node = Node::new(LimitMode::Warn, LimitMode::End, 5);
    let mut exempt = proc(305, 1, 1, Env::NoClaim);
    exempt.comm = "nv-hostengine";
    let world = vec![
        proc(300, 1, 1, Env::NoClaim),
        proc(301, 1, 1, Env::Unreadable),
        proc(302, 1, 1, Env::Claim(A)), // A does not hold gpu-1
        proc(303, 1, 1, Env::MpsDaemon),
        proc(1, 1, 1, Env::NoClaim),
        proc(OWN_PID, 1, 1, Env::NoClaim),
        exempt,
        proc(200, 0, 5, Env::Claim(B)),
    ];
    assert!(node.pids(0, &world).is_empty());
    let seen = node.sample(5, &world);
    assert_eq!(seen.decisions.len(), 1);
    let d = &seen.decisions[0];
    assert_eq!(
        (d.pid, d.kind, d.mode),
        (300, WarningKind::Unclaimed, LimitMode::End)
    );
    assert_eq!((d.claim_uid.as_str(), d.device.as_str()), ("", "gpu-1"));
    assert!(
        node.pids(100, &world).is_empty(),
        "never the same process twice"
    );
}

#[test]
fn unclaimed_dry_run_is_once_per_process_episode() {
    let mut node = Node::new(LimitMode::End, LimitMode::DryRun, 0);
    let world = vec![
        proc(300, 1, 1, Env::NoClaim),
        proc(200, 0, 5, Env::Claim(B)),
    ];
    assert_eq!(node.pids(0, &world), [(300, LimitMode::DryRun)]);
    assert!(node.pids(1, &world).is_empty());
}

#[test]
fn a_process_ended_as_over_share_is_not_ended_again_as_unclaimed() {
    let mut node = Node::new(LimitMode::End, LimitMode::End, 0);
    let mut world = overshare_world();
    assert_eq!(node.pids(0, &world), [(100, LimitMode::End)]);
    // Caught mid-exit: its environment reads empty now, so it is unclaimed.
    world[0].env = Env::NoClaim;
    assert!(
        node.pids(1, &world).is_empty(),
        "the same process, still exiting"
    );
    world[0].start += 1;
    assert_eq!(
        node.pids(2, &world),
        [(100, LimitMode::End)],
        "a new process with that pid"
    );
}

fn arb_env() -> impl Strategy<Value = Env> {
    prop_oneof![
        Just(Env::Claim(A)),
        Just(Env::Claim(B)),
        Just(Env::NoClaim),
        Just(Env::MpsDaemon),
        Just(Env::Unreadable),
    ]
}

fn arb_mode() -> impl Strategy<Value = LimitMode> {
    prop_oneof![
        Just(LimitMode::Warn),
        Just(LimitMode::DryRun),
        Just(LimitMode::End)
    ]
}

/// Up to 8 processes with distinct pids (0, 1 and gpusliced's among the
/// choices), and for each of 6 samples which of them are listed.
fn arb_world() -> impl Strategy<Value = (Vec<Proc>, Vec<Vec<bool>>)> {
    let pid = prop_oneof![Just(0u32), Just(1), Just(OWN_PID), 2u32..50];
    let one = (pid, 0u32..2, 0u64..25, arb_env(), 0u64..4, any::<bool>());
    prop::collection::vec(one, 1..8).prop_flat_map(|raw| {
        let mut seen = BTreeSet::new();
        let procs: Vec<Proc> = raw
            .into_iter()
            .filter(|r| seen.insert(r.0))
            .map(|(pid, gpu, gib, env, start, exempt)| Proc {
                start: if start == 0 {
                    0
                } else {
                    start + u64::from(pid)
                },
                comm: if exempt { "nv-hostengine" } else { "python" },
                ..proc(pid, gpu, gib, env)
            })
            .collect();
        let n = procs.len();
        let present = prop::collection::vec(prop::collection::vec(any::<bool>(), n), 6);
        (Just(procs), present)
    })
}

fn check(d: &Decision, seen: &Seen, policy: &Policy) -> Result<(), TestCaseError> {
    let info = seen.procs.get(&d.pid).and_then(|v| v.as_ref().ok());
    let info = info.ok_or_else(|| TestCaseError::fail("a process never read"))?;
    prop_assert!(d.pid > 1 && d.pid != OWN_PID);
    prop_assert!(!info.own_daemon);
    prop_assert!(!policy.exempt.contains(&info.name));
    prop_assert_eq!(d.start_time, info.start_time);
    prop_assert!(d.start_time > 0);
    prop_assert!(d.over_for_s >= i64::try_from(policy.grace_s).unwrap());
    match d.kind {
        WarningKind::OverShare => {
            prop_assert_ne!(policy.overshare, LimitMode::Warn);
            let claim = seen
                .attribution
                .claims
                .iter()
                .find(|c| c.uid == d.claim_uid);
            let device = claim.and_then(|c| c.devices.iter().find(|x| x.device == d.device));
            let device = device.ok_or_else(|| TestCaseError::fail("not the claim's device"))?;
            prop_assert!(device.processes.iter().any(|p| p.pid == d.pid));
            prop_assert!(info.marks.claims.contains(&d.claim_uid));
        }
        WarningKind::Unclaimed => {
            prop_assert_ne!(policy.unclaimed, LimitMode::Warn);
            prop_assert!(
                seen.attribution
                    .unclaimed
                    .iter()
                    .any(|u| u.process.pid == d.pid)
            );
            prop_assert!(info.marks.claims.is_empty());
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn every_decision_is_safe_and_rate_limited(
        (procs, present) in arb_world(),
        overshare in arb_mode(),
        unclaimed in arb_mode(),
        grace_s in 0u64..3,
    ) {
        let mut node = Node::new(overshare, unclaimed, grace_s);
        // Per episode key: when it was last acted on, and the dry-run episodes named.
        let mut ended_at: BTreeMap<(WarningKind, String, u32), i64> = BTreeMap::new();
        let mut named: BTreeSet<(WarningKind, String, u32, i64)> = BTreeSet::new();
        for (now, listed) in (0i64..).zip(&present) {
            let world: Vec<Proc> = procs
                .iter()
                .zip(listed)
                .filter(|(_, on)| **on)
                .map(|(p, _)| p.clone())
                .collect();
            let seen = node.sample(now, &world);
            let mut keys = BTreeSet::new();
            for d in &seen.decisions {
                check(d, &seen, &node.policy)?;
                let scope = if d.kind == WarningKind::Unclaimed { d.pid } else { 0 };
                let key = (d.kind, d.claim_uid.clone(), scope);
                prop_assert!(keys.insert(key.clone()), "one decision per episode per sample");
                let since = seen
                    .episodes
                    .iter()
                    .find(|e| e.kind == d.kind && e.claim_uid == d.claim_uid && e.pid == scope)
                    .map(|e| e.since)
                    .ok_or_else(|| TestCaseError::fail("no open episode"))?;
                match d.mode {
                    LimitMode::End => {
                        if let Some(at) = ended_at.insert(key, now) {
                            let grace = i64::try_from(grace_s).unwrap();
                            prop_assert!(at < since || now - at >= grace, "two ends within the grace");
                        }
                    }
                    LimitMode::DryRun => {
                        prop_assert!(named.insert((d.kind, d.claim_uid.clone(), scope, since)), "dry-run twice in one episode");
                    }
                    LimitMode::Warn => prop_assert!(false, "a warn decision"),
                }
            }
        }
    }
}

/// A and B both over their shares (A 12 + 10 GiB, B 25 GiB).
fn both_over() -> Vec<Proc> {
    vec![
        proc(100, 0, 12, Env::Claim(A)),
        proc(101, 0, 10, Env::Claim(A)),
        proc(200, 0, 25, Env::Claim(B)),
    ]
}

/// Node mode, node grace, A's own limits, decisions at 1010, at 1060.
type Row = (
    LimitMode,
    u64,
    ClaimLimits,
    &'static [(u32, LimitMode)],
    &'static [(u32, LimitMode)],
);

fn own(overshare: Option<LimitMode>, grace_s: Option<u64>) -> ClaimLimits {
    ClaimLimits { overshare, grace_s }
}

#[test]
fn a_claims_own_limits_replace_the_nodes_for_it_alone() {
    use LimitMode::{DryRun, End, Warn};
    let table: [Row; 6] = [
        (Warn, 60, own(Some(End), None), &[], &[(100, End)]),
        (Warn, 60, own(Some(End), Some(10)), &[(100, End)], &[]),
        (End, 60, own(Some(Warn), None), &[], &[(200, End)]),
        (End, 60, own(None, Some(10)), &[(100, End)], &[(200, End)]),
        (
            DryRun,
            60,
            own(Some(End), Some(0)),
            &[(100, End)],
            &[(200, DryRun)],
        ),
        (Warn, 0, own(Some(DryRun), Some(3600)), &[], &[]),
    ];
    for (mode, grace, limits, at_1010, at_1060) in table {
        let mut node = Node::new(mode, Warn, grace);
        node.own = vec![(A, limits)];
        let world = both_over();
        let first = node.pids(1000, &world);
        let expected_first: &[(u32, LimitMode)] = match (limits.grace_s, mode) {
            (Some(0), _) => &[(100, End)],
            _ => &[],
        };
        assert_eq!(first, expected_first, "{mode} {limits:?} at 1000");
        let expected_1010: Vec<_> = at_1010
            .iter()
            .copied()
            .filter(|d| !expected_first.contains(d))
            .collect();
        assert_eq!(
            node.pids(1010, &world),
            expected_1010,
            "{mode} {limits:?} at 1010"
        );
        assert_eq!(
            node.pids(1060, &world),
            at_1060,
            "{mode} {limits:?} at 1060"
        );
    }
}

#[test]
fn a_decision_under_a_claims_own_grace_carries_that_grace() {
    let mut node = Node::new(LimitMode::Warn, LimitMode::Warn, 60);
    node.own = vec![(A, own(Some(LimitMode::End), Some(30)))];
    let world = both_over();
    assert!(node.pids(1000, &world).is_empty());
    let seen = node.sample(1030, &world);
    assert_eq!(seen.decisions.len(), 1);
    let d = &seen.decisions[0];
    assert_eq!(
        (d.pid, d.mode, d.grace_s, d.over_for_s),
        (100, LimitMode::End, 30, 30)
    );
}
