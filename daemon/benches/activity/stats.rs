//! Order statistics of timed samples, and the calling thread's CPU time.

use std::time::Duration;

/// Median, p90, p99, mean and max of a set of durations.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    pub median: Duration,
    pub p90: Duration,
    pub p99: Duration,
    pub mean: Duration,
    pub max: Duration,
}

impl Summary {
    /// The summary of `samples` (at least one).
    pub fn of(samples: &[Duration]) -> Summary {
        assert!(!samples.is_empty(), "no samples to summarise");
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        // The nearest rank at `permille` of the way through.
        let at = |permille: usize| sorted[((sorted.len() - 1) * permille + 500) / 1000];
        let total: Duration = sorted.iter().sum();
        Summary {
            median: at(500),
            p90: at(900),
            p99: at(990),
            mean: total / u32::try_from(sorted.len()).unwrap_or(u32::MAX),
            max: sorted[sorted.len() - 1],
        }
    }

    /// One table row: median, p90, p99, mean, max.
    pub fn row(&self) -> String {
        format!(
            "median {:>9}  p90 {:>9}  p99 {:>9}  mean {:>9}  max {:>9}",
            fmt(self.median),
            fmt(self.p90),
            fmt(self.p99),
            fmt(self.mean),
            fmt(self.max)
        )
    }
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.3} ms", us / 1000.0)
    }
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`, the
/// clock the sampler reports its own cost with).
pub fn thread_cpu() -> Duration {
    Duration::from_micros(gpuslice::activity::sampler::thread_cpu_us())
}
