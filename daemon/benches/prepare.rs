//! Prepare latency against its durability floor, at 10, 1,000 and 10,000 live
//! claims.
//!
//! A prepare returns only once the claim's CDI spec and its record are durably
//! on disk, so it can never be cheaper than two durable atomic writes
//! (temp file, write, fsync, rename, fsync dir) of the same sizes in the same
//! folders. This bench measures that floor with raw std calls and the engine's
//! prepare side by side, sample for sample in one loop, so both see the same
//! disk. What it must not do: time anything but the call (setup, the live
//! claims and every unprepare are untimed), or share state between levels
//! (each level gets a fresh folder and engine). See bench/README.md.
//!
//! Env: `GPUSLICE_BENCH_SAMPLES` (default 300), `GPUSLICE_BENCH_DIR` (default
//! a temp folder under the cargo target dir).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "common/durable.rs"]
mod durable;
#[path = "common/engine.rs"]
mod engine;
#[path = "common/folders.rs"]
mod folders;

use durable::{durable_write, sync_dir};
use engine::{node, request};
use folders::{percentile, work_dir};
use gpuslice::claims::Engine;
use gpuslice::testkit::SimNode;

const DEFAULT_SAMPLES: usize = 300;
/// (live claims, simulated GPUs beyond live + samples). The last row is a
/// control: 10 live claims on a node as big as the 10,000 level, separating
/// what grows with the claim count from what grows with the GPU count.
const LEVELS: &[(usize, usize)] = &[(10, 0), (1_000, 0), (10_000, 0), (10, 9_990)];

/// One level's samples.
struct Level {
    live: usize,
    gpus: usize,
    prepare: Vec<Duration>,
    floor: Vec<Duration>,
}

fn main() {
    let samples = samples();
    let guard = work_dir("gpuslice-bench-");
    let base = guard.path().to_path_buf();
    print_facts(samples, &base);
    let mut results = Vec::new();
    for &(live, extra) in LEVELS {
        let level = run_level(&base, live, live + samples + extra, samples);
        print_level(&level);
        results.push(level);
    }
    print_summary(&results);
}

fn samples() -> usize {
    match std::env::var("GPUSLICE_BENCH_SAMPLES") {
        Ok(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .expect("GPUSLICE_BENCH_SAMPLES must be a positive integer"),
        Err(_) => DEFAULT_SAMPLES,
    }
}

fn print_facts(samples: usize, base: &Path) {
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let profile = if cfg!(debug_assertions) {
        "DEBUG (debug_assertions on): figures are not representative"
    } else {
        "release (debug_assertions off)"
    };
    println!("gpuslice prepare bench");
    println!("cpus={cpus}  profile={profile}  samples={samples} per level");
    folders::print_work_dir(base);
    println!();
}

/// A canonical claim uid, unique per (level, index).
fn uid(level: usize, index: usize) -> String {
    format!("{level:08x}-0000-4000-8000-{index:012x}")
}

fn run_level(base: &Path, live: usize, gpus: usize, samples: usize) -> Level {
    let dir = base.join(format!("live-{live}-gpus-{gpus}"));
    let node = node(&dir, gpus);
    let engine = node.engine();
    populate(engine, live);
    let (spec_len, record_len) = sizes(&node, live);
    let records_dir = node.state_dir().join("claims");
    let cdi_dir = node.cdi_dir();
    let spec_bytes = vec![b's'; spec_len];
    let record_bytes = vec![b'r'; record_len];
    let mut level = Level {
        live,
        gpus,
        prepare: Vec::with_capacity(samples),
        floor: Vec::with_capacity(samples),
    };
    for i in 0..samples {
        // Fresh names each sample, as a prepare has; the last `samples`
        // GPUs are the free ones, so every level looks them up at the same
        // place in the inventory.
        let id = uid(live, live + i);
        let gpu = gpus - samples + i;
        let floor = || floor_sample(&cdi_dir, &spec_bytes, &records_dir, &record_bytes, &id);
        // Alternate which goes first so neither always follows the other.
        if i % 2 == 0 {
            level.prepare.push(prepare_sample(engine, &id, gpu));
            level.floor.push(floor());
        } else {
            level.floor.push(floor());
            level.prepare.push(prepare_sample(engine, &id, gpu));
        }
    }
    level
}

/// Prepares `live` claims on gpu-0.. (untimed), printing progress.
fn populate(engine: &Engine, live: usize) {
    let started = Instant::now();
    for i in 0..live {
        engine
            .prepare(&request(uid(live, i), i))
            .expect("prepare of a live claim");
        if (i + 1) % 1_000 == 0 {
            println!(
                "  live={live}: {} claims prepared ({:.1?})",
                i + 1,
                started.elapsed()
            );
        }
    }
}

/// Sizes of the spec and record a prepare writes, read back from disk.
fn sizes(node: &SimNode, live: usize) -> (usize, usize) {
    let claims = node.engine().claims();
    let record = claims.first().expect("at least one live claim");
    let len = |path: PathBuf| {
        let meta = std::fs::metadata(&path).expect("a prepared claim's file is on disk");
        usize::try_from(meta.len()).expect("file size fits in usize")
    };
    let spec = len(node.cdi_dir().join(&record.cdi_spec_file));
    let rec = len(node.record_path(&record.uid));
    println!("  live={live}: spec {spec} B, record {rec} B per claim");
    (spec, rec)
}

/// One timed prepare of a fresh claim on its own free GPU; its unprepare is
/// untimed.
fn prepare_sample(engine: &Engine, uid: &str, gpu: usize) -> Duration {
    let req = request(uid.to_owned(), gpu);
    let started = Instant::now();
    let result = engine.prepare(&req);
    let took = started.elapsed();
    result.expect("timed prepare");
    engine
        .unprepare(&req.uid)
        .expect("unprepare after a sample");
    took
}

/// One timed pair of raw durable writes, then their untimed removal.
fn floor_sample(
    cdi_dir: &Path,
    spec: &[u8],
    records_dir: &Path,
    record: &[u8],
    uid: &str,
) -> Duration {
    let spec_name = format!("floor-spec_{uid}.json");
    let record_name = format!("floor-record_{uid}.json");
    let started = Instant::now();
    durable_write(cdi_dir, &spec_name, spec);
    durable_write(records_dir, &record_name, record);
    let took = started.elapsed();
    for (dir, name) in [(cdi_dir, &spec_name), (records_dir, &record_name)] {
        std::fs::remove_file(dir.join(name)).expect("remove a floor file");
        sync_dir(dir);
    }
    took
}

/// (p50, p99) of `samples`.
fn p50_p99(samples: &[Duration]) -> (Duration, Duration) {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    (percentile(&sorted, 50), percentile(&sorted, 99))
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn print_level(level: &Level) {
    let (p50, p99) = p50_p99(&level.prepare);
    let (f50, f99) = p50_p99(&level.floor);
    println!(
        "live={:<6} gpus={:<6} prepare p50={:.0}µs p99={:.0}µs  floor p50={:.0}µs p99={:.0}µs  \
         ratio p50={:.2}x p99={:.2}x",
        level.live,
        level.gpus,
        micros(p50),
        micros(p99),
        micros(f50),
        micros(f99),
        ratio(p50, f50),
        ratio(p99, f99),
    );
    println!();
}

fn print_summary(results: &[Level]) {
    let find = |live: usize, gpus_at_least: usize| {
        results
            .iter()
            .find(|l| l.live == live && l.gpus >= gpus_at_least)
    };
    let (Some(small), Some(big)) = (find(10, 0), find(10_000, 0)) else {
        return;
    };
    let (s50, s99) = p50_p99(&small.prepare);
    let (b50, b99) = p50_p99(&big.prepare);
    println!(
        "per-prepare cost, 10,000 vs 10 live claims: p50 {:.0}µs vs {:.0}µs = {:.2}x, \
         p99 {:.0}µs vs {:.0}µs = {:.2}x",
        micros(b50),
        micros(s50),
        ratio(b50, s50),
        micros(b99),
        micros(s99),
        ratio(b99, s99),
    );
    if let Some(control) = find(10, big.gpus) {
        let (c50, c99) = p50_p99(&control.prepare);
        println!(
            "control, 10 live claims on {} GPUs: p50 {:.0}µs p99 {:.0}µs \
             (10,000 live / control: p50 {:.2}x, p99 {:.2}x)",
            control.gpus,
            micros(c50),
            micros(c99),
            ratio(b50, c50),
            ratio(b99, c99),
        );
    }
}
