//! The publication contract, as a property (docs/publication.md): for any
//! node layout and any claims, every set of allocations a structured-
//! parameters scheduler could choose from the ResourceSlices the node
//! publishes prepares, and the prepared claims' CDI devices do not overlap.
//!
//! * The node: gpusliced's real claim engine in process on simulated GPUs
//!   ([`node`]): 1 to 3 GPUs of the six simulated models, each whole or
//!   MIG-managed with a random layout; `[mig] advertise` layout (slices made
//!   at prepare or ahead) or partitionable; the DRA plugin's
//!   `consumable_capacity` on or off.
//! * The publication: GetInventory's answer built into ResourceSlices by the
//!   plugin's own `slices::build_pool`, read as resource.k8s.io/v1 or, turned
//!   into the v1beta1 shape with k8s-openapi's v1beta1 types, as v1beta1
//!   ([`shape`]); the two must read the same.
//! * The scheduler: [`model`], following the upstream allocator's rules
//!   (kubernetes/kubernetes staging/src/k8s.io/dynamic-resource-allocation/
//!   structured/internal/experimental/allocator_experimental.go at 8a84988,
//!   consumable_capacity.go at 74f8fbd, allocatedstate.go at 355c223,
//!   incubating/constraint.go at 45e50b1; the module doc lists each rule),
//!   walking devices first-fit or in a seeded random order. Claims ask for
//!   whole GPUs, MIG slices (any, or one profile) or, through a class with an
//!   MPS config, a memory share of a GPU; ExactCount 1-2 or All; some with a
//!   matchAttribute constraint (productName or parentUUID).
//! * The check: each pod's claims are allocated against what earlier claims
//!   hold and the slices published now; each allocated claim goes through the
//!   plugin's `claim::plan`, `api::prepare_request` and `Engine::prepare` and
//!   must prepare (but for the one allocation MPS cannot serve, which must
//!   be refused, [`mps_sets`]); then no two claims' CDI devices overlap
//!   ([`cdi_check`]) and the specs are exactly the claims still allocated;
//!   some claims are released (unprepared, deallocated) between rounds.
//!
//! Cases: `GPUSLICE_CONTRACT_CASES` (default 64). A failure is shrunk and
//! printed as the case; proptest keeps its seed in
//! `proptest-regressions/` next to this folder and runs it first next time.
//! MPS needs python3 (the stand-in control program): without it shared
//! requests become plain ones, said once, and `GPUSLICE_REQUIRE_TOOLS=1`
//! makes that a failure.

mod alignment;
mod cases;
mod cdi_check;
mod model;
mod mps_sets;
mod node;
mod shape;

use proptest::test_runner::{Config, TestCaseError, TestRunner};

use cases::{Case, resource_claim, uuid};
use model::{Allocated, Allocations, allocate};
use mps_sets::{MpsSets, REFUSAL, sets_of};
use node::Node;
use shape::{Attr, Pool, pool_v1, pool_v1beta1, to_v1beta1};

fn cases() -> u32 {
    std::env::var("GPUSLICE_CONTRACT_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn mps_available() -> bool {
    if node::python3() {
        return true;
    }
    assert!(
        std::env::var("GPUSLICE_REQUIRE_TOOLS").as_deref() != Ok("1"),
        "python3 (the MPS stand-in's interpreter) is missing and GPUSLICE_REQUIRE_TOOLS=1"
    );
    eprintln!("python3 missing: shared (MPS) requests are generated as plain whole-GPU ones");
    false
}

/// The pool the scheduler reads now.
fn published(node: &Node, v1beta1: bool) -> Pool {
    let slices = node.publish();
    let v1 = pool_v1(&slices);
    let beta = pool_v1beta1(&to_v1beta1(&slices));
    assert_eq!(v1, beta, "the v1beta1 shape reads differently");
    if v1beta1 { beta } else { v1 }
}

/// Profile names the pool offers, sorted.
fn offered_profiles(pool: &Pool) -> Vec<String> {
    let mut names: Vec<String> = pool
        .devices
        .iter()
        .filter_map(|d| match d.attrs.get("profile") {
            Some(Attr::Str(p)) => Some(p.clone()),
            _ => None,
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

fn summary(pool: &Pool) -> String {
    pool.devices
        .iter()
        .map(|d| {
            let counters = if d.consumes.is_empty() {
                ""
            } else {
                "+counters"
            };
            let multi = if d.multi { "+shared" } else { "" };
            format!("{}{counters}{multi}", d.name)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs one case; the broken promise, naming the claim, as the error.
fn run(case: &Case, mps: bool) -> Result<(), String> {
    let node = Node::start(&case.node(), mps);
    let mut rng = fastrand::Rng::with_seed(case.seed);
    let mut held = Allocations::default();
    let mut live: Vec<(String, Vec<Allocated>)> = Vec::new();
    let mut mps = MpsSets::default();
    let (mut claims_made, mut shares) = (0u64, 0u64);
    let mut share = || {
        shares += 1;
        uuid(2, shares)
    };
    for round in &case.rounds {
        for pod in &round.pods {
            let pool = published(&node, case.v1beta1);
            let names = offered_profiles(&pool);
            let claims: Vec<model::Claim> = pod
                .iter()
                .map(|c| {
                    claims_made += 1;
                    c.resolve(uuid(1, claims_made), &names, node.mps)
                })
                .collect();
            let mut order: Vec<usize> = (0..pool.devices.len()).collect();
            if case.random_order {
                rng.shuffle(&mut order);
            }
            let Some(results) = allocate(&pool, &claims, &held, order) else {
                continue;
            };
            for (claim, results) in claims.iter().zip(results) {
                let object = resource_claim(claim, &results, &mut share);
                let sets = sets_of(claim, &results);
                let unservable = mps.partly_overlapping(&sets).map(str::to_owned);
                match (node.prepare(&object), unservable) {
                    (Err(err), Some(_)) if err.contains(REFUSAL) => continue,
                    (Ok(()), Some(other)) => {
                        return Err(format!(
                            "claim {} was prepared although its MPS devices {sets:?} partly \
                             overlap those of claim {other}",
                            claim.uid
                        ));
                    }
                    (Err(err), _) => {
                        return Err(format!(
                            "claim {} was allocated {:?} from the published pool [{}] \
                             (earlier allocations: {:?}) and its prepare failed: {err}",
                            claim.uid,
                            results,
                            summary(&pool),
                            live
                        ));
                    }
                    (Ok(()), None) => {}
                }
                mps.add(&claim.uid, sets);
                held.add(&results);
                live.push((claim.uid.clone(), results));
            }
            cdi_check::assert_no_overlap(&node.cdi_dir(), &live);
        }
        for r in &round.release {
            if live.is_empty() {
                break;
            }
            let (uid, results) = live.remove(usize::from(*r) % live.len());
            node.unprepare(&uid);
            mps.remove(&uid);
            held.remove(&results);
        }
    }
    for (uid, _) in live.drain(..) {
        node.unprepare(&uid);
    }
    assert_eq!(node.claim_count(), 0, "claims left after every unprepare");
    Ok(())
}

#[test]
fn sim_every_allocation_from_the_published_slices_prepares() {
    let mps = mps_available();
    let config = Config {
        cases: cases(),
        // A failing case's seed goes to proptest-regressions/ (run first
        // next time).
        source_file: Some(file!()),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config);
    let result = runner.run(&cases::case(), |case| {
        run(&case, mps).map_err(TestCaseError::fail)
    });
    if let Err(err) = result {
        panic!("{err}");
    }
}
