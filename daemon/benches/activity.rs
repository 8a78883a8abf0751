//! The activity sampler's cost, and what sampling does to prepare latency.
//!
//! The node: 9 simulated H100s. GPUs 0..8 carry 64 time-sliced claims (8 per
//! GPU) with 4 processes each: 256 real `sleep` children, each with its
//! claim's marker in its environment exactly as the CDI spec puts it there,
//! registered as GPU processes in the simulator. GPU 8 stays free for the
//! timed prepares.
//!
//! Part 1 times one sample (the sampler's whole pass: process lists,
//! utilization, memory per device, `/proc` reads, attribution, episodes),
//! in CPU time of the sampling thread and in wall time, against a floor:
//! the one `/proc` read per process a sample cannot skip (the start time
//! that validates the cached environment), with raw std calls.
//!
//! Part 2 times prepares (and their unprepares, untimed) of an exclusive
//! claim on GPU 8 with sampling off, at the default interval (5 s), and
//! flat out (a sample right after the last, as the worst case), in
//! interleaved 5-second blocks so all three see the same disk, and a
//! default block holds the one sample per 5 s the daemon takes. See
//! bench/README.md.
//!
//! Env: `GPUSLICE_BENCH_ROUNDS` (5-second blocks per mode, default 3),
//! `GPUSLICE_BENCH_DIR` (default a temp folder under the cargo target dir).

#[path = "common/folders.rs"]
#[allow(
    dead_code,
    reason = "shared by the benches; this one needs only its folder"
)]
mod folders;
#[path = "common/marked.rs"]
mod marked;
#[path = "activity/node.rs"]
mod node;
#[path = "activity/stats.rs"]
mod stats;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use node::BenchNode;
use stats::{Summary, thread_cpu};

const DEFAULT_ROUNDS: usize = 3;
/// Samples timed in part 1.
const SAMPLER_PASSES: usize = 200;
/// Wall time of one block of part 2; modes take turns block by block.
const BLOCK: Duration = Duration::from_secs(5);

/// How the sampler runs while part 2 prepares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    Default,
    FlatOut,
}

impl Mode {
    const ALL: [Mode; 3] = [Mode::Off, Mode::Default, Mode::FlatOut];

    fn interval(self) -> Option<Duration> {
        match self {
            Mode::Off => None,
            Mode::Default => Some(Duration::from_secs(5)),
            Mode::FlatOut => Some(Duration::ZERO),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Mode::Off => "sampling off",
            Mode::Default => "sampling every 5 s (default)",
            Mode::FlatOut => "sampling flat out",
        }
    }
}

fn main() {
    let rounds = rounds();
    let node = BenchNode::build();
    print_facts(rounds, &node);
    part_one(&node);
    part_two(&node, rounds);
}

fn rounds() -> usize {
    match std::env::var("GPUSLICE_BENCH_ROUNDS") {
        Ok(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| *n > 0)
            .expect("GPUSLICE_BENCH_ROUNDS must be a positive integer"),
        Err(_) => DEFAULT_ROUNDS,
    }
}

fn print_facts(rounds: usize, node: &BenchNode) {
    let cpus = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let profile = if cfg!(debug_assertions) {
        "DEBUG (debug_assertions on): figures are not representative"
    } else {
        "release (debug_assertions off)"
    };
    println!("gpuslice activity bench");
    println!("cpus={cpus}  profile={profile}  rounds={rounds} (part 2)");
    println!(
        "node: {} GPUs, {} claims, {} processes; work dir {}",
        node.gpus,
        node.claims,
        node.processes(),
        node.dir().display()
    );
    println!();
}

/// Part 1: one sample's cost against the floor.
fn part_one(node: &BenchNode) {
    let c0 = thread_cpu();
    let first = node.sample();
    let cold = thread_cpu().saturating_sub(c0);
    let attributed: usize = first.claims.iter().map(|c| c.process_count()).sum();
    assert_eq!(
        attributed,
        node.processes(),
        "every bench process must be attributed to its claim"
    );
    assert!(first.unclaimed.is_empty(), "no bench process is unclaimed");
    let (mut cpu, mut wall, mut floor) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..SAMPLER_PASSES {
        let (c0, t0) = (thread_cpu(), Instant::now());
        let snapshot = node.sample();
        wall.push(t0.elapsed());
        cpu.push(thread_cpu().saturating_sub(c0));
        assert_eq!(snapshot.claims.len(), node.claims);
        let (c0, _) = (thread_cpu(), ());
        node.floor_pass();
        floor.push(thread_cpu().saturating_sub(c0));
    }
    let (cpu, wall, floor) = (Summary::of(&cpu), Summary::of(&wall), Summary::of(&floor));
    println!(
        "part 1: one sample at {} GPUs, {} claims, {} processes ({SAMPLER_PASSES} samples)",
        node.gpus,
        node.claims,
        node.processes()
    );
    println!(
        "  {:<34} {:.3} ms (every environment read once, then cached by pid and start time)",
        "first sample, CPU time",
        cold.as_secs_f64() * 1e3
    );
    println!("  {:<34} {}", "sample, CPU time", cpu.row());
    println!("  {:<34} {}", "sample, wall time", wall.row());
    println!("  {:<34} {}", "floor (/proc stat per process)", floor.row());
    println!(
        "  ratio sample/floor (CPU, median): {:.2}x; at the default 5 s interval the sampler \
         takes {:.4}% of one core",
        ratio(cpu.median, floor.median),
        cpu.median.as_secs_f64() / 5.0 * 100.0
    );
    println!();
}

/// Part 2: prepare latency with sampling off, at the default interval, and
/// flat out. One sampler thread lives through the whole part; the modes take
/// turns in blocks of [`BLOCK`] wall time, so a default-mode block holds
/// exactly the one sample per 5 s the daemon takes.
fn part_two(node: &BenchNode, rounds: usize) {
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); Mode::ALL.len()];
    let (control, orders) = mpsc::channel::<Mode>();
    std::thread::scope(|scope| {
        scope.spawn(move || sampler_thread(node, &orders));
        let mut block = 0usize;
        for _ in 0..rounds {
            for (slot, mode) in Mode::ALL.iter().enumerate() {
                control.send(*mode).expect("the sampler thread is gone");
                times[slot].extend(node.prepares_for(block, BLOCK));
                block += 1;
            }
        }
        drop(control);
    });
    let summaries: Vec<Summary> = times.iter().map(|t| Summary::of(t)).collect();
    println!(
        "part 2: prepare latency of an exclusive claim on the free GPU ({rounds} rounds of {}-s blocks per mode)",
        BLOCK.as_secs()
    );
    for ((mode, s), t) in Mode::ALL.iter().zip(&summaries).zip(&times) {
        println!("  {:<34} {}  n={}", mode.label(), s.row(), t.len());
    }
    let off = summaries[0];
    for (mode, s) in Mode::ALL.iter().zip(&summaries).skip(1) {
        println!(
            "  ratio {} / off: median {:.3}x, mean {:.3}x (goal <= 1.05x at the default)",
            mode.label(),
            ratio(s.median, off.median),
            ratio(s.mean, off.mean)
        );
    }
}

/// Samples as the latest order says until the channel closes: off waits for
/// the next order; the default samples at once and then every 5 s; flat out
/// samples back to back. Waits on the channel, never sleeps.
fn sampler_thread(node: &BenchNode, orders: &mpsc::Receiver<Mode>) {
    let Ok(mut mode) = orders.recv() else { return };
    loop {
        let next = match mode.interval() {
            None => orders
                .recv()
                .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
            Some(interval) => {
                let _ = node.sample();
                orders.recv_timeout(interval)
            }
        };
        match next {
            Ok(order) => mode = order,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-12)
}
