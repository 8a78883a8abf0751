//! One traced run of a workload, and one case: the workload up to the
//! crash, the recovery (crashed again, for a case that says so), and the
//! checks after it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gpuslice::crash::{ARM_ENV, TRACE_ENV};
use gpuslice_proto::gpuslice::v1 as pb;

use super::claims::Names;
use super::workloads::{Step, Workload};
use crate::crash_node::{Gpusliced, Node};
use crate::crash_world::World;

/// A pass of a point: in which step of the workload, in which daemon
/// process (0 = the first start, +1 per restart), which pass of the point
/// in that process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pass {
    pub step: usize,
    pub process: usize,
    pub point: String,
    pub pass: u32,
}

/// A pass of a point during a recovery start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryPass {
    pub point: String,
    pub pass: u32,
}

/// The workload, its device names, the pass to crash at, and the pass of
/// the recovery start to crash at next, if any.
#[derive(Debug, Clone)]
pub struct Case<'a> {
    pub workload: &'a Workload,
    pub names: &'a Names,
    pub at: Pass,
    pub then: Option<RecoveryPass>,
}

impl Case<'_> {
    pub fn title(&self) -> String {
        let w = self.workload;
        let mut title = format!(
            "{} {}@{} in step {} ({})",
            w.name,
            self.at.point,
            self.at.pass,
            self.at.step,
            w.steps[self.at.step].describe(w)
        );
        if let Some(then) = &self.then {
            title.push_str(&format!(
                ", then {}@{} in the recovery",
                then.point, then.pass
            ));
        }
        title
    }
}

/// What a case found wrong, and the points its (first) recovery passed.
#[derive(Debug, Default)]
pub struct Outcome {
    pub problems: Vec<String>,
    pub recovery: Vec<RecoveryPass>,
}

/// A runtime for one worker. Multi-threaded so that a client dropped
/// between calls closes its connection at once: a connection left open
/// would hold up every SIGTERM for the daemon's drain grace.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The trace file's passes: (process, point, pass in that process).
fn read_trace(path: &Path) -> Vec<(usize, String, u32)> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut starts = 0usize;
    let mut counts: BTreeMap<&str, u32> = BTreeMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("start ") {
            starts += 1;
            counts.clear();
            continue;
        }
        let pass = counts.entry(line).or_insert(0);
        *pass += 1;
        out.push((starts.saturating_sub(1), line.to_owned(), *pass));
    }
    out
}

/// Runs `w` once, tracing the points it passes; returns the names of its
/// devices and the passes. The run itself must leave the node empty.
pub fn trace(w: &Workload) -> (Names, Vec<Pass>) {
    let node = Node::new(w.node, &w.config);
    let file = node.path().join("trace");
    let env = vec![(TRACE_ENV.to_owned(), file.display().to_string())];
    let runtime = runtime();
    let mut daemon: Option<Gpusliced> = None;
    let mut names = Names::default();
    let mut passes = Vec::new();
    for (i, step) in w.steps.iter().enumerate() {
        let done = runtime.block_on(step.run(w, &node, &mut daemon, &env, &mut names));
        if let Err(death) = done {
            panic!(
                "{}: step {i} failed without a crash point: {death:?}",
                w.name
            );
        }
        let all = read_trace(&file);
        passes.extend(
            all[passes.len()..]
                .iter()
                .map(|(process, point, pass)| Pass {
                    step: i,
                    process: *process,
                    point: point.clone(),
                    pass: *pass,
                }),
        );
    }
    let daemon = daemon.take().expect("running at the end");
    runtime.block_on(w.unprepare_all(&daemon));
    let problems = World::read(&node, &daemon).problems(&node, &names.uuids, &w.mig_gpus);
    assert!(
        problems.is_empty(),
        "{}: without a crash: {problems:#?}",
        w.name
    );
    daemon.stop(&node);
    (names, passes)
}

/// What the workload had done when the daemon died.
struct Crashed {
    step: usize,
    /// CDI ids of each claim's last completed prepare.
    ids: BTreeMap<usize, Vec<String>>,
    /// Claims prepared and not unprepared since.
    live: BTreeSet<usize>,
}

/// Runs one case.
pub fn run_case(runtime: &tokio::runtime::Runtime, case: &Case<'_>) -> Outcome {
    let w = case.workload;
    let node = Node::new(w.node, &w.config);
    let armed = vec![(
        ARM_ENV.to_owned(),
        format!("{}@{}", case.at.point, case.at.pass),
    )];
    let mut names = case.names.clone();
    let mut daemon: Option<Gpusliced> = None;
    let mut process = 0;
    let mut ids = BTreeMap::new();
    let mut live = BTreeSet::new();
    let fail = |problem: String| Outcome {
        problems: vec![problem],
        recovery: Vec::new(),
    };
    for (i, step) in w.steps.iter().enumerate() {
        if matches!(step, Step::Restart | Step::Reboot) {
            process += 1;
        }
        let env = if process == case.at.process {
            armed.clone()
        } else {
            Vec::new()
        };
        match runtime.block_on(step.run(w, &node, &mut daemon, &env, &mut names)) {
            Ok(Some(prepared)) => {
                if let Step::Prepare(c) = step {
                    ids.insert(*c, prepared);
                    live.insert(*c);
                }
            }
            Ok(None) => {
                if let Step::Unprepare(c) = step {
                    live.remove(c);
                }
            }
            Err(death) if i == case.at.step && death.at(&case.at.point, case.at.pass) => {
                let crashed = Crashed { step: i, ids, live };
                return recover(runtime, case, &node, &names, &crashed);
            }
            Err(death) => {
                return fail(format!(
                    "died in step {i}, not at the armed point: {}; log:\n{}",
                    death.status,
                    tail(&death.log)
                ));
            }
        }
        if i == case.at.step {
            return fail(format!(
                "step {i} did not pass the armed point; log:\n{}",
                tail(&node.log())
            ));
        }
    }
    fail("never crashed".to_owned())
}

/// After the crash: start again (traced, or crashed at `case.then` first),
/// check the invariants, re-prepare, unprepare everything, check again.
fn recover(
    runtime: &tokio::runtime::Runtime,
    case: &Case<'_>,
    node: &Node,
    names: &Names,
    crashed: &Crashed,
) -> Outcome {
    let mut outcome = Outcome::default();
    let file = node.path().join("recovery-trace");
    if let Some(then) = &case.then {
        let armed = [(ARM_ENV.to_owned(), format!("{}@{}", then.point, then.pass))];
        match node.start(&armed) {
            Err(death) if death.at(&then.point, then.pass) => {}
            Err(death) => {
                outcome.problems.push(format!(
                    "the recovery died, not at the armed point: {}; log:\n{}",
                    death.status,
                    tail(&death.log)
                ));
                return outcome;
            }
            Ok(daemon) => {
                daemon.stop(node);
                outcome
                    .problems
                    .push("the recovery did not pass the armed point".to_owned());
                return outcome;
            }
        }
    }
    let env = [(TRACE_ENV.to_owned(), file.display().to_string())];
    let daemon = match node.start(if case.then.is_none() { &env } else { &[] }) {
        Ok(daemon) => daemon,
        Err(death) => {
            outcome.problems.push(format!(
                "did not start again after the crash: {}; log:\n{}",
                death.status,
                tail(&death.log)
            ));
            return outcome;
        }
    };
    outcome.recovery = read_trace(&file)
        .into_iter()
        .map(|(_, point, pass)| RecoveryPass { point, pass })
        .collect();
    let w = case.workload;
    let say = |when: &str, problems: Vec<String>| {
        problems
            .into_iter()
            .map(|p| format!("{when}: {p}"))
            .collect::<Vec<_>>()
    };
    let world = World::read(node, &daemon);
    outcome.problems.extend(say(
        "after the restart",
        world.problems(node, &names.uuids, &w.mig_gpus),
    ));
    outcome
        .problems
        .extend(runtime.block_on(reprepare(&daemon, case, names, crashed)));
    outcome
        .problems
        .extend(runtime.block_on(w.unprepare_all_checked(&daemon)));
    let world = World::read(node, &daemon);
    let mut left = world.problems(node, &names.uuids, &w.mig_gpus);
    let channels = &world.channels.records;
    if !world.records.is_empty() || !world.cdi_files.is_empty() || !channels.is_empty() {
        left.push(format!(
            "records {:?}, channel records {:?}, CDI files {:?}",
            world.records.iter().map(|r| &r.uid).collect::<Vec<_>>(),
            channels.iter().map(|r| &r.uid).collect::<Vec<_>>(),
            world.cdi_files
        ));
    }
    outcome
        .problems
        .extend(say("after unpreparing everything", left));
    daemon.stop(node);
    outcome
}

/// Prepares again the claim the crash cut short and every live claim: each
/// must succeed with the CDI ids of its earlier prepare, and a live one
/// must be found prepared.
async fn reprepare(
    daemon: &Gpusliced,
    case: &Case<'_>,
    names: &Names,
    crashed: &Crashed,
) -> Vec<String> {
    let w = case.workload;
    let interrupted = match w.steps[crashed.step] {
        Step::Prepare(c) | Step::Unprepare(c) => Some(c),
        _ => None,
    };
    let mut problems = Vec::new();
    for c in crashed.live.iter().copied().chain(interrupted) {
        let claim = &w.claims[c];
        let reply = match claim.prepare(daemon, names).await {
            Ok(reply) => reply,
            Err(status) => {
                problems.push(format!("re-prepare of {} failed: {status}", claim.uid));
                continue;
            }
        };
        let got = cdi_ids(&reply);
        if let Some(before) = crashed.ids.get(&c).filter(|b| **b != got) {
            problems.push(format!(
                "re-prepare of {} returned {got:?}, its prepare returned {before:?}",
                claim.uid
            ));
        }
        if crashed.live.contains(&c) && Some(c) != interrupted && !reply.already_prepared {
            problems.push(format!(
                "{} was prepared before the crash, but was prepared anew",
                claim.uid
            ));
        }
    }
    problems
}

pub fn cdi_ids(reply: &pb::PrepareResponse) -> Vec<String> {
    reply
        .devices
        .iter()
        .flat_map(|d| d.cdi_device_ids.iter().cloned())
        .collect()
}

/// The last lines of a log, for a failure message.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(25)..].join("\n")
}
