//! The publication contract, as a property (docs/publication.md): for any
//! node layout and any claims, every set of allocations a structured-
//! parameters scheduler could choose from the ResourceSlices the node
//! publishes prepares, and the prepared claims' CDI devices do not overlap.
//!
//! * The node: gpusliced's real claim engine in process on simulated GPUs
//!   ([`node`]): 1 to 4 GPUs of any simulated model, each whole or (a model
//!   with MIG) MIG-managed with a random layout, and the fleet's mixed node
//!   (a B200 and an RTX PRO 6000 under `[mig]`, a GB200 and an L4 whole); `[mig] advertise` layout (slices made
//!   at prepare or ahead) or partitionable; the DRA plugin's
//!   `consumable_capacity` on or off.
//! * The publication: GetInventory's answer built into ResourceSlices by the
//!   plugin's own `slices::build_pool`, as resource.k8s.io/v1, and the same
//!   slices through k8s-openapi's v1beta1 types and back ([`beta`]), which
//!   must lose nothing; a case picks which the scheduler reads.
//! * The scheduler: gpuslice-selector's allocator, the product one behind
//!   `gpuslicectl match` ([`scheduler`]; `selector/src/allocate/` names the
//!   upstream rule each part follows: kubernetes/kubernetes
//!   staging/src/k8s.io/dynamic-resource-allocation/structured/internal/
//!   incubating), walking devices first-fit or in a seeded random order.
//!   Claims ask, through the packaged DeviceClasses and CEL selectors, for
//!   whole GPUs, MIG slices (any, or one profile) or, through a class with
//!   an MPS config, a memory share of a GPU; ExactCount 1-2 or All; some
//!   with a matchAttribute constraint (productName or parentUUID).
//! * The check: each pod's claims are allocated against what earlier claims
//!   hold and the slices published now; each allocated claim goes through the
//!   plugin's `claim::plan`, `api::prepare_request` and `Engine::prepare` and
//!   must prepare (but for the one allocation MPS cannot serve, which must
//!   be refused, [`mps_sets`], and one device twice in a claim, which
//!   upstream allows a device shared by capacity and gpusliced refuses as
//!   "listed twice"); then no two claims' CDI devices overlap
//!   ([`cdi_check`]) and the specs are exactly the claims still allocated;
//!   some claims are released (unprepared, deallocated) between rounds.
//!
//! Cases: `GPUSLICE_CONTRACT_CASES` (default 64). A failure is shrunk and
//! printed as the case; proptest keeps its seed in
//! `proptest-regressions/` next to this folder and runs it first next time.
//! MPS claims run on the test kit's fake control daemons
//! (`gpuslice::claims::mps_daemon::FakeMps`), so every case may ask for them.

mod alignment;
mod beta;
mod cases;
mod cdi_check;
mod compare;
mod mps_sets;
mod node;
mod real;
mod scheduler;
mod taints;
// Shared with the real_allocator test, which uses all of it.
#[allow(dead_code, unused_imports)]
#[path = "../real_allocator/tool/mod.rs"]
mod tool;

use std::collections::BTreeSet;

use gpuslice_selector::allocate::Held;
use k8s_openapi::api::resource::v1::{
    AllocationResult, DeviceRequestAllocationResult as Allocated, ResourceClaim, ResourceSliceSpec,
};
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use cases::{Case, resource_claim, uuid};
use compare::{TALLY, Verdict, compare};
use mps_sets::{MpsSets, REFUSAL, sets_of};
use node::Node;
use real::{Question, Real};
use scheduler::Answer;

/// What gpusliced answers for one device twice in a claim.
const TWICE: &str = "is listed twice in the claim";

fn cases() -> u32 {
    std::env::var("GPUSLICE_CONTRACT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

/// The slices the scheduler reads now.
fn published(node: &Node, v1beta1: bool) -> Vec<ResourceSliceSpec> {
    let slices = node.publish();
    let through_beta = beta::through_v1beta1(&slices);
    if v1beta1 { through_beta } else { slices }
}

fn devices(
    slices: &[ResourceSliceSpec],
) -> impl Iterator<Item = &k8s_openapi::api::resource::v1::Device> {
    slices.iter().flat_map(|s| s.devices.iter().flatten())
}

/// Profile names the pool offers, sorted.
fn offered_profiles(slices: &[ResourceSliceSpec]) -> Vec<String> {
    let names: BTreeSet<String> = devices(slices)
        .filter_map(|d| d.attributes.as_ref()?.get("profile")?.string.clone())
        .collect();
    names.into_iter().collect()
}

fn summary(slices: &[ResourceSliceSpec]) -> String {
    devices(slices)
        .map(|d| {
            let counters = if d.consumes_counters.is_some() {
                "+counters"
            } else {
                ""
            };
            let multi = if d.allow_multiple_allocations == Some(true) {
                "+shared"
            } else {
                ""
            };
            format!("{}{counters}{multi}", d.name)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn results(allocation: &AllocationResult) -> Vec<Allocated> {
    allocation
        .devices
        .iter()
        .flat_map(|d| d.results.iter().flatten().cloned())
        .collect()
}

fn brief(results: &[Allocated]) -> String {
    let each = results.iter().map(|r| match &r.consumed_capacity {
        Some(c) => format!("{}: {} {c:?}", r.request, r.device),
        None => format!("{}: {}", r.request, r.device),
    });
    each.collect::<Vec<_>>().join(", ")
}

fn twice(results: &[Allocated]) -> bool {
    let mut seen = BTreeSet::new();
    !results.iter().all(|r| seen.insert(r.device.as_str()))
}

/// A claim prepared and still allocated.
struct Live {
    uid: String,
    object: ResourceClaim,
    allocation: AllocationResult,
    results: Vec<Allocated>,
}

/// The allocations to prepare for one pod: the selector allocator's, and
/// with the real allocator present, upstream's after the two agreed (the
/// selector allocator's where a known upstream bug explains the
/// difference); a disagreement nothing explains is the error.
fn allocations(
    case: &Case,
    real: Option<&Real>,
    question: &Question<'_>,
    held: &Held,
) -> Result<Option<Vec<AllocationResult>>, String> {
    let selector = scheduler::schedule(question.slices, question.classes, question.claims, held);
    let Some(real) = real else {
        return Ok(selector.allocations().map(<[_]>::to_vec));
    };
    let upstream = real.ask(question);
    let verdict = compare(&selector, &upstream, question, || {
        scheduler::input_json(question.slices, question.classes, question.claims, held)
    });
    lock(&TALLY).pod(&selector, &upstream, &verdict);
    let chosen = match verdict {
        Verdict::Agree => upstream,
        Verdict::Known(..) | Verdict::GaveUp => selector,
        Verdict::Disagree(why) => {
            return Err(format!(
                "{why}
(case: {} GPUs, partitionable {}, consumable {}, v1beta1 {}, random                  order {})",
                case.node().gpus.len(),
                case.partitionable(),
                case.consumable,
                case.v1beta1,
                case.random_order
            ));
        }
    };
    Ok(match chosen {
        Answer::Fits(found) => Some(found),
        Answer::No | Answer::Refused(_) | Answer::GaveUp(_) => None,
    })
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs one case; the broken promise, naming the claim, as the error.
fn run(case: &Case, real: Option<&Real>) -> Result<(), String> {
    let node = Node::start(&case.node());
    if real.is_some() {
        lock(&TALLY).case();
    }
    let classes = scheduler::classes();
    let mut rng = fastrand::Rng::with_seed(case.seed);
    let mut held = Held::default();
    let mut live: Vec<Live> = Vec::new();
    let mut mps = MpsSets::default();
    let (mut claims_made, mut shares) = (0u64, 0u64);
    let mut share = || {
        shares += 1;
        uuid(2, shares)
    };
    for round in &case.rounds {
        for pod in &round.pods {
            let slices = published(&node, case.v1beta1);
            let names = offered_profiles(&slices);
            let claims: Vec<_> = pod
                .iter()
                .map(|c| {
                    claims_made += 1;
                    c.resolve(uuid(1, claims_made), &names)
                })
                .collect();
            let order = scheduler::in_order(&slices, case.random_order.then_some(&mut rng));
            let question = Question {
                slices: &order,
                classes: &classes,
                claims: &claims,
                allocated: live.iter().map(|l| l.object.clone()).collect(),
                consumable: case.consumable,
            };
            let Some(allocations) = allocations(case, real, &question, &held)? else {
                continue;
            };
            for (claim, allocation) in claims.iter().zip(allocations) {
                let object = resource_claim(claim, &allocation, &mut share);
                let allocation = object
                    .status
                    .as_ref()
                    .and_then(|s| s.allocation.clone())
                    .unwrap_or_default();
                let results = results(&allocation);
                let uid = object.metadata.uid.clone().unwrap_or_default();
                let sets = sets_of(claim, &results);
                let unservable = mps.partly_overlapping(&sets).map(str::to_owned);
                match (node.prepare(&object), unservable) {
                    (Err(err), Some(_)) if err.contains(REFUSAL) => continue,
                    (Err(err), _) if twice(&results) && err.contains(TWICE) => continue,
                    (Ok(()), Some(other)) => {
                        return Err(format!(
                            "claim {uid} was prepared although its MPS devices {sets:?} partly \
                             overlap those of claim {other}"
                        ));
                    }
                    (Err(err), _) => {
                        let earlier: Vec<String> = live
                            .iter()
                            .map(|l| format!("{} [{}]", l.uid, brief(&l.results)))
                            .collect();
                        return Err(format!(
                            "claim {uid} was allocated [{}] from the published pool [{}] \
                             (earlier allocations: {earlier:?}) and its prepare failed: {err}",
                            brief(&results),
                            summary(&slices),
                        ));
                    }
                    (Ok(()), None) => {}
                }
                mps.add(&uid, sets);
                held.add(&allocation).map_err(|e| e.to_string())?;
                live.push(Live {
                    uid,
                    object,
                    allocation,
                    results,
                });
            }
            let allocated: Vec<(String, Vec<Allocated>)> = live
                .iter()
                .map(|l| (l.uid.clone(), l.results.clone()))
                .collect();
            cdi_check::assert_no_overlap(&node.cdi_dir(), &allocated);
        }
        for r in &round.release {
            if live.is_empty() {
                break;
            }
            let gone = live.remove(usize::from(*r) % live.len());
            node.unprepare(&gone.uid);
            mps.remove(&gone.uid);
            held.remove(&gone.allocation).map_err(|e| e.to_string())?;
        }
    }
    for gone in live.drain(..) {
        node.unprepare(&gone.uid);
    }
    assert_eq!(node.claim_count(), 0, "claims left after every unprepare");
    Ok(())
}

/// The contract on the mixed node of the 2026 fleet (a B200 and a 4-slice
/// RTX PRO 6000 under `[mig]`, a GB200 and an L4 whole) in each form
/// `[mig] advertise` resolves to: the layout (slices made at prepare or
/// ahead) and partitionable. `GPUSLICE_CONTRACT_CASES` / 2 cases each.
#[test]
fn sim_the_fleets_mixed_node_keeps_the_contract_in_every_advertise_mode() {
    let real = Real::available();
    for partitionable in [false, true] {
        let config = Config {
            cases: (cases() / 2).max(1),
            source_file: Some(file!()),
            ..Config::default()
        };
        let mut runner = TestRunner::new(config);
        let result = runner.run(&cases::fleet_case(partitionable), |case| {
            run(&case, real.as_ref()).map_err(TestCaseError::fail)
        });
        if let Err(err) = result {
            panic!("partitionable {partitionable}: {err}");
        }
    }
}

#[test]
fn sim_every_allocation_from_the_published_slices_prepares() {
    let real = Real::available();
    let config = Config {
        cases: cases(),
        // A failing case's seed goes to proptest-regressions/ (run first
        // next time).
        source_file: Some(file!()),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&cases::case(), |case| {
        run(&case, real.as_ref()).map_err(TestCaseError::fail)
    });
    if real.is_some() {
        eprintln!("{}", lock(&TALLY));
    }
    if let Err(err) = result {
        panic!("{err}");
    }
}
