//! The claim status writer's API writes per minute, counted on a virtual
//! clock (exact counts, not timing) by the rate model ([`model`]): 64
//! prepared claims for 60 simulated minutes, a fresh summary of every claim
//! every 5 s, for `refresh_s` 60 and 300 and the default
//! `max_writes_per_minute` 60, in the model's four scenarios
//! (bench/README.md, "claim status").
//!
//! `cargo bench -p gpuslice-dra-plugin --bench claim_status` (or
//! `cargo test` of it: the counts do not depend on the build).

#[path = "claim_status/model.rs"]
mod model;

use model::{Scenario, Settings, run};

const CLAIMS: usize = 64;
const MINUTES: u64 = 60;

fn main() {
    println!(
        "claim status writes per minute, {CLAIMS} claims, {MINUTES} min, a sample every 5 s, max_writes_per_minute 60"
    );
    println!(
        "{:<18} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "scenario", "refresh_s", "minute 1", "mean/min", "p50/min", "max/min", "total"
    );
    for scenario in [
        Scenario::AllIdle,
        Scenario::AllActive,
        Scenario::HalfFlipping,
        Scenario::OvershareFlapping,
    ] {
        for refresh_s in [60, 300] {
            let settings = Settings {
                claims: CLAIMS,
                minutes: MINUTES,
                sample_ms: 5_000,
                refresh_s,
                max_writes_per_minute: 60,
                idle_after_ms: 0,
            };
            let per_minute = run(scenario, &settings);
            let mut after: Vec<usize> = per_minute.iter().skip(1).copied().collect();
            after.sort_unstable();
            let p50 = after.get(after.len() / 2).copied().unwrap_or(0);
            let max = after.last().copied().unwrap_or(0);
            let total: usize = per_minute.iter().sum();
            let mean = after.iter().sum::<usize>() as f64 / after.len().max(1) as f64;
            println!(
                "{:<18} {refresh_s:>9} {:>8} {mean:>8.1} {p50:>8} {max:>8} {total:>7}",
                format!("{scenario:?}"),
                per_minute.first().copied().unwrap_or(0)
            );
        }
    }
}
