//! The claim status writer's rate model: prepared claims on a virtual
//! clock (exact counts, not timing), a fresh summary of every claim at each
//! sample rendered by `claim_status::entries` and planned by
//! `claim_status::plan` (every planned write taken). Shared by the rate
//! bench (`benches/claim_status.rs`) and, through `#[path]`, by the
//! conformance tier's real measurement (`tests/conformance/status_rate.rs`),
//! which prints this model's prediction beside what the real plugin wrote.
//! Scenarios: (a) all idle and steady; (b) all active, memory and SM use
//! moving beyond the rendering's resolution every sample; (c) half the
//! claims flipping between active and idle every 10 minutes; (d) 8 shared
//! claims whose over-share episode opens or closes at every sample (the
//! worst case).

use std::collections::BTreeMap;

use gpuslice_dra_plugin::claim_status::entries::{
    Context, DeviceUsage, Idleness, Memory, OverShare, Sharing, desired, entry,
};
use gpuslice_dra_plugin::claim_status::plan::{MINUTE, Outcome, Planner, WriteBudget};
use k8s_openapi::jiff::Timestamp;

const GIB: u64 = 1 << 30;

#[derive(Debug, Clone, Copy)]
pub enum Scenario {
    AllIdle,
    AllActive,
    HalfFlipping,
    OvershareFlapping,
}

/// What the model runs with.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub claims: usize,
    pub minutes: u64,
    /// A fresh summary of every claim this often (`[activity] interval_s`).
    pub sample_ms: u64,
    pub refresh_s: u64,
    pub max_writes_per_minute: u32,
    /// `AllIdle`: the claims show Idle only from this long after their
    /// prepare (`[activity] idle_after_s`); before, Idle False.
    pub idle_after_ms: u64,
}

fn time(ms: u64) -> Timestamp {
    let base = 1_788_256_800_000i64; // 2026-09-01T10:00:00Z
    Timestamp::from_millisecond(base + i64::try_from(ms).unwrap_or(i64::MAX))
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

fn usage(
    scenario: Scenario,
    settings: &Settings,
    claim: usize,
    now: u64,
    rng: &mut fastrand::Rng,
) -> DeviceUsage {
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
    // Not yet idle for long enough: the daemon still says Active.
    let shows_idle = !active && now >= phase_start + settings.idle_after_ms;
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
        idleness: if shows_idle {
            Idleness::Idle {
                since: time(phase_start),
            }
        } else {
            Idleness::Active {
                since: time(phase_start),
            }
        },
        overshare: shared.then(|| {
            if (now / settings.sample_ms).is_multiple_of(2) {
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
pub fn run(scenario: Scenario, settings: &Settings) -> Vec<usize> {
    let context = Context {
        driver: "gpu.nvidia.com".to_owned(),
        node: "node-1".to_owned(),
        refresh_s: settings.refresh_s,
    };
    let mut planner = Planner::new(WriteBudget {
        refresh: settings.refresh_s * 1000,
        max_writes_per_minute: settings.max_writes_per_minute,
    });
    let mut rng = fastrand::Rng::with_seed(24);
    let mut per_minute = vec![0usize; usize::try_from(settings.minutes).unwrap_or(0)];
    let mut now = 0;
    while now < settings.minutes * MINUTE {
        let want = (0..settings.claims)
            .map(|c| {
                let e = entry(&context, &usage(scenario, settings, c, now, &mut rng));
                (format!("uid-{c}"), desired(&[e]))
            })
            .collect::<BTreeMap<_, _>>();
        for write in planner.plan(&want, now) {
            planner.record(&write.uid, Outcome::Applied);
            if let Some(n) = per_minute.get_mut(usize::try_from(now / MINUTE).unwrap_or(0)) {
                *n += 1;
            }
        }
        now += settings.sample_ms;
    }
    per_minute
}
