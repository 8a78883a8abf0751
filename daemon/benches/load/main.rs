//! The load bench: the e2e load test's driver (tests/e2e/load, included
//! with `#[path]`, with the e2e helpers it uses) at full size: 64 clients,
//! 10,000 random operations on the real gpusliced (release build, logging at
//! info, the packaged default) on 8 simulated H100s, every invariant checked
//! as in the test. It prints throughput, p50/p99/max latency per kind of
//! operation and the count of each outcome, and the floors measured in the
//! same run on the same node (`floors`): the gRPC round trip, exclusive
//! prepare against two durable writes, an MPS prepare that starts a daemon
//! against the stand-in control program alone. See bench/README.md.
//!
//! Env: `GPUSLICE_LOAD_SEED`, `GPUSLICE_LOAD_OPS` (default 10,000),
//! `GPUSLICE_LOAD_CLIENTS` (default 64), `GPUSLICE_BENCH_DIR` (default the
//! cargo target dir: keep it on the disk you care about).

#[path = "../../../tests/e2e/cdi_schema.rs"]
mod cdi_schema;
#[path = "../../../tests/e2e/go_cdi.rs"]
mod go_cdi;
#[expect(
    dead_code,
    reason = "the e2e harness is shared whole; the bench starts gpusliced through a part of it"
)]
#[path = "../../../tests/e2e/harness.rs"]
mod harness;
#[expect(
    dead_code,
    reason = "the load driver is shared whole with the e2e test; the test's entry points stay unused here"
)]
#[path = "../../../tests/e2e/load/mod.rs"]
mod load;
#[expect(
    dead_code,
    reason = "the e2e stand-ins are shared whole; the bench uses the node they start"
)]
#[path = "../../../tests/e2e/stand_ins.rs"]
mod stand_ins;
#[expect(
    dead_code,
    reason = "the e2e tool helpers are shared whole; the bench uses a part"
)]
#[path = "../../../tests/e2e/tools.rs"]
mod tools;

#[path = "../common/durable.rs"]
mod durable;
mod floors;
#[path = "../common/folders.rs"]
#[allow(
    dead_code,
    reason = "shared by the benches; this one needs only the target dir"
)]
mod folders;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use load::client::Outcome;
use load::driver::{self, Settings};
use load::report::{Report, ms, percentile};
use load::workload::OpKind;

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(bench())
}

async fn bench() -> ExitCode {
    let mut settings = Settings::from_env(10_000, 2_500);
    // Snapshots compete with the load for the same two cores: once a second
    // here (the test takes one every 100 ms), so the throughput is the load's.
    // No reloads: each holds every claim back while it runs, which the test
    // covers; here the latencies are the claims' own.
    settings.snapshot_every = Duration::from_secs(1);
    settings.reload_every = 0;
    let parent =
        std::env::var_os("GPUSLICE_BENCH_DIR").map_or_else(folders::target_dir, PathBuf::from);
    std::fs::create_dir_all(&parent).expect("bench folder parent");
    settings.parent = Some(parent);
    let gpusliced = harness::gpusliced_binary();
    println!(
        "gpuslice load bench: {} CPUs, profile={} (debug_assertions {}), gpusliced {} (crash points {})",
        std::thread::available_parallelism().map_or(0, usize::from),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        if cfg!(debug_assertions) { "on" } else { "off" },
        gpusliced.display(),
        if has_crash_points(&gpusliced) {
            "compiled in, unarmed: set GPUSLICE_GPUSLICED to a release build to time the packaged binary"
        } else {
            "not compiled in"
        },
    );
    let Some(node) = driver::start("load bench", &settings, "info").await else {
        return ExitCode::FAILURE;
    };
    println!("node folder {}", node.daemon.path().display());
    let idle = floors::measure(&node).await;
    idle.print();
    let run = driver::load(&node, &settings).await;
    let mut violations = run.violations;
    violations.extend(driver::finish(node));
    run.report.print();
    compare(&run.report, &idle);
    if violations.is_empty() {
        println!("invariants: every check passed");
        ExitCode::SUCCESS
    } else {
        println!("invariants: {} violations", violations.len());
        for v in &violations {
            println!("  {v}");
        }
        ExitCode::FAILURE
    }
}

/// p50 and p99 of `kind` operations that ended with `outcome`, under load.
fn loaded(report: &Report, kind: OpKind, outcome: Outcome) -> (Duration, Duration, usize) {
    let mut v: Vec<Duration> = report
        .load
        .iter()
        .filter(|s| s.kind == kind && s.outcome == outcome)
        .map(|s| s.latency)
        .collect();
    v.sort_unstable();
    (percentile(&v, 50), percentile(&v, 99), v.len())
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

/// The lines that put the load's figures next to the floors.
fn compare(report: &Report, idle: &floors::Floors) {
    let (x50, x99, xn) = loaded(report, OpKind::PrepareExclusive, Outcome::Prepared);
    let (m50, m99, mn) = loaded(report, OpKind::PrepareMps, Outcome::Prepared);
    let (u50, u99, un) = loaded(report, OpKind::UnprepareUnknown, Outcome::NotPrepared);
    println!("under load vs idle (same node, same run):");
    println!(
        "  exclusive prepare, prepared ({xn}): p50 {} p99 {}; {:.2}x the idle p50, {:.2}x the two-fsync floor",
        ms(x50),
        ms(x99),
        ratio(x50, idle.exclusive.p50()),
        ratio(x50, idle.fsync.p50()),
    );
    println!(
        "  unprepare of an unknown claim ({un}): p50 {} p99 {}; {:.2}x the idle round trip",
        ms(u50),
        ms(u99),
        ratio(u50, idle.rpc.p50()),
    );
    println!(
        "  MPS prepare, prepared ({mn}): p50 {} p99 {} (joins of a running daemon and {} daemon \
         starts; a start is {:.2}x the stand-in's own cost, which is python's, not gpusliced's)",
        ms(m50),
        ms(m99),
        report.mps_starts,
        ratio(idle.mps.p50(), idle.stand_in.p50()),
    );
}

/// Whether the binary at `path` has the crash points compiled in (a test
/// build: cargo turns the tests' `failpoints` feature on for benches too).
fn has_crash_points(path: &Path) -> bool {
    let needle = gpuslice::crash::ALL[0].as_bytes();
    std::fs::read(path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
}
