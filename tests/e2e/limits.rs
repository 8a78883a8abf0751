//! `[limits]` end to end on the simulated backend: the real gpusliced
//! sampling every second with `grace_s = 1`, two MPS claims with a 20 GiB
//! share each on gpu-0, fake GPU processes started with `gpuslicectl sim
//! exec` (real `sleep`s, so the pidfds and signals are real). Under
//! `overshare = "end"` only claim A's largest process is ended (its `sim
//! exec` exits 143, as its command did), claim B's and an unclaimed
//! process live, with exactly one journal line, a count of 1 and the action
//! in GetActivity; under "dry-run" nothing ends and one "would end" line is
//! written; under `unclaimed = "end"` the `--no-claim` process ends and
//! claim B's lives. Every wait polls for the state it expects.

use serde_json::Value;

use crate::activity::processes::Processes;
use crate::activity::{activity, claim, eventually, prepare_mps, sample, scrape};
use crate::harness::Daemon;
use crate::stand_ins::SharedDaemon;

const A: &str = "a1a1a1a1-2424-4000-8000-00000000000a";
const B: &str = "b2b2b2b2-2424-4000-8000-00000000000b";

fn config(overshare: &str, unclaimed: &str) -> String {
    format!(
        "[activity]\ninterval_s = 1\n[metrics]\nlisten = \"127.0.0.1:0\"\n[limits]\n\
         overshare = \"{overshare}\"\nunclaimed = \"{unclaimed}\"\ngrace_s = 1\n"
    )
}

/// A and B, MPS claims with a 20 GiB share each of gpu-0.
fn prepare_two_claims(node: &Daemon) {
    for (uid, name) in [(A, "infer-a"), (B, "infer-b")] {
        prepare_mps(node, [uid, "ml", name], "gpu-0", "20Gi");
    }
}

/// The pid of `uid`'s process using `gib` GiB, once a sample lists it.
async fn pid_of(node: &Daemon, uid: &str, gib: u64) -> u64 {
    eventually(node, &format!("{uid}'s {gib} GiB process"), || {
        let now = activity(node);
        claim(&now, uid)?["devices"][0]["processes"]
            .as_array()?
            .iter()
            .find(|p| p["memory_used_bytes"] == gib << 30)?["pid"]
            .as_u64()
    })
    .await
}

/// The unclaimed process on `device`, once a sample lists it.
async fn unclaimed_on(node: &Daemon, device: &str) -> u64 {
    eventually(node, "the unclaimed process", || {
        activity(node)["unclaimed"]
            .as_array()?
            .iter()
            .find(|u| u["device"] == device)?["process"]["pid"]
            .as_u64()
    })
    .await
}

/// Lines of the log at `level` that carry every one of `parts`.
fn lines(node: &Daemon, level: &str, parts: &[&str]) -> Vec<String> {
    node.log()
        .lines()
        .filter(|l| l.contains(level) && parts.iter().all(|p| l.contains(p)))
        .map(str::to_owned)
        .collect()
}

/// Waits for two more samples after now.
async fn two_more_samples(node: &Daemon) {
    let since = activity(node)["sampled_at_ms"].as_i64().unwrap_or(0);
    eventually(node, "two more samples", || {
        (activity(node)["sampled_at_ms"].as_i64().unwrap_or(0) >= since + 2_000).then_some(())
    })
    .await;
}

async fn actions(node: &Daemon, labels: &[&str]) -> Option<f64> {
    sample(&scrape(node).await, "gpuslice_limit_actions_total", labels)
}

#[tokio::test(flavor = "multi_thread")]
async fn sim_overshare_end_ends_only_the_claims_largest_process() {
    let test = "sim_overshare_end_ends_only_the_claims_largest_process";
    let Some(node) = SharedDaemon::start(test, 2, &config("end", "warn")) else {
        return;
    };
    prepare_two_claims(&node);
    let mut procs = Processes::default();
    let b = procs.exec(&node, B, &["--memory", "5Gi", "--sm", "10"]);
    let stray = procs.exec_no_claim(&node, "gpu-1");
    let a_small = procs.exec(&node, A, &["--memory", "10Gi", "--sm", "10"]);
    let a_large = procs.exec(&node, A, &["--memory", "12Gi", "--sm", "10"]);
    let large = pid_of(&node, A, 12).await;
    let ended = format!("ended process {large} (sleep, 12.0 GiB) of claim ml/infer-a ({A})");
    eventually(&node, "the ended line", || {
        (!lines(&node, "WARN", &[&ended]).is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        procs.exit_code(a_large),
        Some(143),
        "sleep ended by SIGTERM"
    );
    two_more_samples(&node).await;
    for i in [b, stray, a_small] {
        assert!(procs.running(i), "process {i} lives:\n{}", node.log());
    }
    let all = lines(&node, "WARN", &["ended process"]);
    assert_eq!(all.len(), 1, "one line: {all:#?}");
    for part in [
        "the claim used 22.0 GiB on gpu-0 for ",
        " s, over its mps share of 20.0 GiB (limits: overshare = end, grace 1 s); SIGTERM",
    ] {
        assert!(all[0].contains(part), "{part}: {}", all[0]);
    }
    let now = activity(&node);
    let action: &Value = &claim(&now, A).expect("A")["devices"][0]["last_action"];
    assert_eq!(action["outcome"], "terminated", "{now}");
    assert_eq!(
        (action["kind"].as_str(), action["mode"].as_str()),
        (Some("overshare"), Some("end"))
    );
    assert_eq!(action["pid"].as_u64(), Some(large));
    assert!(claim(&now, B).expect("B")["devices"][0]["last_action"].is_null());
    let labels = [
        "kind=\"overshare\"",
        "mode=\"end\"",
        "outcome=\"terminated\"",
    ];
    assert_eq!(actions(&node, &labels).await, Some(1.0));
    let text = scrape(&node).await;
    crate::promcheck::check_text(test, &text);
    counters_as_documented(&text);
}

/// docs/limits.md's `grep '^gpuslice_limit_actions_total' | sort` block
/// shows exactly the counter lines of `text`, sorted.
fn counters_as_documented(text: &str) {
    let doc = std::fs::read_to_string(crate::tools::repo_root().join("docs/limits.md"))
        .expect("read docs/limits.md");
    let shown: Vec<&str> = doc
        .split("<!-- run by tests/e2e/limits.rs -->")
        .nth(1)
        .and_then(|rest| rest.split("```").nth(1))
        .expect("the counter block of docs/limits.md")
        .lines()
        .filter(|l| l.starts_with("gpuslice_limit_actions_total"))
        .collect();
    let mut scraped: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("gpuslice_limit_actions_total"))
        .collect();
    scraped.sort_unstable();
    assert_eq!(
        shown, scraped,
        "docs/limits.md's counter block is out of date"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sim_overshare_dry_run_names_the_process_once_and_ends_nothing() {
    let test = "sim_overshare_dry_run_names_the_process_once_and_ends_nothing";
    let Some(node) = SharedDaemon::start(test, 2, &config("dry-run", "warn")) else {
        return;
    };
    prepare_two_claims(&node);
    let mut procs = Processes::default();
    let started = [
        procs.exec(&node, A, &["--memory", "10Gi", "--sm", "10"]),
        procs.exec(&node, A, &["--memory", "12Gi", "--sm", "10"]),
        procs.exec(&node, B, &["--memory", "5Gi", "--sm", "10"]),
    ];
    let large = pid_of(&node, A, 12).await;
    let would = format!("would end process {large} (sleep, 12.0 GiB) of claim ml/infer-a");
    eventually(&node, "the would-end line", || {
        (!lines(&node, "WARN", &[&would]).is_empty()).then_some(())
    })
    .await;
    two_more_samples(&node).await;
    two_more_samples(&node).await;
    let all = lines(&node, "WARN", &["end process"]);
    assert_eq!(all.len(), 1, "once per episode: {all:#?}");
    assert!(all[0].contains("dry-run: nothing sent"), "{}", all[0]);
    for i in started {
        assert!(procs.running(i), "process {i} lives:\n{}", node.log());
    }
    let labels = [
        "kind=\"overshare\"",
        "mode=\"dry-run\"",
        "outcome=\"would-end\"",
    ];
    assert_eq!(actions(&node, &labels).await, Some(1.0));
    let now = activity(&node);
    let action = &claim(&now, A).expect("A")["devices"][0]["last_action"];
    assert_eq!(action["outcome"], "would-end", "{now}");
}

#[tokio::test(flavor = "multi_thread")]
async fn sim_unclaimed_end_ends_the_no_claim_process_only() {
    let test = "sim_unclaimed_end_ends_the_no_claim_process_only";
    let Some(node) = SharedDaemon::start(test, 2, &config("warn", "end")) else {
        return;
    };
    prepare_two_claims(&node);
    let mut procs = Processes::default();
    let b = procs.exec(&node, B, &["--memory", "5Gi", "--sm", "10"]);
    let stray = procs.exec_no_claim(&node, "gpu-1");
    pid_of(&node, B, 5).await;
    let pid = unclaimed_on(&node, "gpu-1").await;
    let ended = format!("ended process {pid} (sleep, ");
    let why = "on gpu-1: it belongs to no gpuslice claim";
    eventually(&node, "the ended line", || {
        (!lines(&node, "WARN", &[&ended, why]).is_empty()).then_some(())
    })
    .await;
    assert_eq!(procs.exit_code(stray), Some(143), "sleep ended by SIGTERM");
    two_more_samples(&node).await;
    assert!(procs.running(b), "claim B's process lives:\n{}", node.log());
    assert_eq!(lines(&node, "WARN", &["ended process"]).len(), 1);
    let labels = [
        "kind=\"unclaimed\"",
        "mode=\"end\"",
        "outcome=\"terminated\"",
    ];
    assert_eq!(actions(&node, &labels).await, Some(1.0));
}
