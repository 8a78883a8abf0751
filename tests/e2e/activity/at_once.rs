//! A claim shows in the activity view as soon as it is prepared, and a
//! `sim exec` process as soon as `sim exec` says it runs: gpusliced samples
//! once an hour here (`interval_s = 3600`), so only its first sample, at
//! start-up, comes by itself. Nothing is waited for but that first sample
//! and the line `sim exec` prints; every other answer must be right at once.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::time::{Duration, Instant};

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::Value;

use super::{BOUND, claim, ctl_ok, processes, sample, scrape};
use crate::common::queries::Queries;
use crate::harness::Daemon;

const C: &str = "c3c3c3c3-1616-4000-8000-00000000000c";

/// GetActivity as the live `top` asks it: the latest periodic sample.
async fn periodic(node: &Daemon) -> pb::GetActivityResponse {
    node.client().await.activity(false).await
}

/// Polls the periodic view until the sample gpusliced takes at start-up is
/// there (at most [`BOUND`]); returns it.
async fn start_up_sample(node: &Daemon) -> pb::GetActivityResponse {
    let began = Instant::now();
    loop {
        let view = periodic(node).await;
        if view.sampled_at_ms > 0 {
            return view;
        }
        assert!(
            began.elapsed() < BOUND,
            "no start-up sample:\n{}",
            node.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The first line of `stderr`, and the reader (to keep the pipe open);
/// waits at most [`BOUND`] for it.
fn first_line(stderr: ChildStderr) -> (String, BufReader<ChildStderr>) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut line = String::new();
        let read = reader.read_line(&mut line);
        let _ = tx.send((read.map(|_| line), reader));
    });
    match rx.recv_timeout(BOUND) {
        Ok((Ok(line), reader)) => (line, reader),
        Ok((Err(err), _)) => panic!("cannot read sim exec's stderr: {err}"),
        Err(_) => panic!("sim exec printed no line within {BOUND:?}"),
    }
}

/// A `sim exec` and its stderr (kept open until it ends), ended by SIGTERM.
struct Exec {
    child: Child,
    _stderr: BufReader<ChildStderr>,
}

impl Drop for Exec {
    fn drop(&mut self) {
        let pid = i32::try_from(self.child.id()).expect("pid fits");
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sim_a_claim_and_its_process_show_at_once_without_waiting_for_a_sample() {
    let extra = "[activity]\ninterval_s = 3600\n[metrics]\nlisten = \"127.0.0.1:0\"\n";
    let node = Daemon::start_with(2, extra);
    let first = start_up_sample(&node).await;
    ctl_ok(
        &node,
        &[
            "prepare",
            "--uid",
            C,
            "--namespace",
            "ml",
            "--name",
            "infer",
            "--device",
            "gpu-1",
        ],
    );
    not_sampled_yet_but_listed(&node, first.sampled_at_ms).await;
    let idle: Value = serde_json::from_str(&ctl_ok(
        &node,
        &["claims", "--idle", "0s", "--output", "json"],
    ))
    .expect("JSON");
    assert_eq!(idle["claims"][0]["uid"], C, "{idle}");
    let top = ctl_ok(&node, &["top", "--once"]);
    assert!(top.contains("claims 1"), "{top}");
    let row = top
        .lines()
        .find(|l| l.starts_with("ml/infer"))
        .unwrap_or_else(|| panic!("no row for ml/infer:\n{top}"));
    assert!(row.contains("gpu-1") && row.contains("never"), "{top}");
    process_seen_once_announced(&node).await;
}

/// The periodic view holds the claim the table holds, marked not sampled.
async fn not_sampled_yet_but_listed(node: &Daemon, sampled_at_ms: i64) {
    let view = periodic(node).await;
    assert_eq!(
        view.sampled_at_ms, sampled_at_ms,
        "no sample since start-up"
    );
    let claim = view
        .claims
        .iter()
        .find(|c| c.claim.as_ref().is_some_and(|r| r.uid == C))
        .unwrap_or_else(|| panic!("claim {C} missing from {view:?}"));
    assert!(claim.not_sampled_yet, "{claim:?}");
    assert_eq!(claim.last_active, None);
    assert!(claim.idle_seconds >= 0, "{claim:?}");
    let devices: Vec<&str> = claim.devices.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(devices, ["gpu-1"]);
    let json: Value =
        serde_json::from_str(&ctl_ok(node, &["top", "--output", "json"])).expect("JSON");
    assert_eq!(
        claim_of(&json)["not_sampled_yet"],
        false,
        "top asks for a fresh sample: {json}"
    );
}

fn claim_of(json: &Value) -> &Value {
    claim(json, C).unwrap_or_else(|| panic!("no claim {C} in {json}"))
}

/// `sim exec` says its process runs; the next `top --once` and the next
/// scrape show it, with no periodic sample in between.
async fn process_seen_once_announced(node: &Daemon) {
    let mut exec = Command::new(crate::binaries::gpuslicectl())
        .arg("--socket")
        .arg(&node.socket)
        .args(["sim", "exec", "--claim", C, "--memory", "3Gi", "--sm", "25"])
        .args(["--", "sleep", "600"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gpuslicectl sim exec");
    let (line, stderr) = first_line(exec.stderr.take().expect("stderr"));
    let _exec = Exec {
        child: exec,
        _stderr: stderr,
    };
    let (pid, rest) = line
        .strip_prefix("sim exec: pid ")
        .and_then(|l| l.split_once(' '))
        .unwrap_or_else(|| panic!("sim exec's line: {line:?}"));
    assert_eq!(
        rest,
        format!("on gpu-1 as claim ml/infer ({C}), 3.0 GiB, SM 25%\n")
    );
    let json: Value =
        serde_json::from_str(&ctl_ok(node, &["top", "--output", "json"])).expect("JSON");
    assert_eq!(processes(&json, C), 1, "{json}");
    let device = &claim_of(&json)["devices"][0];
    assert_eq!(device["processes"][0]["pid"].to_string(), pid, "{json}");
    assert_eq!(device["sm_percent"], 25, "{json}");
    let top = ctl_ok(node, &["top", "--once"]);
    assert!(top.contains("3.0 GiB"), "{top}");
    let text = scrape(node).await;
    let label = format!("uid=\"{C}\"");
    assert_eq!(
        sample(&text, "gpuslice_claim_processes", &[&label]),
        Some(1.0),
        "the fresh sample is the metrics' latest too:\n{text}"
    );
    let view = periodic(node).await;
    assert!(
        view.claims.iter().all(|c| !c.not_sampled_yet),
        "the fresh sample was published: {view:?}"
    );
}
