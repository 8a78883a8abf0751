//! `tests/tools/fake-mps-control.transcript` replayed against NVIDIA's
//! control program and against the stand-in, each through its own client
//! (the two speak different socket protocols), as gpusliced drives them:
//! daemons in the foreground with an empty environment but their variables,
//! one client run per command. Each must give the transcript's answers, exit
//! statuses, files and pid file, and the two daemons' logs (times, pids and
//! connection lines left out) must be the same line for line. The stand-in
//! runs without NVIDIA's package (python3 only), so it cannot drift from the
//! transcript anywhere; the real one checks the transcript itself.

mod daemon;
mod session;

use std::time::Duration;

use super::{real_control, version};
use crate::tools::{repo_root, skip, which};
use session::Replay;

/// Upper bound for a daemon to start or exit; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(30);
/// The daemons' CUDA_VISIBLE_DEVICES.
const VISIBLE: &str =
    "GPU-aaaaaaaa-0000-0000-0000-000000000000,GPU-bbbbbbbb-0000-0000-0000-000000000000";
/// Connection lines, whose order against other lines is the real daemon's
/// log thread's to choose.
const FRAMING: [&str; 3] = ["Accepting connection...", "NEW UI", "UI closed"];

#[test]
fn mps_transcript_holds_for_nvidias_daemon_and_the_stand_in() {
    let test = "mps_transcript_holds_for_nvidias_daemon_and_the_stand_in";
    let transcript_path = repo_root().join("tests/tools/fake-mps-control.transcript");
    let transcript = std::fs::read_to_string(&transcript_path).expect("read the transcript");
    let mut failures = Vec::new();
    let mut logs = Vec::new();
    if which("python3").is_some() {
        let stand_in = repo_root().join("tests/tools/fake-mps-control");
        let outcome = Replay::run(&stand_in, &transcript);
        failures.extend(outcome.problems("the stand-in tests/tools/fake-mps-control"));
        logs.push(("the stand-in", outcome.logs));
    } else {
        skip(test, "python3 (the stand-in's interpreter) is missing");
    }
    if let Some(real) = real_control(test) {
        let outcome = Replay::run(&real, &transcript);
        let name = format!("NVIDIA's nvidia-cuda-mps-control {}", version());
        failures.extend(outcome.problems(&name));
        logs.push(("NVIDIA's", outcome.logs));
    }
    if let [(_, fake), (_, real)] = logs.as_slice()
        && fake != real
    {
        failures.push(format!(
            "the daemons' logs differ:\n{}",
            line_diff(real, fake, "NVIDIA's", "the stand-in's")
        ));
    }
    assert!(
        failures.is_empty(),
        "{} disagree(s) with {} (fix the stand-in; a new driver's answers go in the \
         transcript, and gpusliced must then work with them):\n{}",
        failures.len(),
        transcript_path.display(),
        failures.join("\n")
    );
}

/// What one program did over the transcript.
struct Outcome {
    /// Transcript line and what differed.
    problems: Vec<(usize, String)>,
    /// The logs of the daemons that quit, normalized.
    logs: Vec<String>,
}

impl Outcome {
    fn problems(&self, name: &str) -> Vec<String> {
        self.problems
            .iter()
            .map(|(line, what)| format!("  {name}, transcript line {line}: {what}"))
            .collect()
    }
}

/// The first lines where `a` and `b` part, with a few around them.
fn line_diff(a: &[String], b: &[String], a_name: &str, b_name: &str) -> String {
    let first = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let from = first.saturating_sub(2);
    let show = |lines: &[String]| -> String {
        lines
            .iter()
            .enumerate()
            .skip(from)
            .take(6)
            .map(|(n, l)| format!("    {:>4} {l}\n", n + 1))
            .collect()
    };
    format!(
        "  from log line {} on ({} and {} lines in all):\n  {a_name}:\n{}  {b_name}:\n{}",
        first + 1,
        a.len(),
        b.len(),
        show(a),
        show(b)
    )
}
