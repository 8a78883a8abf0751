//! How long a ComputeDomain of 4, 8 and 18 simulated GB200 nodes takes to
//! reach status Ready (every member listed and Ready) after the last pod's
//! prepare returns, the N prepares issued at once (a thread per node, as N
//! kubelets would); with each prepare's latency and the time from the
//! domain's creation to Ready (bench/README.md, "compute domains").
//!
//! Each node is a real gpusliced (the conformance harness's `Daemon`, on
//! `compute_domains::node_config`: `p6e-gb200.36xlarge`, the IMEX stand-ins
//! of tests/tools bound to 127.0.1.<n>) with its plugin's domain rounds
//! (`domain_status::task::run`, over a real kube client) against the fake
//! API server of the conformance tests (`fake_domains`). A fresh cluster per
//! size; per round a fresh domain (NVIDIA's nvbandwidth-test-job-1.yaml,
//! `numNodes` set to N, a new uid), torn down after it (every claim
//! unprepared, the domain deleted, its template and IMEX daemons gone).
//!
//! `cargo bench -p gpuslice-dra-plugin --bench compute_domains --offline`;
//! `GPUSLICE_BENCH_ROUNDS` (default 3) rounds per size. Run by `cargo test`
//! (no `--bench` argument), it is a smoke run: 4 nodes, one round.

#[path = "../../tests/e2e/binaries.rs"]
mod binaries;
#[path = "../tests/conformance/compute_domains.rs"]
#[expect(
    dead_code,
    unused_imports,
    reason = "the conformance test's harness; the bench uses its pieces"
)]
mod compute_domains;
#[path = "../tests/conformance/fake_domains.rs"]
mod fake_domains;
#[path = "../tests/conformance/gpusliced.rs"]
#[expect(dead_code, reason = "shared with the tests; the bench uses part of it")]
mod gpusliced;
#[path = "../tests/conformance/http.rs"]
mod http;
#[path = "../tests/conformance/k8s_schema.rs"]
mod k8s_schema;
#[path = "../tests/conformance/peers.rs"]
#[expect(dead_code, reason = "shared with the tests; the bench uses part of it")]
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

use gpuslice_dra_plugin::domain_status::task;
use serde_json::{Value, json};

use compute_domains::{Cluster, addresses, members, nvidia_domain, ready_members};
use fake_domains::FakeDomainsApi;

/// A bound on each wait, not a timing.
const BOUND: Duration = Duration::from_secs(120);
/// The target: Ready within 5 s of the last prepare.
const TARGET: Duration = Duration::from_secs(5);
/// NVIDIA's driver, kubernetes-sigs/dra-driver-nvidia-gpu#374: a domain's
/// start-up from serialized prepares.
const NVIDIA_374_S: f64 = 109.0;

/// What one round measured, in time since the domain was put in.
#[derive(Debug)]
struct Round {
    template_made: Duration,
    /// Per node: (prepare issued, prepare returned).
    prepares: Vec<(Duration, Duration)>,
    /// When each node's entry was first seen Ready, by node name.
    entry_ready: BTreeMap<String, Duration>,
    ready: Duration,
    conflicts: usize,
    writes: usize,
}

impl Round {
    fn last_prepare(&self) -> Duration {
        self.prepares.iter().map(|p| p.1).max().unwrap_or_default()
    }

    /// Ready after the last prepare returned, in seconds (negative would
    /// mean before).
    fn after_last(&self) -> f64 {
        self.ready.as_secs_f64() - self.last_prepare().as_secs_f64()
    }

    /// Per node: its entry Ready after its own prepare returned, seconds.
    fn entry_lags(&self) -> Vec<f64> {
        self.prepares
            .iter()
            .enumerate()
            .filter_map(|(i, (_, done))| {
                self.entry_ready
                    .get(&format!("node-{}", i + 1))
                    .map(|at| at.as_secs_f64() - done.as_secs_f64())
            })
            .collect()
    }
}

/// Watches the status of `name` until it is Ready with `count` members:
/// when each member's entry turned Ready, and when the domain did.
fn watch_status(
    api: &FakeDomainsApi,
    name: &str,
    count: usize,
    since: Instant,
) -> (BTreeMap<String, Duration>, Duration) {
    let ready = ready_members(count);
    let mut entries = BTreeMap::new();
    let mut last = Value::Null;
    loop {
        let changed = api.wait_for(BOUND, |s| s.status(name) != last);
        let status = api.state().status(name);
        let now = since.elapsed();
        assert!(changed, "{name} not Ready with {count} members: {status}");
        for (node, _, state) in members(&status) {
            if state == "Ready" {
                entries.entry(node).or_insert(now);
            }
        }
        if ready(&status) {
            return (entries, now);
        }
        last = status;
    }
}

/// One round: a fresh domain of `count` nodes (uid `seq`), the template
/// awaited, every node's prepare at once, the status watched until Ready;
/// then all of it torn down.
fn round(cluster: &Cluster, count: usize, seq: usize) -> Round {
    let mut domain = nvidia_domain("nvbandwidth-test-job-1.yaml");
    domain["spec"]["numNodes"] = json!(count);
    let name = domain["metadata"]["name"]
        .as_str()
        .expect("name")
        .to_owned();
    let template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
        .as_str()
        .expect("template")
        .to_owned();
    let claims: Vec<String> = (0..count)
        .map(|i| format!("c0000000-0000-4000-8000-{:012}", seq * 100 + i))
        .collect();
    let (conflicts, writes) = {
        let s = cluster.api.state();
        (s.conflicts, s.status_writes)
    };
    let start = Instant::now();
    cluster.api.mutate(|s| {
        s.put_domain(domain, &format!("d0000000-0000-4000-8000-{seq:012}"));
    });
    let key = ("default".to_owned(), template.clone());
    assert!(
        cluster
            .api
            .wait_for(BOUND, |s| s.templates.contains_key(&key)),
        "the plugins make the workload template"
    );
    let template_made = start.elapsed();
    let barrier = Barrier::new(count);
    let (entry_ready, ready, prepares) = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| watch_status(&cluster.api, &name, count, start));
        let kubelets: Vec<_> = (0..count)
            .map(|i| {
                let (barrier, claim, template) = (&barrier, &claims[i], &template);
                scope.spawn(move || {
                    barrier.wait();
                    let issued = start.elapsed();
                    if let Err(status) = cluster.prepare(i, claim, template) {
                        panic!("node {}: prepare: {status:?}", i + 1);
                    }
                    (issued, start.elapsed())
                })
            })
            .collect();
        let prepares: Vec<_> = kubelets
            .into_iter()
            .map(|k| k.join().expect("prepared"))
            .collect();
        let (entries, ready) = watcher.join().expect("Ready");
        (entries, ready, prepares)
    });
    let (conflicts, writes) = {
        let s = cluster.api.state();
        (s.conflicts - conflicts, s.status_writes - writes)
    };
    tear_down(cluster, &claims);
    Round {
        template_made,
        prepares,
        entry_ready,
        ready,
        conflicts,
        writes,
    }
}

/// Every claim unprepared, the domain deleted; returns once its template
/// and every node's IMEX daemon are gone.
fn tear_down(cluster: &Cluster, claims: &[String]) {
    for (i, claim) in claims.iter().enumerate() {
        cluster.unprepare(i, claim);
    }
    cluster.api.mutate(|s| s.domains.clear());
    assert!(
        cluster.api.wait_for(BOUND, |s| s.templates.is_empty()),
        "the template goes with its domain"
    );
    for i in 0..claims.len() {
        // Asked again on each change of the API server, at most every
        // 100 ms (a bounded wait, not a timing).
        let gone = (0..1200).any(|_| {
            cluster.domains(i).domains.is_empty() || {
                cluster.api.wait_for(BOUND / 1200, |_| false);
                false
            }
        });
        assert!(gone, "node {}: its domain stays", i + 1);
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

fn spread(values: &mut [f64]) -> (f64, f64, f64) {
    let m = median(values);
    (
        values.first().copied().unwrap_or(f64::NAN),
        m,
        values.last().copied().unwrap_or(f64::NAN),
    )
}

/// A size: its cluster, `rounds` rounds, one line per round and the
/// summary line.
fn size(tools: &Path, count: usize, rounds: usize) {
    let started = Instant::now();
    let cluster = Cluster::start(tools, &addresses("127.0.1", 1, count));
    println!(
        "nodes={count}: {count} gpusliced started at once in {:.2}s",
        started.elapsed().as_secs_f64()
    );
    let measured: Vec<Round> = (0..rounds)
        .map(|r| {
            let one = round(&cluster, count, count * 1000 + r);
            let (_, lag, lag_max) = spread(&mut one.entry_lags());
            let (_, p50, pmax) = spread(
                &mut one
                    .prepares
                    .iter()
                    .map(|(a, b)| b.as_secs_f64() - a.as_secs_f64())
                    .collect::<Vec<_>>(),
            );
            println!(
                "  round {}: template {:.2}s, last prepare {:.2}s (p50 {p50:.2}s max {pmax:.2}s), \
                 Ready {:.2}s = {:.2}s after the last prepare; entry Ready after own prepare \
                 p50 {lag:.2}s max {lag_max:.2}s; {} status writes, {} conflicts",
                r + 1,
                one.template_made.as_secs_f64(),
                one.last_prepare().as_secs_f64(),
                one.ready.as_secs_f64(),
                one.after_last(),
                one.writes,
                one.conflicts,
            );
            one
        })
        .collect();
    drop(cluster);
    summary(count, &measured);
}

fn summary(count: usize, measured: &[Round]) {
    let (a_min, a_med, a_max) =
        spread(&mut measured.iter().map(Round::after_last).collect::<Vec<_>>());
    let (p_min, p_med, p_max) = spread(
        &mut measured
            .iter()
            .flat_map(|r| {
                r.prepares
                    .iter()
                    .map(|(a, b)| b.as_secs_f64() - a.as_secs_f64())
            })
            .collect::<Vec<_>>(),
    );
    let (_, c_med, _) = spread(
        &mut measured
            .iter()
            .map(|r| r.ready.as_secs_f64())
            .collect::<Vec<_>>(),
    );
    let conflicts: usize = measured.iter().map(|r| r.conflicts).sum();
    let writes: usize = measured.iter().map(|r| r.writes).sum();
    let every = task::EVERY.as_secs_f64();
    println!(
        "nodes={count:<2} rounds={}  Ready after last prepare: median {a_med:.2}s (min {a_min:.2}s, \
         max {a_max:.2}s)  prepare min/median/max {:.0}/{:.0}/{:.0} ms  creation->Ready median \
         {c_med:.2}s  status writes {writes}, conflicts {conflicts}  median/target({}s) {:.2}x  \
         median/round({every}s) {:.2}x  NVIDIA #374: ~{NVIDIA_374_S:.0}s",
        measured.len(),
        p_min * 1000.0,
        p_med * 1000.0,
        p_max * 1000.0,
        TARGET.as_secs(),
        a_med / TARGET.as_secs_f64(),
        a_med / every,
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
    println!(
        "ComputeDomain Ready after N concurrent prepares: {rounds} round(s) per size, cpus={}, \
         profile={}, target {}s after the last prepare, round period {}s",
        std::thread::available_parallelism().map_or(0, usize::from),
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        TARGET.as_secs(),
        task::EVERY.as_secs_f64(),
    );
    // The schemas the fake API server checks templates against, compiled
    // before anything is timed.
    let _ = k8s_schema::errors("ResourceClaimTemplate", &json!({}));
    for &count in sizes {
        size(&tools, count, rounds);
    }
    ExitCode::SUCCESS
}
