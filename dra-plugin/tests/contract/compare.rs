//! The two schedulers' answers for one pod, compared: the selector
//! allocator's ([`crate::scheduler`]) and upstream's ([`crate::real`]).
//! They must agree on whether the pod fits, on the allocation (devices,
//! requests, consumed capacity and configs; share ids are fresh UIDs on
//! both sides, and a config may name every request or none, [`normalized`])
//! and on unschedulable against refused. Where they do not, the
//! tool with one known upstream bug fixed is asked ([`KNOWN`]): if it then
//! agrees and the pod has the pattern the bug needs on gpuslice's
//! publication, the disagreement is that bug, expected and counted;
//! otherwise the test fails with both answers and both inputs as JSON.
//!
//! Owns: the comparison, the known upstream bugs, and the tally printed at
//! the end of the test.

use std::collections::BTreeMap;
use std::sync::Mutex;

use k8s_openapi::api::resource::v1::AllocationResult;

use crate::real::{Question, Real, input};
use crate::scheduler::Answer;

/// An upstream bug of the vendored tag a disagreement may be.
#[derive(Debug)]
pub struct Known {
    /// The tool's fix closing it (`tests/tools/allocator/fixes/<fix>.patch`).
    pub fix: &'static str,
    /// The upstream issue.
    pub issue: &'static str,
    /// The pattern of claims and published devices it needs where gpuslice
    /// publishes; a disagreement the fix explains outside it is a failure
    /// (gpuslice's publication was meant to avoid it there).
    pub pattern: &'static str,
    /// Whether `question` has the pattern.
    pub applies: fn(&Question<'_>) -> bool,
}

/// The known upstream bugs of v0.36.2 that change whether a pod fits a
/// gpuslice node (docs/publication.md, "Upstream bugs the contract
/// meets").
pub const KNOWN: &[Known] = &[
    // https://github.com/kubernetes/kubernetes/issues/140436: counters a
    // candidate device reserved stay reserved after a matchAttribute
    // constraint or a taint refuses it, so the rest of its GPU looks used
    // and a pod that fits is unschedulable; and (incubating) a device an
    // `All` request finds without the capacity it asks keeps its entry in
    // the claim's constraint, so the search goes wrong after it. gpuslice
    // publishes tainted devices no claim holds without counters, so only
    // the constraint is left: a claim matching an attribute across its
    // devices, on MIG devices published partitionable or on GPUs shared by
    // capacity.
    Known {
        fix: "counter-leak-140436",
        issue: "https://github.com/kubernetes/kubernetes/issues/140436",
        pattern: "a claim with a matchAttribute constraint, on a pool with counters or shared \
                  GPUs",
        applies: |q| {
            let constrained = q.claims.iter().any(|c| {
                c.spec
                    .devices
                    .as_ref()
                    .is_some_and(|d| d.constraints.as_ref().is_some_and(|c| !c.is_empty()))
            });
            let devices = || q.slices.iter().flat_map(|s| s.devices.iter().flatten());
            let counters = q.slices.iter().any(|s| s.shared_counters.is_some());
            let shared = devices().any(|d| d.allow_multiple_allocations == Some(true));
            constrained && (counters || shared)
        },
    },
];

/// How the answers for one pod relate.
#[derive(Debug)]
pub enum Verdict {
    /// The same answer.
    Agree,
    /// Different (how), and the known bug explains it.
    Known(&'static Known, &'static str),
    /// Different, unexplained: the failure message.
    Disagree(String),
    /// The real allocator ran past its budget: no answer to compare.
    GaveUp,
}

/// The kinds of disagreement.
fn kind(selector: &Answer, real: &Answer) -> Option<&'static str> {
    match (selector, real) {
        (Answer::Fits(a), Answer::Fits(b)) => {
            (normalized(a) != normalized(b)).then_some("different allocations")
        }
        (_, Answer::GaveUp(_)) | (Answer::GaveUp(_), _) => None,
        (Answer::Fits(_), _) => Some("fits for the selector allocator only"),
        (_, Answer::Fits(_)) => Some("fits for the real allocator only"),
        (Answer::No, Answer::No) | (Answer::Refused(_), Answer::Refused(_)) => None,
        _ => Some("unschedulable against refused"),
    }
}

/// The allocations without their share ids, each config naming the
/// requests it applies to, sorted: upstream leaves them out where a config
/// applies to every request since kubernetes/kubernetes 03ab440c (after
/// v0.36.2), as the selector allocator does, and v0.36.2 names them all.
fn normalized(found: &[AllocationResult]) -> Vec<AllocationResult> {
    let mut found = found.to_vec();
    for allocation in &mut found {
        let Some(devices) = allocation.devices.as_mut() else {
            continue;
        };
        let mut requests: Vec<String> = Vec::new();
        for result in devices.results.iter_mut().flatten() {
            result.share_id = None;
            if !requests.contains(&result.request) {
                requests.push(result.request.clone());
            }
        }
        for config in devices.config.iter_mut().flatten() {
            let named = config.requests.get_or_insert_with(|| requests.clone());
            named.sort();
        }
    }
    found
}

/// Both allocations in full, where they differ beyond the devices.
fn in_full(selector: &Answer, real: &Answer) -> String {
    match (selector, real) {
        (Answer::Fits(a), Answer::Fits(b)) => format!(
            "\n  selector's allocations: {}\n  real's allocations:     {}",
            serde_json::to_string(&normalized(a)).unwrap_or_default(),
            serde_json::to_string(&normalized(b)).unwrap_or_default()
        ),
        _ => String::new(),
    }
}

/// An answer in a line.
pub fn brief(answer: &Answer) -> String {
    match answer {
        Answer::Fits(found) => {
            let claims = found.iter().map(|a| {
                let results = a.devices.iter().flat_map(|d| d.results.iter().flatten());
                let each = results.map(|r| format!("{}: {}", r.request, r.device));
                format!("[{}]", each.collect::<Vec<_>>().join(", "))
            });
            format!("fits {}", claims.collect::<Vec<_>>().join(" "))
        }
        Answer::No => "unschedulable".to_owned(),
        Answer::Refused(why) => format!("refused: {why}"),
        Answer::GaveUp(why) => format!("gave up: {why}"),
    }
}

/// Compares the answers; `selector_input` is the selector allocator's
/// problem as JSON, for the failure message.
pub fn compare(
    selector: &Answer,
    real: &Answer,
    question: &Question<'_>,
    selector_input: impl FnOnce() -> String,
) -> Verdict {
    if matches!(real, Answer::GaveUp(_)) {
        return Verdict::GaveUp;
    }
    let Some(kind) = kind(selector, real) else {
        return Verdict::Agree;
    };
    let mut tried = Vec::new();
    for known in KNOWN {
        let fixed = Real::ask_fixed(known.fix, question);
        let explained = self::kind(selector, &fixed).is_none();
        if explained && (known.applies)(question) {
            return Verdict::Known(known, kind);
        }
        let outside = if explained {
            format!(" (explains it, but outside its pattern: {})", known.pattern)
        } else {
            String::new()
        };
        tried.push(format!("  with {}: {}{outside}", known.fix, brief(&fixed)));
    }
    let real_input = serde_json::to_string(&input(question)).unwrap_or_default();
    Verdict::Disagree(format!(
        "the selector allocator and the real allocator disagree ({kind}):\n  selector: {}\n  \
         real:     {}{}\n{}\nreplay upstream's answer (tests/README.md, \"The real allocator\"): \
         allocator <<'EOF'\n{real_input}\nEOF\nthe selector allocator's input \
         (gpuslice_selector::allocate::Input): {}",
        brief(selector),
        brief(real),
        in_full(selector, real),
        tried.join("\n"),
        selector_input(),
    ))
}

/// What the real-allocator half saw over the whole test.
#[derive(Debug, Default)]
pub struct Tally {
    cases: u64,
    pods: u64,
    selector_fits: u64,
    real_fits: u64,
    agreed: u64,
    known: BTreeMap<(&'static str, &'static str), u64>,
    gave_up: u64,
    failed: u64,
}

impl Tally {
    /// A case begins.
    pub fn case(&mut self) {
        self.cases += 1;
    }

    /// One pod's answers and verdict.
    pub fn pod(&mut self, selector: &Answer, real: &Answer, verdict: &Verdict) {
        self.pods += 1;
        self.selector_fits += u64::from(selector.allocations().is_some());
        self.real_fits += u64::from(real.allocations().is_some());
        match verdict {
            Verdict::Agree => self.agreed += 1,
            Verdict::Known(known, kind) => *self.known.entry((kind, known.issue)).or_default() += 1,
            Verdict::Disagree(_) => self.failed += 1,
            Verdict::GaveUp => self.gave_up += 1,
        }
    }
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "real allocator: {} cases (proptest's shrinking runs included), {} pods asked; \
             fit for the selector allocator {}, for the real allocator {}; agreed {}; \
             the real allocator past its budget of {} allocateOne calls {}; unexplained \
             disagreements {}",
            self.cases,
            self.pods,
            self.selector_fits,
            self.real_fits,
            self.agreed,
            crate::real::BUDGET,
            self.gave_up,
            self.failed
        )?;
        for ((kind, issue), count) in &self.known {
            write!(f, "; {count} {kind}, explained by {issue}")?;
        }
        Ok(())
    }
}

/// The tally of this test process.
pub static TALLY: Mutex<Tally> = Mutex::new(Tally {
    cases: 0,
    pods: 0,
    selector_fits: 0,
    real_fits: 0,
    agreed: 0,
    known: BTreeMap::new(),
    gave_up: 0,
    failed: 0,
});
