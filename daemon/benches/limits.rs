//! `[limits]` reaction time: from a claim's process crossing its memory
//! share to the signal that ends it, and the enforcement step alone.
//!
//! Part 1: the real sampler on a simulated H100 with two time-sliced claims
//! (a 40 GiB share each), sampling every `interval` on a thread of its own,
//! its `[limits]` subscriber on real pidfds (`overshare = "end"`). Each trial, at
//! a random moment of the sampling period, a real `sleep` child carrying
//! claim A's marker is registered as a 41 GiB GPU process (t0); t1 is when
//! the child has exited from the SIGTERM (`wait` returns). Reported: t1 −
//! t0 − grace, for interval ∈ {1 s, 5 s} × grace ∈ {0, 10 s}; expected
//! about interval / 2 (the wait for the next sample) plus milliseconds.
//! Between trials the bench waits for a sample that sees the claim back
//! within its share, so each trial is a new episode.
//!
//! Part 2: the enforcement step alone on real pidfds: a decision handed to
//! the executor → SIGTERM delivered (`start` returns: pidfd_open, the start
//! time read again, the signal), and → the child's exit seen.
//!
//! Env: `GPUSLICE_BENCH_TRIALS` (trials per grace-0 cell, default 10; the
//! grace-10 cells run a third as many, at least 2). See bench/README.md.

#[path = "common/marked.rs"]
mod marked;

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gpuslice::activity::procfs::ProcFs;
use gpuslice::activity::{Sampler, SamplerSettings, WarningKind};
use gpuslice::config::{LimitMode, LimitsConfig};
use gpuslice::gpu::GpuBackend;
use gpuslice::gpu::sim::SimProcess;
use gpuslice::limits::enforce::Executor;
use gpuslice::limits::{Decision, Ledger, LimitsBoard, LimitsSubscriber, Pidfds};
use gpuslice::testkit::requests::{request_with, timeslicing};
use gpuslice::testkit::{SimNode, SimNodeBuilder};
use marked::spawn_marked;

const A: &str = "1a1a1a1a-0000-4000-8000-0000000000a1";
const B: &str = "1b1b1b1b-0000-4000-8000-0000000000b1";
const GIB: u64 = 1 << 30;

fn node(dir: &tempfile::TempDir) -> SimNode {
    let node = SimNodeBuilder::h100s(1)
        .seed("bench-limits")
        .in_dir(dir.path())
        .hardware_in_memory()
        .boot("bench-boot")
        .fake_tools()
        .start();
    for uid in [A, B] {
        node.engine()
            .prepare(&request_with(uid, &["gpu-0"], &[timeslicing("Default")]))
            .expect("time-sliced prepare");
    }
    node
}

/// The sampler with its limits subscriber, on a thread, sampling every `interval`;
/// it says after each sample, and stops when told (or dropped).
struct Loop {
    stop: mpsc::Sender<()>,
    samples: mpsc::Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Loop {
    fn start(node: &SimNode, interval: Duration, grace_s: u64) -> Loop {
        let config = LimitsConfig {
            overshare: LimitMode::End,
            grace_s,
            ..LimitsConfig::default()
        };
        let limits =
            LimitsSubscriber::start(&config, Pidfds::new("/"), LimitsBoard::default(), None);
        let mut sampler = Sampler::new(
            node.engine().clone(),
            SamplerSettings {
                interval,
                max_claim_series: 1024,
                proc_root: PathBuf::from("/"),
                state_dir: None,
                idle_after: Duration::from_secs(1800),
                summary_window: Duration::from_secs(300),
            },
        )
        .with_subscriber(Box::new(limits));
        let (stop, stopped) = mpsc::channel::<()>();
        let (sampled, samples) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            let mut next = Instant::now();
            loop {
                sampler.sample_once();
                let _ = sampled.send(());
                next += interval;
                let left = next.saturating_duration_since(Instant::now());
                match stopped.recv_timeout(left) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
            }
        });
        Loop {
            stop,
            samples,
            thread: Some(thread),
        }
    }

    /// Waits for two samples begun after now (one whole sample after it).
    fn two_samples(&self) {
        while self.samples.try_recv().is_ok() {}
        for _ in 0..2 {
            self.samples.recv().expect("the sampler runs");
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// p50, p99 (nearest rank), max, in `unit`.
fn summary(mut ms: Vec<f64>, unit: &str) -> String {
    ms.sort_by(f64::total_cmp);
    let rank = |permille: usize| ms[(ms.len() * permille).div_ceil(1000).max(1) - 1];
    format!(
        "p50 {:>8.1} {unit}  p99 {:>8.1} {unit}  max {:>8.1} {unit}  (n {})",
        rank(500),
        rank(990),
        ms[ms.len() - 1],
        ms.len()
    )
}

fn reaction(node: &SimNode, interval: Duration, grace_s: u64, trials: usize) -> Vec<f64> {
    let gpu_uuid = node.sim.device_info(0).expect("sim GPU").uuid;
    let sampler = Loop::start(node, interval, grace_s);
    let mut rng = fastrand::Rng::with_seed(24);
    let mut out = Vec::new();
    for _ in 0..trials {
        sampler.two_samples();
        let offset = interval.mul_f64(rng.f64());
        #[expect(
            clippy::disallowed_methods,
            reason = "a bench, not a test: t0 falls at a random moment of the sampling period"
        )]
        std::thread::sleep(offset);
        let mut child = spawn_marked(A);
        let t0 = Instant::now();
        node.sim
            .start_process(SimProcess {
                pid: child.id(),
                device: gpu_uuid.clone(),
                memory_bytes: 41 * GIB,
                sm_percent: 10,
                mps_client: false,
            })
            .expect("sim process");
        let status = child.wait().expect("wait for sleep");
        let t1 = Instant::now();
        node.sim.stop_process(child.id());
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(15),
            "ended by SIGTERM"
        );
        let grace = Duration::from_secs(grace_s);
        out.push((t1 - t0).saturating_sub(grace).as_secs_f64() * 1e3);
    }
    out
}

fn enforcement(rounds: usize) -> (Vec<f64>, Vec<f64>) {
    let ledger = Ledger::default();
    let mut exec = Executor::new(Pidfds::new("/"), Duration::from_secs(10), ledger);
    let procfs = ProcFs::default();
    let (mut signalled, mut exited) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let mut child = spawn_marked(A);
        let pid = child.id();
        let decision = Decision {
            kind: WarningKind::OverShare,
            mode: LimitMode::End,
            claim_uid: A.to_owned(),
            claim: "bench/a".to_owned(),
            device: "gpu-0".to_owned(),
            sharing: Some(gpuslice::state::AccessKind::TimeSlicing),
            pid,
            start_time: procfs.start_time_of(pid).expect("start time"),
            comm: "sleep".to_owned(),
            memory_used: 41 * GIB,
            claim_memory_used: 41 * GIB,
            share: Some(40 * GIB),
            over_for_s: 0,
            grace_s: 0,
        };
        let t0 = Instant::now();
        exec.start(decision, t0);
        let t1 = Instant::now();
        while exec.pending() > 0 {
            exec.wait(Duration::from_secs(10), Instant::now());
        }
        let t2 = Instant::now();
        child.wait().expect("wait for sleep");
        signalled.push((t1 - t0).as_secs_f64() * 1e6);
        exited.push((t2 - t0).as_secs_f64() * 1e6);
    }
    (signalled, exited)
}

fn main() {
    let trials: usize = std::env::var("GPUSLICE_BENCH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().expect("temp dir");
    let node = node(&dir);
    println!("limits: reaction time, crossing the share → SIGTERM'd process exited, minus grace");
    for interval_s in [1, 5] {
        for grace_s in [0, 10] {
            let n = if grace_s == 0 {
                trials
            } else {
                (trials / 3).max(2)
            };
            let interval = Duration::from_secs(interval_s);
            let ms = reaction(&node, interval, grace_s, n);
            println!(
                "  interval {interval_s} s, grace {grace_s:>2} s: {}",
                summary(ms, "ms")
            );
        }
    }
    let (signalled, exited) = enforcement(200);
    println!("limits: enforcement alone (200 rounds, real pidfds)");
    println!("  decision → SIGTERM sent:    {}", summary(signalled, "µs"));
    println!("  decision → process exited:  {}", summary(exited, "µs"));
}
