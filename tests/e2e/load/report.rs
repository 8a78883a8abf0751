//! The figures of a load run: throughput, latency per kind of operation
//! (p50, p99, max; nearest-rank over the sorted samples) and the count of
//! each outcome, printed as one table.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::client::Sample;
use super::workload::OpKind;

/// One run's samples and counts.
#[derive(Debug, Default)]
pub struct Report {
    pub seed: u64,
    pub clients: usize,
    /// The random operations, in no particular order.
    pub load: Vec<Sample>,
    /// The unprepares of every claim still held after the load.
    pub drain: Vec<Sample>,
    /// Time the random operations ran (checkpoint pauses excluded).
    pub load_time: Duration,
    pub drain_time: Duration,
    pub snapshots: usize,
    /// Time the concurrent snapshots took, in all.
    pub snapshot_time: Duration,
    pub checkpoints: usize,
    /// SIGHUPs sent during the load, each from the signal to READY=1.
    pub reloads: Vec<Duration>,
    /// MPS control daemons the stand-in started (its record).
    pub mps_starts: usize,
}

/// The sample at rank `p` (0..=100) of sorted `v`, nearest-rank.
pub fn percentile(sorted: &[Duration], p: u32) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let n = sorted.len();
    let rank = (n * usize::try_from(p).unwrap_or(100)).div_ceil(100).max(1);
    sorted[rank.min(n) - 1]
}

/// A duration in ms with two decimals.
pub fn ms(d: Duration) -> String {
    format!("{:.2}ms", d.as_secs_f64() * 1e3)
}

impl Report {
    pub fn total_ops(&self) -> usize {
        self.load.len()
    }

    /// Operations the daemon carried out (not refused).
    pub fn successes(&self) -> usize {
        self.load.iter().filter(|s| s.outcome.succeeded()).count()
    }

    /// Operations a second over the load (checkpoint pauses excluded).
    pub fn throughput(&self) -> f64 {
        self.load.len() as f64 / self.load_time.as_secs_f64().max(1e-9)
    }

    fn row(out: &mut String, name: &str, samples: &[&Sample]) {
        let mut lat: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
        lat.sort_unstable();
        let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
        for s in samples {
            *outcomes.entry(s.outcome.words()).or_default() += 1;
        }
        let outcomes: Vec<String> = outcomes.iter().map(|(o, n)| format!("{o} {n}")).collect();
        let _ = writeln!(
            out,
            "  {name:<22} {:>6} {:>10} {:>10} {:>10}   {}",
            samples.len(),
            ms(percentile(&lat, 50)),
            ms(percentile(&lat, 99)),
            ms(lat.last().copied().unwrap_or_default()),
            outcomes.join(", ")
        );
    }

    /// The table.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "load: seed {:#x}, {} clients, {} operations in {:.2}s = {:.0} ops/s \
             ({} succeeded; {} snapshots taking {:.2}s, {} checkpoints, {} reloads, {} MPS daemon \
             starts)",
            self.seed,
            self.clients,
            self.load.len(),
            self.load_time.as_secs_f64(),
            self.throughput(),
            self.successes(),
            self.snapshots,
            self.snapshot_time.as_secs_f64(),
            self.checkpoints,
            self.reloads.len(),
            self.mps_starts,
        );
        let _ = writeln!(
            out,
            "  {:<22} {:>6} {:>10} {:>10} {:>10}   outcomes",
            "operation", "count", "p50", "p99", "max"
        );
        for kind in OpKind::ALL {
            let samples: Vec<&Sample> = self.load.iter().filter(|s| s.kind == kind).collect();
            if !samples.is_empty() {
                Self::row(&mut out, kind.name(), &samples);
            }
        }
        let all: Vec<&Sample> = self.load.iter().collect();
        Self::row(&mut out, "all operations", &all);
        if !self.reloads.is_empty() {
            let mut r = self.reloads.clone();
            r.sort_unstable();
            let _ = writeln!(
                out,
                "reloads: {} SIGHUPs, signal to READY=1 p50 {} max {} (claims wait meanwhile)",
                r.len(),
                ms(percentile(&r, 50)),
                ms(r.last().copied().unwrap_or_default()),
            );
        }
        let drain: Vec<&Sample> = self.drain.iter().collect();
        let _ = writeln!(
            out,
            "drain: {} claims unprepared in {:.2}s",
            self.drain.len(),
            self.drain_time.as_secs_f64()
        );
        Self::row(&mut out, "unprepare (drain)", &drain);
        out
    }

    pub fn print(&self) {
        print!("{}", self.summary());
    }
}
