//! A ComputeDomain of 4, 8 and 18 simulated GB200 nodes formed by N
//! concurrent prepares (a thread per node, as N kubelets would), measured
//! (bench/README.md, "compute domains"):
//!
//! - **settled Ready after the last prepare**: the last time the status
//!   turned Ready (N entries, all Ready) after which it stayed Ready over a
//!   window, minus the last prepare's return; and whether it ever went
//!   Ready then NotReady while forming (a flap);
//! - the API requests of the forming, per kind: status writes, 409s on the
//!   status (the target: at most 1 at 18 nodes), Leases, template creates;
//! - the API requests per node per minute **at rest**, over a quiet window,
//!   and the watches opened in it.
//!
//! Each node is a real gpusliced with its plugin's ComputeDomain side (the
//! conformance tests' `compute_domains_cluster`: the domain loop with its own
//! token, the channel driver's DRA core) against the conformance tests'
//! fake API server (`fake_compute_domains`: watches, server-side apply, the
//! packaged role and, where tests/tools/admission is built, Kubernetes'
//! own admission of every write). A fresh cluster per size; per round a
//! fresh domain (NVIDIA's nvbandwidth-test-job-1.yaml, `numNodes` set to N,
//! a new uid), torn down after it.
//!
//! `cargo bench -p gpuslice-dra-plugin --bench compute_domains --offline`;
//! `GPUSLICE_BENCH_ROUNDS` (default 3) rounds per size. Run by `cargo test`
//! (no `--bench` argument), it is a smoke run: 4 nodes, one round.

#[path = "../tests/admission/runner/mod.rs"]
#[allow(
    dead_code,
    unused_imports,
    reason = "the evaluator's runner; the fake API server uses part of it"
)]
mod admission;
#[path = "../../tests/e2e/binaries.rs"]
mod binaries;
#[path = "../tests/conformance/compute_domains_cluster.rs"]
#[allow(
    dead_code,
    reason = "the conformance tests' harness; the bench uses part of it"
)]
mod compute_domains_cluster;
#[path = "../tests/conformance/fake_compute_domains.rs"]
#[allow(dead_code, reason = "shared with the tests; the bench uses part of it")]
mod fake_compute_domains;
#[path = "../tests/conformance/fake_compute_domains_access.rs"]
mod fake_compute_domains_access;
#[path = "../tests/conformance/fake_compute_domains_apply.rs"]
mod fake_compute_domains_apply;
#[path = "../tests/conformance/fake_compute_domains_watch.rs"]
mod fake_compute_domains_watch;
#[path = "../tests/conformance/gpusliced.rs"]
#[allow(dead_code, reason = "shared with the tests; the bench uses part of it")]
mod gpusliced;
#[path = "../tests/conformance/http.rs"]
#[allow(dead_code, reason = "shared with the tests; the bench uses part of it")]
mod http;
#[path = "../tests/conformance/k8s_schema.rs"]
mod k8s_schema;
#[path = "../tests/conformance/peers.rs"]
#[allow(dead_code, reason = "shared with the tests; the bench uses part of it")]
mod peers;

/// What `k8s_schema` takes from the conformance test's `extended`.
mod extended {
    use std::path::PathBuf;

    /// The repository's root.
    pub fn repo() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
    }
}

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use compute_domains_cluster::{Cluster, addresses, flaps, nvidia_domain, ready_members};

/// A bound on each wait, not a timing.
const BOUND: Duration = Duration::from_secs(120);
/// The target: Ready within 5 s of the last prepare.
const TARGET: Duration = Duration::from_secs(5);

/// The figures of one run.
struct Windows {
    /// How long Ready must hold to count as settled.
    settle: Duration,
    /// The quiet window the requests at rest are counted over.
    rest: Duration,
}

/// The API server's counters, at one moment.
#[derive(Debug, Clone, Default)]
struct Counters {
    requests: BTreeMap<String, usize>,
    watches: BTreeMap<String, usize>,
    status_writes: usize,
    conflicts: usize,
    already_exists: usize,
}

impl Counters {
    fn now(cluster: &Cluster) -> Self {
        let s = cluster.api.state();
        Self {
            requests: s.requests.clone(),
            watches: s.watches.clone(),
            status_writes: s.status_writes,
            conflicts: s.conflicts,
            already_exists: s.already_exists,
        }
    }

    /// The nodes' compute-domains requests (and watches) since `before`.
    fn nodes_since(&self, before: &Self, count: usize) -> (usize, usize) {
        let of = |map: &BTreeMap<String, usize>, since: &BTreeMap<String, usize>| -> usize {
            (1..=count)
                .map(|n| format!("node-{n}"))
                .map(|n| map.get(&n).copied().unwrap_or(0) - since.get(&n).copied().unwrap_or(0))
                .sum()
        };
        (
            of(&self.requests, &before.requests),
            of(&self.watches, &before.watches),
        )
    }
}

/// What one round measured, in time since the domain was put in.
#[derive(Debug)]
struct Round {
    template_made: Duration,
    /// Per node: (prepare issued, prepare returned).
    prepares: Vec<(Duration, Duration)>,
    first_ready: Duration,
    settled: Duration,
    flapped: bool,
    status_writes: usize,
    conflicts: usize,
    already_exists: usize,
    /// The nodes' requests while forming (template, Leases, status).
    forming_requests: usize,
    /// The nodes' requests and watches over the quiet window.
    rest: (usize, usize),
}

impl Round {
    fn last_prepare(&self) -> Duration {
        self.prepares.iter().map(|p| p.1).max().unwrap_or_default()
    }

    fn settled_after_last(&self) -> f64 {
        self.settled.as_secs_f64() - self.last_prepare().as_secs_f64()
    }
}

/// When the status of `name` was Ready with `count` members for the first
/// time and the last time (the turn after which it held through `settle`),
/// and whether it went Ready then NotReady in between.
fn settle(
    cluster: &Cluster,
    name: &str,
    count: usize,
    since: Instant,
    window: Duration,
) -> (Duration, Duration, bool) {
    let key = ("default".to_owned(), name.to_owned());
    let ready = ready_members(count);
    assert!(
        cluster.api.wait_for(BOUND, |s| ready(&s.status(name))),
        "{name} not Ready with {count} members: {}",
        cluster.api.state().status(name)
    );
    // Held Ready, unchanged, through the window.
    loop {
        let seen = cluster.api.state().history[&key].len();
        let changed = cluster
            .api
            .wait_for(window, |s| s.history[&key].len() != seen);
        if !changed && ready(&cluster.api.state().status(name)) {
            break;
        }
        assert!(
            cluster.api.wait_for(BOUND, |s| ready(&s.status(name))),
            "{name} left Ready: {}",
            cluster.api.state().status(name)
        );
    }
    let state = cluster.api.state();
    // This round's statuses (an earlier round's domain had the same name).
    let history: Vec<(Instant, Value)> = (state.history[&key].iter())
        .filter(|(t, _)| *t >= since)
        .cloned()
        .collect();
    let first = history.iter().find(|(_, s)| ready(s)).map(|(t, _)| *t);
    let last = (history.iter().rev())
        .take_while(|(_, s)| ready(s))
        .last()
        .map(|(t, _)| *t);
    let at = |t: Option<Instant>| t.map_or(Duration::ZERO, |t| t.duration_since(since));
    (at(first), at(last), flaps(&history))
}

/// One round: a fresh domain of `count` nodes (uid `seq`), the template
/// awaited, every node's prepare at once, the status watched until it
/// settled Ready; the quiet window; then all of it torn down.
fn round(cluster: &Cluster, count: usize, seq: usize, windows: &Windows) -> Round {
    let mut domain = nvidia_domain("nvbandwidth-test-job-1.yaml");
    domain["spec"]["numNodes"] = json!(count);
    let name = domain["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let template = (domain["spec"]["channel"]["resourceClaimTemplate"]["name"].as_str())
        .expect("template")
        .to_owned();
    let claims: Vec<String> = (0..count)
        .map(|i| format!("c0000000-0000-4000-8000-{:012}", seq * 100 + i))
        .collect();
    let before = Counters::now(cluster);
    let start = Instant::now();
    cluster
        .api
        .mutate(|s| s.put_domain(domain, &format!("d0000000-0000-4000-8000-{seq:012}")));
    let key = ("default".to_owned(), template.clone());
    assert!(
        cluster
            .api
            .wait_for(BOUND, |s| s.templates().contains_key(&key)),
        "the plugins make the workload template"
    );
    let template_made = start.elapsed();
    let barrier = Barrier::new(count);
    let prepares: Vec<(Duration, Duration)> = std::thread::scope(|scope| {
        let kubelets: Vec<_> = (0..count)
            .map(|i| {
                let (barrier, claim, template) = (&barrier, &claims[i], &template);
                scope.spawn(move || {
                    barrier.wait();
                    let issued = start.elapsed();
                    if let Err(err) = cluster.prepare(i, claim, "default", template) {
                        panic!("node {}: prepare: {err}", i + 1);
                    }
                    (issued, start.elapsed())
                })
            })
            .collect();
        kubelets
            .into_iter()
            .map(|k| k.join().expect("prepared"))
            .collect()
    });
    let (first_ready, settled, flapped) = settle(cluster, &name, count, start, windows.settle);
    let formed = Counters::now(cluster);
    cluster.api.wait_for(windows.rest, |_| false);
    let rest = Counters::now(cluster).nodes_since(&formed, count);
    let one = Round {
        template_made,
        prepares,
        first_ready,
        settled,
        flapped,
        status_writes: formed.status_writes - before.status_writes,
        conflicts: formed.conflicts - before.conflicts,
        already_exists: formed.already_exists - before.already_exists,
        forming_requests: formed.nodes_since(&before, count).0,
        rest,
    };
    tear_down(cluster, &claims, &name);
    one
}

/// Every claim unprepared, the domain deleted; returns once its template,
/// its Leases and every node's IMEX daemon are gone.
fn tear_down(cluster: &Cluster, claims: &[String], name: &str) {
    for (i, claim) in claims.iter().enumerate() {
        cluster.unprepare(i, claim);
    }
    cluster.api.mutate(|s| s.delete_domain("default", name));
    assert!(
        cluster
            .api
            .wait_for(BOUND, |s| s.templates().is_empty() && s.leases().is_empty()),
        "the template and the Leases go with the domain"
    );
    for i in 0..claims.len() {
        cluster.wait_node(i, "its domain stops", |r| r.domains.is_empty());
    }
}

fn spread(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let median = values.get(values.len() / 2).copied().unwrap_or(f64::NAN);
    (
        values.first().copied().unwrap_or(f64::NAN),
        median,
        values.last().copied().unwrap_or(f64::NAN),
    )
}

/// A size: its cluster, `rounds` rounds, one line per round and the
/// summary line.
fn size(tools: &Path, count: usize, rounds: usize, windows: &Windows) {
    let admission = admission::available("compute_domains bench");
    let started = Instant::now();
    let cluster = Cluster::start(tools, &addresses("127.0.1", 1, count), admission);
    println!(
        "nodes={count}: {count} gpusliced started at once in {:.2}s; admission {}",
        started.elapsed().as_secs_f64(),
        if admission.is_some() {
            "evaluated"
        } else {
            "not built here"
        }
    );
    let measured: Vec<Round> = (0..rounds)
        .map(|r| {
            let one = round(&cluster, count, count * 1000 + r, windows);
            let (_, p50, pmax) = spread(
                &mut (one.prepares.iter())
                    .map(|(a, b)| b.as_secs_f64() - a.as_secs_f64())
                    .collect::<Vec<_>>(),
            );
            println!(
                "  round {}: template {:.2}s, last prepare {:.2}s (p50 {p50:.2}s max {pmax:.2}s), \
                 first Ready {:.2}s, settled Ready {:.2}s = {:.2}s after the last prepare{}; \
                 {} status writes, {} conflicts (409), {} creates that found it, {} requests \
                 by the nodes forming; at rest over {}s: {} requests, {} watches",
                r + 1,
                one.template_made.as_secs_f64(),
                one.last_prepare().as_secs_f64(),
                one.first_ready.as_secs_f64(),
                one.settled.as_secs_f64(),
                one.settled_after_last(),
                if one.flapped {
                    ", FLAPPED Ready -> NotReady"
                } else {
                    ""
                },
                one.status_writes,
                one.conflicts,
                one.already_exists,
                one.forming_requests,
                windows.rest.as_secs(),
                one.rest.0,
                one.rest.1,
            );
            one
        })
        .collect();
    drop(cluster);
    summary(count, &measured, windows);
}

fn summary(count: usize, measured: &[Round], windows: &Windows) {
    let (a_min, a_med, a_max) = spread(
        &mut measured
            .iter()
            .map(Round::settled_after_last)
            .collect::<Vec<_>>(),
    );
    let conflicts: usize = measured.iter().map(|r| r.conflicts).sum();
    let max_conflicts = measured.iter().map(|r| r.conflicts).max().unwrap_or(0);
    let writes: usize = measured.iter().map(|r| r.status_writes).sum();
    let forming: usize = measured.iter().map(|r| r.forming_requests).sum();
    let flaps = measured.iter().filter(|r| r.flapped).count();
    let rest: usize = measured.iter().map(|r| r.rest.0).sum();
    let rest_watches: usize = measured.iter().map(|r| r.rest.1).sum();
    let minutes = windows.rest.as_secs_f64() / 60.0 * measured.len() as f64;
    #[expect(clippy::cast_precision_loss, reason = "small counts")]
    let per_node_minute = rest as f64 / count as f64 / minutes;
    #[expect(clippy::cast_precision_loss, reason = "small counts")]
    let per_node_forming = forming as f64 / (count * measured.len()) as f64;
    println!(
        "nodes={count:<2} rounds={}  settled Ready after last prepare: median {a_med:.2}s (min \
         {a_min:.2}s, max {a_max:.2}s), over {}s: {}  flaps {flaps}  status writes {writes}, \
         conflicts {conflicts} (max {max_conflicts} a round)  requests per node forming \
         {per_node_forming:.1}  at rest per node per minute {per_node_minute:.2} (+{rest_watches} \
         watches opened)",
        measured.len(),
        TARGET.as_secs(),
        measured
            .iter()
            .filter(|r| r.settled_after_last() > TARGET.as_secs_f64())
            .count(),
    );
}

fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn main() -> ExitCode {
    // `cargo bench` passes --bench; `cargo test` does not.
    let benching = std::env::args().any(|a| a == "--bench");
    if !python3() {
        eprintln!(
            "compute_domains bench: python3 is required for the IMEX stand-ins (tests/tools)"
        );
        return if benching {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/tools");
    let rounds = if benching {
        std::env::var("GPUSLICE_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3)
    } else {
        1
    };
    let sizes: &[usize] = if benching { &[4, 8, 18] } else { &[4] };
    let windows = if benching {
        Windows {
            settle: Duration::from_secs(10),
            rest: Duration::from_secs(30),
        }
    } else {
        Windows {
            settle: Duration::from_secs(2),
            rest: Duration::from_secs(2),
        }
    };
    println!(
        "ComputeDomain formed by N concurrent prepares: {rounds} round(s) per size, cpus={}, \
         profile={}, target {}s after the last prepare, Ready held {}s to count as settled",
        std::thread::available_parallelism().map_or(0, usize::from),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        TARGET.as_secs(),
        windows.settle.as_secs(),
    );
    // The schemas the fake API server checks templates against, compiled
    // before anything is timed.
    let _ = k8s_schema::errors("ResourceClaimTemplate", &Value::Null);
    for &count in sizes {
        size(&tools, count, rounds, &windows);
    }
    ExitCode::SUCCESS
}
