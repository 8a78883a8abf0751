//! Per-claim GPU use end to end, as the README's demo runs it: the real
//! gpusliced on the simulated backend sampling every second, two claims
//! prepared with `gpuslicectl prepare` (an MPS claim with a 4 GiB share and
//! a whole GPU), fake GPU processes started in them with `gpuslicectl sim
//! exec`; then `top --once`, the metrics listener, `claims --idle`, and the
//! two kinds of warning: an MPS claim over its share and a process that
//! belongs to no claim, each logged once, listed by `status`, counted, and
//! gone when its cause is. Every wait polls for the state it expects, with a
//! generous bound; nothing depends on how fast a sample comes.

mod at_once;
pub mod processes;
mod watch;

use std::time::{Duration, Instant};

use processes::Processes;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::ctl::run_ctl;
use crate::harness::Daemon;
use crate::promcheck;
use crate::stand_ins::{SharedDaemon, memory, mps};

const A: &str = "a1a1a1a1-1616-4000-8000-00000000000a";
const B: &str = "b2b2b2b2-1616-4000-8000-00000000000b";

/// Upper bound for the daemon to see a change; only a bug reaches it.
pub(crate) const BOUND: Duration = Duration::from_secs(60);

/// gpuslicectl's stdout, which must answer.
pub(crate) fn ctl_ok(daemon: &Daemon, args: &[&str]) -> String {
    run_ctl(&daemon.socket, args).answered()
}

/// Polls `check` until it answers, for at most [`BOUND`].
pub(crate) async fn eventually<T>(
    daemon: &Daemon,
    what: &str,
    check: impl FnMut() -> Option<T>,
) -> T {
    let every = Duration::from_millis(100);
    crate::harness::poll_until(what, (BOUND, every), check, || {
        format!("log:\n{}", daemon.log())
    })
    .await
}

/// `top --output json`.
pub(crate) fn activity(daemon: &Daemon) -> Value {
    serde_json::from_str(&ctl_ok(daemon, &["top", "--output", "json"])).expect("JSON")
}

pub(crate) fn claim<'a>(activity: &'a Value, uid: &str) -> Option<&'a Value> {
    activity["claims"]
        .as_array()?
        .iter()
        .find(|c| c["uid"] == uid)
}

/// The processes of `uid` on its first device.
fn processes(activity: &Value, uid: &str) -> usize {
    claim(activity, uid)
        .and_then(|c| c["devices"][0]["processes"].as_array())
        .map_or(0, Vec::len)
}

/// GET /metrics from the listener; the body.
pub(crate) async fn scrape(daemon: &Daemon) -> String {
    let addr = daemon
        .ready_status
        .split("metrics on http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address in {:?}", daemon.ready_status))
        .to_owned();
    let mut stream = tokio::net::TcpStream::connect(&addr)
        .await
        .expect("connect");
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    raw.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .expect("a response")
}

/// The value of the one sample of `name` whose labels contain every one of
/// `labels` (`key="value"`).
pub(crate) fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| labels.iter().all(|label| l.contains(label)))
        .and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
}

/// Lines of the daemon's log at WARN that carry `message`.
fn warned(daemon: &Daemon, message: &str) -> usize {
    daemon
        .log()
        .lines()
        .filter(|l| l.contains("WARN") && l.contains(message))
        .count()
}

/// The open warnings as (kind, message).
fn warnings(activity: &Value) -> Vec<(String, String)> {
    activity["warnings"]
        .as_array()
        .map(|all| {
            all.iter()
                .map(|w| {
                    let text = |k: &str| w[k].as_str().unwrap_or_default().to_owned();
                    (text("kind"), text("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn sim_claims_use_shows_in_top_metrics_idle_and_warnings() {
    let test = "sim_claims_use_shows_in_top_metrics_idle_and_warnings";
    let extra = "[activity]\ninterval_s = 1\n[metrics]\nlisten = \"127.0.0.1:0\"\n";
    let Some(node) = SharedDaemon::start(test, 2, extra) else {
        return;
    };
    let mut procs = Processes::default();
    prepare_two_claims(&node);
    procs.exec(&node, A, &["--memory", "2Gi", "--sm", "30"]);
    procs.exec(&node, B, &["--memory", "1Gi", "--sm", "0"]);
    let seen = eventually(&node, "both processes in their claims", || {
        let now = activity(&node);
        (processes(&now, A) == 1 && processes(&now, B) == 1).then_some(now)
    })
    .await;
    top_shows_both(&node);
    let active = eventually(&node, "claim A active", || {
        let now = activity(&node);
        claim(&now, A)
            .is_some_and(|c| c["last_active"].is_i64())
            .then_some(now)
    })
    .await;
    assert!(
        claim(&active, B).is_some_and(|c| c["last_active"].is_null()),
        "B's process shows 0% SM: never active"
    );
    idle_filters(&node);
    metrics_have_both(&node, test).await;
    let status = ctl_ok(&node, &["status"]);
    assert!(status.contains("warnings: none\n"), "{status}");
    let over = procs.exec(&node, A, &["--memory", "3Gi", "--sm", "10"]);
    let dir = sim_processes_dir(&node);
    let uuid = claim(&seen, B).expect("B")["devices"][0]["uuid"]
        .as_str()
        .expect("gpu-1's uuid")
        .to_owned();
    let stray = procs.unclaimed(&dir, &uuid);
    let messages = warnings_open(&node, stray).await;
    warned_once_and_listed(&node, &messages).await;
    procs.end_exec(over);
    procs.end_unclaimed();
    eventually(&node, "both warnings closed", || {
        warnings(&activity(&node)).is_empty().then_some(())
    })
    .await;
    let status = ctl_ok(&node, &["status"]);
    assert!(status.contains("warnings: none\n"), "{status}");
    for message in &messages {
        assert_eq!(warned(&node, message), 1, "{message}: logged once");
    }
    no_claim_is_unclaimed(&node, &mut procs).await;
    unprepared_claims_leave_the_metrics(&node).await;
}

/// `sim exec --no-claim` on gpu-0 (A's MPS GPU): a `sleep` with no
/// claim in its environment, listed as unclaimed with that reason.
async fn no_claim_is_unclaimed(node: &Daemon, procs: &mut Processes) {
    let stray = procs.exec_no_claim(node, "gpu-0");
    let seen = eventually(node, "the --no-claim process unclaimed on gpu-0", || {
        let now = activity(node);
        now["unclaimed"]
            .as_array()?
            .iter()
            .find(|u| u["device"] == "gpu-0")
            .cloned()
    })
    .await;
    assert_eq!(seen["process"]["name"], "sleep", "{seen}");
    assert_eq!(
        seen["reason"], "no gpuslice claim in its environment",
        "{seen}"
    );
    procs.end_exec(stray);
    eventually(node, "the --no-claim process gone", || {
        let now = activity(node);
        now["unclaimed"].as_array()?.is_empty().then_some(())
    })
    .await;
}

/// `gpuslicectl prepare`s claim `uid` (`namespace`/`name`) of `device` as
/// MPS at 50% of the threads with `share` of its memory, as an operator
/// would.
pub(crate) fn prepare_mps(node: &Daemon, claim: [&str; 3], device: &str, share: &str) {
    let [uid, namespace, name] = claim;
    let (mps, share) = (mps(50), memory(share));
    let args = [
        "prepare",
        "--uid",
        uid,
        "--namespace",
        namespace,
        "--name",
        name,
        "--device",
        device,
        "--config",
        &mps,
        "--config",
        &share,
    ];
    ctl_ok(node, &args);
}

fn prepare_two_claims(node: &Daemon) {
    prepare_mps(node, [A, "team-a", "train"], "gpu-0", "4Gi");
    let b = [
        "prepare",
        "--uid",
        B,
        "--namespace",
        "team-b",
        "--name",
        "notebook",
        "--device",
        "gpu-1",
    ];
    ctl_ok(node, &b);
}

fn top_shows_both(node: &Daemon) {
    let top = ctl_ok(node, &["top", "--once", "--sort", "name"]);
    assert!(top.contains("claims 2"), "{top}");
    let row = |label: &str| {
        top.lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no row for {label}:\n{top}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<String>>()
    };
    let a = row("team-a/train");
    assert_eq!(&a[1..4], ["gpu-0", "mps", "1"], "{top}");
    let b = row("team-b/notebook");
    assert_eq!(&b[1..4], ["gpu-1", "exclusive", "1"], "{top}");
    assert_eq!(
        a[4..9].join(" "),
        "2.0 GiB / 4.0 GiB",
        "used / share: {top}"
    );
    assert!(
        b[4..9].join(" ").starts_with("1.0 GiB / "),
        "used / total: {top}"
    );
}

fn idle_filters(node: &Daemon) {
    let all: Value = serde_json::from_str(&ctl_ok(
        node,
        &["claims", "--idle", "0s", "--output", "json"],
    ))
    .expect("JSON");
    let uids: Vec<&str> = all["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .filter_map(|c| c["uid"].as_str())
        .collect();
    assert_eq!(uids, [A, B], "every claim is idle for at least 0s");
    let table = ctl_ok(node, &["claims", "--idle", "0s"]);
    assert!(table.contains("IDLE FOR") && table.contains(B), "{table}");
    let hour = ctl_ok(node, &["claims", "--idle", "1h"]);
    assert!(!hour.contains(A) && !hour.contains(B), "{hour}");
    assert!(hour.starts_with("no claim has been idle for 1h"), "{hour}");
}

async fn metrics_have_both(node: &Daemon, test: &str) {
    let text = scrape(node).await;
    promcheck::check_text(test, &text);
    let used = |uid: &str| {
        sample(
            &text,
            "gpuslice_claim_memory_used_bytes",
            &[&format!("uid=\"{uid}\"")],
        )
    };
    assert_eq!(used(A), Some((2u64 << 30) as f64), "{text}");
    assert_eq!(used(B), Some((1u64 << 30) as f64), "{text}");
    let share = sample(
        &text,
        "gpuslice_claim_memory_share_bytes",
        &[&format!("uid=\"{A}\""), "sharing=\"mps\""],
    );
    assert_eq!(share, Some((4u64 << 30) as f64), "{text}");
    for uid in [A, B] {
        let label = format!("uid=\"{uid}\"");
        assert_eq!(
            sample(&text, "gpuslice_claim_processes", &[&label]),
            Some(1.0),
            "{text}"
        );
    }
}

pub(crate) fn sim_processes_dir(node: &Daemon) -> String {
    let status: Value =
        serde_json::from_str(&ctl_ok(node, &["status", "--output", "json"])).expect("JSON");
    let dir = status["sim_processes_dir"].as_str().unwrap_or_default();
    assert!(!dir.is_empty(), "{status}");
    dir.to_owned()
}

/// Waits for the over-share of A and the unclaimed `pid`; their messages.
async fn warnings_open(node: &Daemon, pid: u32) -> Vec<String> {
    eventually(node, "an over-share and an unclaimed warning", || {
        let now = activity(node);
        let open = warnings(&now);
        let over = open.iter().find(|(kind, _)| kind == "overshare")?;
        let stray = now["warnings"]
            .as_array()?
            .iter()
            .find(|w| w["kind"] == "unclaimed" && w["pid"] == pid)?;
        (open.len() == 2).then(|| {
            vec![
                over.1.clone(),
                stray["message"].as_str().unwrap_or_default().to_owned(),
            ]
        })
    })
    .await
}

/// Each warning logged once, even samples later; each a line of `status`;
/// each counted.
async fn warned_once_and_listed(node: &Daemon, messages: &[String]) {
    let since = activity(node)["sampled_at_ms"].as_i64().unwrap_or(0);
    eventually(node, "two more samples", || {
        (activity(node)["sampled_at_ms"].as_i64().unwrap_or(0) >= since + 2_000).then_some(())
    })
    .await;
    let status = ctl_ok(node, &["status"]);
    for message in messages {
        assert_eq!(warned(node, message), 1, "{message}: once:\n{}", node.log());
        assert!(
            status.contains(&format!("warning: {message}\n")),
            "{status}"
        );
    }
    let text = scrape(node).await;
    let episodes = |labels: &[&str]| sample(&text, "gpuslice_activity_episodes_total", labels);
    assert_eq!(
        episodes(&["kind=\"overshare\"", "sharing=\"mps\""]),
        Some(1.0),
        "{text}"
    );
    assert_eq!(episodes(&["kind=\"unclaimed\""]), Some(1.0), "{text}");
}

async fn unprepared_claims_leave_the_metrics(node: &Daemon) {
    ctl_ok(node, &["unprepare", "--uid", A]);
    let began = Instant::now();
    loop {
        let text = scrape(node).await;
        if !text.contains(A) {
            assert!(text.contains(B), "{text}");
            return;
        }
        assert!(began.elapsed() < BOUND, "A's series stay:\n{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
