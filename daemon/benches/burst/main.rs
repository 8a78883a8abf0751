//! The burst bench: N clients preparing exclusive claims at once over the
//! socket of the real gpusliced, against the same durable writes done by N
//! threads at once (the floor), with the engine called in-process from N
//! threads alongside to tell the engine's cost from the socket's.
//!
//! Per N (16, 32, 64 by default) the bench starts gpusliced on N simulated
//! H100s (`socket`), an engine on N more in-process (`in_process`) and the
//! floor's writers (`floor`), each mode N threads that live through every
//! round (`crew`). A round is one burst per mode: a barrier releases the N
//! threads, each prepares a fresh claim on its own GPU (or makes the two
//! durable writes of one), then everything is undone, untimed. Socket and
//! floor take turns at going first; one untimed warm-up burst per mode
//! comes before the rounds. What it prints (`report`): p50/p99 of every
//! claim's latency, throughput (claims over the sum of the bursts' wall
//! times) and the socket/floor and in-process/floor ratios. What it must
//! not do: time setup, connecting or cleanup, or share a GPU or a claim
//! between threads. See bench/README.md.
//!
//! Env: `GPUSLICE_BENCH_BURST` (client counts, default `16,32,64`),
//! `GPUSLICE_BENCH_BURST_ROUNDS` (default 30), `GPUSLICE_BENCH_DIR` (default
//! the cargo target dir: keep it on the disk you care about),
//! `GPUSLICE_GPUSLICED` (default the gpusliced cargo built for the bench,
//! which has the tests' crash points compiled in, unarmed),
//! `GPUSLICE_BENCH_BURST_LOG` (gpusliced's log filter, default `info`).

#[expect(
    dead_code,
    reason = "the e2e harness is shared whole; the bench starts gpusliced and connects through a part of it"
)]
#[path = "../../../tests/e2e/harness.rs"]
mod harness;

#[path = "../common/engine.rs"]
mod engine;
#[path = "../common/folders.rs"]
mod folders;

mod crew;
mod floor;
mod in_process;
mod report;
mod socket;

use std::path::Path;
use std::sync::Arc;

use crew::Crew;
use gpuslice::cdi_build::spec_file_name;
use report::Level;

const DEFAULT_CLIENTS: &[usize] = &[16, 32, 64];
const DEFAULT_ROUNDS: usize = 30;
/// The warm-up burst's round number; timed rounds stay below it.
const WARM_UP: usize = 0xffff;

/// A canonical claim uid, unique per (mode, round, index).
pub fn uid(mode: u16, round: usize, index: usize) -> String {
    format!("{mode:08x}-{round:04x}-4000-8000-{index:012x}")
}

fn main() {
    let clients = clients();
    let rounds = rounds();
    let guard = folders::work_dir("gpuslice-burst-");
    let base = guard.path().to_path_buf();
    print_facts(&clients, rounds, &base);
    let mut levels = Vec::new();
    for &n in &clients {
        let level = run_level(&base, n, rounds);
        level.print();
        levels.push(level);
    }
    report::summary(&levels);
    println!("load average at the end: {}", load_average());
}

fn clients() -> Vec<usize> {
    let Ok(text) = std::env::var("GPUSLICE_BENCH_BURST") else {
        return DEFAULT_CLIENTS.to_vec();
    };
    text.split(',')
        .map(|n| {
            n.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=4096).contains(n))
                .unwrap_or_else(|| {
                    panic!(
                        "GPUSLICE_BENCH_BURST={text:?}: give client counts from 1 to 4096, \
                         comma-separated, e.g. 16,32,64"
                    )
                })
        })
        .collect()
}

fn rounds() -> usize {
    std::env::var("GPUSLICE_BENCH_BURST_ROUNDS").map_or(DEFAULT_ROUNDS, |v| {
        v.parse::<usize>()
            .ok()
            .filter(|n| (1..WARM_UP).contains(n))
            .unwrap_or_else(|| {
                panic!("GPUSLICE_BENCH_BURST_ROUNDS={v:?}: give a round count from 1 to 65534")
            })
    })
}

fn run_level(base: &Path, n: usize, rounds: usize) -> Level {
    let node = socket::Node::start(base, n);
    let sockets = Crew::new(node.clients());
    sockets.burst(WARM_UP);
    let target = Arc::new(floor_target(&node));
    sockets.clean(WARM_UP);
    let (engine_node, engine) = in_process::start(base, n);
    let callers = Crew::new(
        (0..n)
            .map(|gpu| in_process::Caller {
                engine: Arc::clone(&engine),
                gpu,
            })
            .collect(),
    );
    let writers = Crew::new(
        (0..n)
            .map(|index| floor::Writer {
                target: Arc::clone(&target),
                index,
            })
            .collect(),
    );
    callers.burst(WARM_UP);
    let claim = uid(in_process::MODE, WARM_UP, 0);
    println!(
        "N={n}: in-process spec {} B, record {} B per claim",
        size(&engine_node.cdi_dir().join(spec_file_name(&claim))),
        size(&engine_node.record_path(&claim)),
    );
    callers.clean(WARM_UP);
    writers.burst(WARM_UP);
    writers.clean(WARM_UP);
    let mut level = Level {
        clients: n,
        rounds,
        ..Level::default()
    };
    for round in 0..rounds {
        // Socket and floor take turns at going first; in-process sits at
        // either end, so it too comes before and after the floor in turn.
        let order = if round % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
        for mode in order {
            let (crew, figures) = match mode {
                0 => (&sockets, &mut level.socket),
                1 => (&writers, &mut level.floor),
                _ => (&callers, &mut level.in_process),
            };
            let server_cpu = node.cpu();
            figures.add(crew.burst(round));
            if mode == 0 {
                figures.server_cpu += node.cpu().saturating_sub(server_cpu);
            }
            crew.clean(round);
        }
    }
    drop(sockets);
    node.stop();
    level
}

/// The floor's folders (the daemon's own) and sizes (read back from the
/// warm-up's first claim, still prepared).
fn floor_target(node: &socket::Node) -> floor::Target {
    let claim = uid(socket::MODE, WARM_UP, 0);
    let cdi_dir = node.daemon.cdi_dir.clone();
    let records_dir = node.records_dir();
    let spec = size(&cdi_dir.join(spec_file_name(&claim)));
    let record = size(&records_dir.join(format!("{claim}.json")));
    println!(
        "N={}: socket spec {spec} B, record {record} B per claim (the floor writes these sizes)",
        node.gpus
    );
    floor::Target {
        cdi_dir,
        records_dir,
        spec: vec![b's'; spec],
        record: vec![b'r'; record],
    }
}

fn size(path: &Path) -> usize {
    let len = std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("a prepared claim's file {}: {e}", path.display()))
        .len();
    usize::try_from(len).expect("file size fits in usize")
}

fn print_facts(clients: &[usize], rounds: usize, base: &Path) {
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let profile = if cfg!(debug_assertions) {
        "DEBUG (debug_assertions on): figures are not representative"
    } else {
        "release (debug_assertions off)"
    };
    let gpusliced = harness::gpusliced_binary();
    println!("gpuslice burst bench");
    println!("cpus={cpus}  profile={profile}  clients={clients:?}  rounds={rounds}");
    println!(
        "gpusliced {} (crash points {})",
        gpusliced.display(),
        if has_crash_points(&gpusliced) {
            "compiled in, unarmed: set GPUSLICE_GPUSLICED to a release build to time the packaged binary"
        } else {
            "not compiled in"
        }
    );
    println!("gpusliced log filter: {}", socket::log_filter());
    println!("load average at the start: {}", load_average());
    folders::print_work_dir(base);
    println!();
}

/// /proc/loadavg's first three fields: other work on the machine shows here.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map_or_else(
        |e| format!("unknown ({e})"),
        |text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        },
    )
}

/// Whether the binary at `path` has the crash points compiled in (a test
/// build: cargo turns the tests' `failpoints` feature on for benches too).
fn has_crash_points(path: &Path) -> bool {
    let needle = gpuslice::crash::ALL[0].as_bytes();
    std::fs::read(path).is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle))
}
