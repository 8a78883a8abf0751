//! Load: many concurrent clients preparing and unpreparing claims of every
//! kind (exclusive, MIG, MPS, time-slicing) on the real gpusliced, with the
//! node's invariants checked while the load runs and after it.
//!
//! One driver, two entry points: the fast test below (in the e2e tier, a
//! few thousand operations or fewer) and `cargo bench -p gpuslice --bench
//! load` (daemon/benches/load.rs, 10,000 operations, which includes this
//! folder with `#[path]`). Reading order:
//! 1. [`node`]: the simulated node (8 H100s: three in MIG mode with layouts,
//!    five whole and shareable) and its device catalogue.
//! 2. [`workload`]: what a client asks for and what answer it may get, and
//!    [`chooser`], which draws it (pure).
//! 3. [`ledger`]: every claim's life as its client knows it, so checks that
//!    race with the load never blame a claim that is mid-flight.
//! 4. [`client`]: one client's loop: choose, call, time, judge.
//! 5. [`holdings`]: who may hold what of a GPU together (pure).
//! 6. [`observe`]: what the node shows (API, files, sim hardware, processes)
//!    and [`metrics`] (its Prometheus listener, scraped).
//! 7. [`concurrent`] (checks that hold at any instant) and [`quiescent`]
//!    (exact checks with the clients paused, and the empty end state), run
//!    by [`looks`].
//! 8. [`report`] and [`driver`]: the run and its figures.
//!
//! Every answer is classified: success, or a refusal the operation may get
//! (FAILED_PRECONDITION for a held or conflicting device, RESOURCE_EXHAUSTED
//! for a memory share over what is left, INVALID_ARGUMENT for a bad
//! request). Anything else fails the run, with the operation named.

pub mod chooser;
pub mod client;
pub mod concurrent;
pub mod driver;
pub mod holdings;
pub mod ledger;
pub mod looks;
pub mod metrics;
pub mod node;
pub mod observe;
pub mod quiescent;
pub mod report;
pub mod workload;

/// The fast variant: 64 clients, 1,500 operations (`GPUSLICE_LOAD_OPS`
/// overrides), a seed from `GPUSLICE_LOAD_SEED` or a fresh one, printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_load_many_clients_keep_every_invariant() {
    let test = "sim_load_many_clients_keep_every_invariant";
    let settings = driver::Settings::from_env(1_500, 500);
    let Some(run) = driver::run(test, &settings, "debug").await else {
        return;
    };
    run.report.print();
    assert!(
        run.violations.is_empty(),
        "seed {:#x} (GPUSLICE_LOAD_SEED={:#x} reproduces the clients' choices): {} violations:\n{}",
        settings.seed,
        settings.seed,
        run.violations.len(),
        run.violations.join("\n")
    );
    assert_eq!(run.report.total_ops(), settings.ops, "every operation ran");
    assert!(
        run.report.successes() > settings.ops / 4,
        "the load must mostly do work, not only be refused:\n{}",
        run.report.summary()
    );
}
