//! WatchActivity and the usage summary end to end: gpusliced samples every
//! second and calls a claim idle after 2 s without activity. A fake process
//! with `--sm 20` runs in the claim, then stops; the watch delivers every
//! sample, and the one after which the claim has been idle for 2 s carries
//! a moved conditions generation, after which GetActivity dates the claim's
//! idleness from its last active sample. Every wait is on the stream (with a
//! bound only a bug reaches), never a sleep.

use gpuslice_proto::gpuslice::v1 as pb;

use super::BOUND;
use super::processes::Processes;
use crate::common::claims::Claims;
use crate::common::queries::Queries;
use crate::harness::Daemon;

const D: &str = "d4d4d4d4-1616-4000-8000-00000000000d";

async fn activity(node: &Daemon) -> pb::GetActivityResponse {
    node.client().await.activity(false).await
}

/// The next message of the watch; it must come within [`BOUND`].
async fn next(watch: &mut tonic::Streaming<pb::ActivitySampled>) -> pb::ActivitySampled {
    tokio::time::timeout(BOUND, watch.message())
        .await
        .expect("a sample within the bound")
        .expect("no error")
        .expect("the stream goes on")
}

/// Follows the watch until GetActivity, asked after a message, shows what
/// `done` looks for; returns that answer and the messages seen.
async fn until(
    node: &Daemon,
    watch: &mut tonic::Streaming<pb::ActivitySampled>,
    what: &str,
    done: impl Fn(&pb::GetActivityResponse, &pb::ActivitySampled) -> bool,
) -> (pb::GetActivityResponse, Vec<pb::ActivitySampled>) {
    let mut seen = Vec::new();
    loop {
        let message = next(watch).await;
        seen.push(message);
        let now = activity(node).await;
        if done(&now, &message) {
            return (now, seen);
        }
        assert!(
            seen.len() < 120,
            "not after {} samples: {what}; log:\n{}",
            seen.len(),
            node.log()
        );
    }
}

fn device(reply: &pb::GetActivityResponse) -> Option<(&pb::ClaimActivity, pb::DeviceUsageSummary)> {
    let claim = reply
        .claims
        .iter()
        .find(|c| c.claim.as_ref().is_some_and(|r| r.uid == D))?;
    Some((claim, claim.devices.first()?.summary?))
}

#[tokio::test(flavor = "multi_thread")]
async fn sim_a_stopped_claim_turns_idle_after_idle_after_s_and_the_watch_says_when() {
    let extra = "[activity]\ninterval_s = 1\nidle_after_s = 2\nsummary_window_s = 5\n";
    let node = Daemon::start_with(2, extra);
    let mut watch = node
        .client()
        .await
        .watch_activity(pb::WatchActivityRequest {})
        .await
        .expect("WatchActivity")
        .into_inner();
    node.client().await.prepare_whole(D, &["gpu-1"]).await;
    let mut procs = Processes::default();
    let running = procs.exec(&node, D, &["--memory", "1Gi", "--sm", "20"]);
    let (busy, _) = until(&node, &mut watch, "the claim active at 20% SM", |now, _| {
        device(now).is_some_and(|(c, s)| {
            c.last_active.is_some() && s.idle_since.is_none() && s.sm_peak_percent == Some(20)
        })
    })
    .await;
    let (claim, summary) = device(&busy).expect("summarised");
    assert_eq!(summary.process_count, 1);
    assert_eq!(summary.memory_peak_bytes, 1 << 30);
    assert_eq!(summary.window_seconds, 5);
    assert_eq!(claim.devices[0].pool, "node-1", "the prepare's pool");
    let active_generation = busy.conditions_generation;

    procs.end_exec(running);
    let (idle, seen) = until(&node, &mut watch, "the claim idle", |now, message| {
        message.conditions_generation > active_generation
            && device(now).is_some_and(|(_, s)| s.idle_since.is_some())
    })
    .await;
    let (claim, summary) = device(&idle).expect("summarised");
    assert_eq!(
        summary.idle_since, claim.last_active,
        "idle since its last active sample, not since it was noticed"
    );
    let last_active = claim.last_active.expect("was active");
    assert!(
        idle.sampled_at_ms / 1000 >= last_active + 2,
        "idle only after idle_after_s: sampled {} ms, last active {last_active} s",
        idle.sampled_at_ms
    );
    assert_eq!(summary.process_count, 0);
    let times: Vec<i64> = seen.iter().map(|m| m.sampled_at_ms).collect();
    assert!(
        times.windows(2).all(|w| w[0] < w[1]),
        "one message per sample, in order: {times:?}"
    );
    let generations: Vec<u64> = seen.iter().map(|m| m.conditions_generation).collect();
    assert_eq!(
        generations.last().copied(),
        Some(active_generation + 1),
        "moved once, when idleness was reached: {generations:?}"
    );
}
