//! The claim status writer's API writes per minute, counted on a virtual
//! clock (exact counts, not timing): 64 prepared claims for 60 simulated
//! minutes, a fresh summary of every claim every 5 s rendered by
//! `claim_status::entries` and planned by `claim_status::plan` (every
//! planned write taken), for `refresh_s` 60 and 300 and the default
//! `max_writes_per_minute` 60. Scenarios (bench/README.md, "claim status"):
//! (a) all idle and steady; (b) all active, memory and SM use moving beyond
//! the rendering's resolution every sample; (c) half the claims flipping
//! between active and idle every 10 minutes; (d) 8 shared claims whose
//! over-share episode opens or closes at every sample (the worst case).
//!
//! `cargo bench -p gpuslice-dra-plugin --bench claim_status` (or
//! `cargo test` of it: the counts do not depend on the build).

use std::collections::BTreeMap;

use gpuslice_dra_plugin::claim_status::entries::{
    Context, DeviceUsage, Idleness, Memory, OverShare, Sharing, desired, entry,
};
use gpuslice_dra_plugin::claim_status::plan::{Limits, MINUTE, Outcome, Planner};
use k8s_openapi::jiff::Timestamp;

const CLAIMS: usize = 64;
const MINUTES: u64 = 60;
const SAMPLE_MS: u64 = 5_000;
const GIB: u64 = 1 << 30;

#[derive(Debug, Clone, Copy)]
enum Scenario {
    AllIdle,
    AllActive,
    HalfFlipping,
    OvershareFlapping,
}

fn time(ms: u64) -> Timestamp {
    let base = 1_788_256_800_000i64; // 2026-09-01T10:00:00Z
    Timestamp::from_millisecond(base + i64::try_from(ms).unwrap_or(i64::MAX))
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

fn usage(scenario: Scenario, claim: usize, now: u64, rng: &mut fastrand::Rng) -> DeviceUsage {
    let shared = matches!(scenario, Scenario::OvershareFlapping) && claim < 8;
    let active = match scenario {
        Scenario::AllIdle => false,
        Scenario::AllActive | Scenario::OvershareFlapping => true,
        Scenario::HalfFlipping => {
            !claim.is_multiple_of(2) || (now / (10 * MINUTE)).is_multiple_of(2)
        }
    };
    // When the claim's current state began: the prepare, except for the
    // claims that flip, whose state begins with each 10-minute phase.
    let flips = matches!(scenario, Scenario::HalfFlipping) && claim.is_multiple_of(2);
    let phase_start = if flips {
        now / (10 * MINUTE) * (10 * MINUTE)
    } else {
        0
    };
    let (used, sm) = match scenario {
        Scenario::AllActive => (4 * GIB + rng.u64(0..512) * (1 << 20), rng.u32(10..90)),
        _ if active => (4 * GIB, 40),
        _ => (2 * GIB, 0),
    };
    DeviceUsage {
        pool: "node-1".to_owned(),
        device: format!("gpu-{claim}"),
        share_id: None,
        sharing: if shared {
            Sharing::Mps
        } else {
            Sharing::Exclusive
        },
        prepared_at: time(0),
        sampled_at: Some(time(now)),
        window_seconds: 300,
        memory: Memory {
            used: Some(used),
            peak: Some(used),
            share: shared.then_some(8 * GIB),
            total: Some(80 * GIB),
        },
        sm_mean_percent: Some(sm),
        sm_peak_percent: Some(sm),
        processes: Some(u32::from(active)),
        last_active: Some(time(if active { now } else { phase_start })),
        thread_percentage: None,
        idleness: if active {
            Idleness::Active {
                since: time(phase_start),
            }
        } else {
            Idleness::Idle {
                since: time(phase_start),
            }
        },
        overshare: shared.then(|| {
            if (now / SAMPLE_MS).is_multiple_of(2) {
                OverShare::Over { since: time(now) }
            } else {
                OverShare::Within { since: time(now) }
            }
        }),
        advice: None,
        last_action: None,
    }
}

/// Writes in each simulated minute.
fn run(scenario: Scenario, refresh_s: u64) -> Vec<usize> {
    let context = Context {
        driver: "gpu.nvidia.com".to_owned(),
        node: "node-1".to_owned(),
        refresh_s,
    };
    let mut planner = Planner::new(Limits {
        refresh: refresh_s * 1000,
        max_writes_per_minute: 60,
    });
    let mut rng = fastrand::Rng::with_seed(24);
    let mut per_minute = vec![0usize; usize::try_from(MINUTES).unwrap_or(0)];
    let mut now = 0;
    while now < MINUTES * MINUTE {
        let want = (0..CLAIMS)
            .map(|c| {
                let e = entry(&context, &usage(scenario, c, now, &mut rng));
                (format!("uid-{c}"), desired(&[e]))
            })
            .collect::<BTreeMap<_, _>>();
        for write in planner.plan(&want, now) {
            planner.record(&write.uid, Outcome::Applied);
            if let Some(n) = per_minute.get_mut(usize::try_from(now / MINUTE).unwrap_or(0)) {
                *n += 1;
            }
        }
        now += SAMPLE_MS;
    }
    per_minute
}

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
            let per_minute = run(scenario, refresh_s);
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
