//! Crash points end to end: the real gpusliced (built with the `failpoints`
//! feature, as every test build is) on simulated GPUs with the MPS and
//! nvidia-smi stand-ins (channel claims of a ComputeDomain on a simulated
//! GB200 node, with the IMEX stand-ins), killed at every crash point of
//! `gpuslice::crash` in every context its workload passes it, then started
//! again.
//!
//! 1. Trace: each workload ([`workloads`]: small ones, one per kind of
//!    claim, and with `GPUSLICE_CRASH_CASES=all` one with every kind of GPU
//!    claim) runs once with `GPUSLICE_CRASH_TRACE`, which tells which points
//!    each step passes and how often.
//! 2. Crashes: for a pass of a point (by default the first pass of each
//!    point in each step that passes it; `GPUSLICE_CRASH_CASES=first` keeps
//!    one per point, `=all` every pass), a fresh node runs the workload with
//!    `GPUSLICE_CRASH_AT=<point>@<n>` set for the daemon process that makes
//!    that pass. It must die by SIGABRT at that point in that step.
//! 3. Recovery ([`run::recover`]): started again without the point (and
//!    traced), the node must meet every invariant of
//!    [`crate::crash_world::World::problems`]; re-preparing the claim cut
//!    short and every live claim succeeds with the CDI ids their earlier
//!    prepare returned; unpreparing every claim leaves no spec, record,
//!    slice, daemon (MPS or IMEX), domain folder, compute mode or
//!    time-slice behind.
//! 4. Crashes during recovery: for each point a recovery passes (the first
//!    such pass per point; every one with `=all`), a case crashes there too,
//!    then recovers a second time and is held to the same invariants.
//!
//! Every point of `crash::ALL` must be passed by a workload or a recovery,
//! or the test fails. Cases run on `GPUSLICE_CRASH_WORKERS` threads
//! (default 6: a case mostly waits on fsync and process starts), a node each.

mod claims;
mod run;
mod workloads;

use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

use gpuslice::crash::ALL;

use crate::tools::{skip, which};
use run::{Case, Outcome, Pass, trace};
use workloads::workloads;

#[test]
fn sim_every_crash_point_is_recovered_from() {
    let test = "sim_every_crash_point_is_recovered_from";
    if which("python3").is_none() {
        skip(
            test,
            "python3 (the stand-in MPS control program's interpreter) is missing",
        );
        return;
    }
    let began = Instant::now();
    let mode = std::env::var("GPUSLICE_CRASH_CASES").unwrap_or_else(|_| "steps".to_owned());
    let workloads = workloads(mode == "all");
    let traced: Vec<_> = std::thread::scope(|scope| {
        let running: Vec<_> = workloads
            .iter()
            .map(|w| scope.spawn(move || (w, trace(w))))
            .collect();
        running
            .into_iter()
            .map(|t| {
                let (w, (names, passes)) = t.join().expect("a trace run failed");
                (w, names, passes)
            })
            .collect()
    });
    let cases: Vec<Case<'_>> = traced
        .iter()
        .flat_map(|(w, names, passes)| {
            select(passes, &mode).into_iter().map(move |at| Case {
                workload: w,
                names,
                at,
                then: None,
            })
        })
        .collect();
    let first = run_all(cases);
    let mut passed: BTreeSet<String> = traced
        .iter()
        .flat_map(|(_, _, passes)| passes.iter().map(|p| p.point.clone()))
        .collect();
    let mut seen = BTreeSet::new();
    let mut again = Vec::new();
    for (case, outcome) in &first {
        for then in &outcome.recovery {
            passed.insert(then.point.clone());
            if mode == "all" || seen.insert(then.point.clone()) {
                again.push(Case {
                    then: Some(then.clone()),
                    ..case.clone()
                });
            }
        }
    }
    let missed: Vec<&&str> = ALL.iter().filter(|p| !passed.contains(**p)).collect();
    let second = run_all(again);
    let total = first.len() + second.len();
    let failures: Vec<(String, Vec<String>)> = first
        .iter()
        .chain(&second)
        .filter(|(_, o)| !o.problems.is_empty())
        .map(|(case, o)| (case.title(), o.problems.clone()))
        .collect();
    eprintln!(
        "crash points: {} points, {total} cases ({} during recovery; mode {mode}), {} failed, \
         {:.1} s",
        ALL.len(),
        second.len(),
        failures.len(),
        began.elapsed().as_secs_f64()
    );
    assert!(
        missed.is_empty(),
        "no workload or recovery passes crash points {missed:?}: extend a workload in \
         tests/e2e/crash_points/workloads.rs so each one is crashed at"
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Which passes become cases: `first` (one per point), `steps` (the first
/// pass of each point in each step), `all`.
fn select(passes: &[Pass], mode: &str) -> Vec<Pass> {
    let mut seen = BTreeSet::new();
    passes
        .iter()
        .filter(|p| match mode {
            "all" => true,
            "first" => seen.insert((p.point.clone(), 0)),
            _ => seen.insert((p.point.clone(), p.step)),
        })
        .cloned()
        .collect()
}

/// Runs `cases` on the worker threads; returns each with its outcome, in
/// the order given.
fn run_all(cases: Vec<Case<'_>>) -> Vec<(Case<'_>, Outcome)> {
    let workers: usize = std::env::var("GPUSLICE_CRASH_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let queue: Mutex<VecDeque<(usize, Case<'_>)>> =
        Mutex::new(cases.into_iter().enumerate().collect());
    let done = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| {
                let runtime = run::runtime();
                loop {
                    let Some((i, case)) = queue.lock().expect("queue").pop_front() else {
                        break;
                    };
                    let began = Instant::now();
                    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        run::run_case(&runtime, &case)
                    }))
                    .unwrap_or_else(|panic| {
                        let text = panic
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                            .unwrap_or_default();
                        Outcome {
                            problems: vec![format!("panicked: {text}")],
                            recovery: Vec::new(),
                        }
                    });
                    if outcome.problems.is_empty() {
                        eprintln!(
                            "crash point ok: {} ({:.1} s)",
                            case.title(),
                            began.elapsed().as_secs_f64()
                        );
                    } else {
                        eprintln!(
                            "crash point FAILED: {}: {:#?}",
                            case.title(),
                            outcome.problems
                        );
                    }
                    done.lock().expect("done").push((i, case, outcome));
                }
            });
        }
    });
    let mut done = done.into_inner().expect("done");
    done.sort_by_key(|(i, _, _)| *i);
    done.into_iter().map(|(_, case, o)| (case, o)).collect()
}

#[test]
fn sim_the_tested_gpusliced_has_the_crash_points_and_refuses_a_misspelt_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = crate::harness::write_config(dir.path(), 1, "");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpusliced"))
        .arg("--config")
        .arg(&config)
        .env(gpuslice::crash::ARM_ENV, "spec.after_renamed")
        .env_remove("NOTIFY_SOCKET")
        .output()
        .expect("run gpusliced");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no crash point \"spec.after_renamed\"")
            && ALL.iter().all(|p| stderr.contains(p)),
        "{stderr}"
    );
}
