//! The figures of one level: every claim's latency and every burst's wall
//! time per mode, printed as p50/p99, throughput and the ratios to the floor.

use std::time::Duration;

use crate::crew::Burst;
use crate::folders::percentile;

/// One mode's bursts at one level.
#[derive(Debug, Default)]
pub struct Mode {
    latencies: Vec<Duration>,
    walls: Vec<Duration>,
    /// CPU time of the calling threads in their timed calls.
    cpu: Duration,
    /// CPU time of gpusliced during the bursts (socket mode only).
    pub server_cpu: Duration,
}

impl Mode {
    pub fn add(&mut self, burst: Burst) {
        self.latencies.extend(burst.latencies);
        self.walls.push(burst.wall);
        self.cpu += burst.cpu;
    }

    /// CPU per claim: the calling threads', the server's.
    fn cpu_per_claim(&self) -> (Duration, Duration) {
        let n = u32::try_from(self.latencies.len().max(1)).unwrap_or(u32::MAX);
        (self.cpu / n, self.server_cpu / n)
    }

    fn sorted(&self) -> Vec<Duration> {
        let mut v = self.latencies.clone();
        v.sort_unstable();
        v
    }

    pub fn p50(&self) -> Duration {
        percentile(&self.sorted(), 50)
    }

    pub fn p99(&self) -> Duration {
        percentile(&self.sorted(), 99)
    }

    /// Claims per second: every claim over the sum of the bursts' wall times.
    pub fn throughput(&self) -> f64 {
        let wall: Duration = self.walls.iter().sum();
        self.latencies.len() as f64 / wall.as_secs_f64().max(1e-9)
    }
}

/// The three modes at one level.
#[derive(Debug, Default)]
pub struct Level {
    pub clients: usize,
    pub rounds: usize,
    pub socket: Mode,
    pub in_process: Mode,
    pub floor: Mode,
}

impl Level {
    pub fn print(&self) {
        println!(
            "N={} clients, {} rounds ({} claims per mode):",
            self.clients,
            self.rounds,
            self.clients * self.rounds
        );
        for (name, mode) in [
            ("socket", &self.socket),
            ("in-process", &self.in_process),
            ("floor", &self.floor),
        ] {
            let (cpu, server) = mode.cpu_per_claim();
            let server = if server.is_zero() {
                String::new()
            } else {
                format!(" + {} in gpusliced", us(server))
            };
            println!(
                "  {name:<11} p50 {:>8} p99 {:>8}  {:>7.0} claims/s  CPU per claim {} in the \
                 calling thread{server}",
                ms(mode.p50()),
                ms(mode.p99()),
                mode.throughput(),
                us(cpu),
            );
        }
        println!(
            "  socket/floor:     p50 {:.2}x  throughput {:.2}x",
            ratio(self.socket.p50(), self.floor.p50()),
            self.socket.throughput() / self.floor.throughput()
        );
        println!(
            "  in-process/floor: p50 {:.2}x  throughput {:.2}x",
            ratio(self.in_process.p50(), self.floor.p50()),
            self.in_process.throughput() / self.floor.throughput()
        );
        println!();
    }
}

/// The summary table, one line per level, against the goals.
pub fn summary(levels: &[Level]) {
    println!("summary (goals at N=64: socket/floor p50 <= 1.20x, throughput >= 0.80x):");
    println!("     N  socket/floor p50  socket/floor thr  in-proc/floor p50  in-proc/floor thr");
    for l in levels {
        println!(
            "  {:>4}  {:>15.2}x  {:>15.2}x  {:>16.2}x  {:>16.2}x",
            l.clients,
            ratio(l.socket.p50(), l.floor.p50()),
            l.socket.throughput() / l.floor.throughput(),
            ratio(l.in_process.p50(), l.floor.p50()),
            l.in_process.throughput() / l.floor.throughput(),
        );
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

fn us(d: Duration) -> String {
    format!("{:.0}µs", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.2}ms", d.as_secs_f64() * 1e3)
}
