//! The run: start the node, let the clients loose, look at the node every
//! `snapshot_every` while they run (concurrent checks) and every
//! `checkpoint_every` operations with them paused (exact checks), then have
//! every client unprepare what it still holds, check the node is empty, stop
//! gpusliced (it must exit 0, with no warning or error logged).
//!
//! Settings from the environment: `GPUSLICE_LOAD_SEED` (decimal or 0x-hex;
//! default: a fresh one, printed), `GPUSLICE_LOAD_OPS`, `GPUSLICE_LOAD_CLIENTS`
//! (default 64). A seed fixes each client's choices; the interleaving, and
//! so the daemon's answers, still vary from run to run.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use tokio::sync::{mpsc, watch};
use tonic::transport::Channel;

use super::chooser::Chooser;
use super::client::{Client, Sample};
use super::ledger::Ledger;
use super::node::{self, Catalogue};
use super::report::Report;
use super::workload::{Beliefs, OpKind};
use super::{looks, metrics};
use crate::cdi_schema::SchemaCheck;
use crate::harness::connect;
use crate::stand_ins::SharedDaemon;

/// How big a run is.
#[derive(Debug, Clone)]
pub struct Settings {
    pub seed: u64,
    pub ops: usize,
    pub clients: usize,
    pub checkpoint_every: usize,
    pub snapshot_every: Duration,
    /// A SIGHUP (reload: rescan, MIG set-up, spec repair) after every this
    /// many snapshots, while the load runs; 0: never.
    pub reload_every: usize,
    /// Where the node's folder goes (a temp dir when `None`).
    pub parent: Option<PathBuf>,
}

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    Some(parsed.unwrap_or_else(|e| panic!("{name}={text:?} is not a number: {e}")))
}

impl Settings {
    /// `ops` operations (unless the environment says otherwise), exact
    /// checks every `checkpoint_every`.
    pub fn from_env(ops: usize, checkpoint_every: usize) -> Self {
        let count = |name, default: usize| {
            env_number(name).map_or(default, |n| usize::try_from(n).expect("fits"))
        };
        Self {
            seed: env_number("GPUSLICE_LOAD_SEED").unwrap_or_else(|| fastrand::u64(..)),
            ops: count("GPUSLICE_LOAD_OPS", ops),
            clients: count("GPUSLICE_LOAD_CLIENTS", 64),
            checkpoint_every,
            snapshot_every: Duration::from_millis(100),
            reload_every: 10,
            parent: None,
        }
    }
}

/// A started node.
pub struct Node {
    pub daemon: SharedDaemon,
    pub catalogue: Catalogue,
    pub api: GpuSliceClient<Channel>,
    /// The metrics listener's `host:port`.
    pub metrics: String,
    pub schema: SchemaCheck,
}

/// What a run found.
#[derive(Debug)]
pub struct Run {
    pub report: Report,
    pub violations: Vec<String>,
}

/// Starts the node; `None` after a skip line when it cannot run here.
pub async fn start(test: &str, settings: &Settings, log: &str) -> Option<Node> {
    let daemon = node::start(test, settings.parent.as_deref(), log)?;
    let mut api = daemon.client().await;
    let inventory = api
        .get_inventory(pb::GetInventoryRequest {})
        .await
        .expect("inventory")
        .into_inner();
    let metrics = metrics::address(&daemon.ready_status).expect("the metrics listener's address");
    Some(Node {
        catalogue: Catalogue::from_inventory(&inventory),
        daemon,
        api,
        metrics,
        schema: SchemaCheck::new(),
    })
}

/// Start, load, stop.
pub async fn run(test: &str, settings: &Settings, log: &str) -> Option<Run> {
    let node = start(test, settings, log).await?;
    let mut run = load(&node, settings).await;
    run.violations.extend(finish(node));
    Some(run)
}

/// Violations, each message once with where it was first seen and how
/// often (a state that stays wrong shows in every later snapshot).
#[derive(Debug, Default)]
struct Findings {
    order: Vec<String>,
    seen: std::collections::HashMap<String, (String, usize)>,
}

impl Findings {
    fn add(&mut self, place: &str, found: impl IntoIterator<Item = String>) {
        for message in found {
            let entry = self.seen.entry(message.clone()).or_insert_with(|| {
                self.order.push(message);
                (place.to_owned(), 0)
            });
            entry.1 += 1;
        }
    }

    fn len(&self) -> usize {
        self.order.len()
    }

    fn into_lines(mut self) -> Vec<String> {
        self.order
            .drain(..)
            .map(|m| match self.seen.get(&m) {
                Some((place, 1)) => format!("{place}: {m}"),
                Some((place, n)) => format!("{place} (and {} more times): {m}", n - 1),
                None => m,
            })
            .collect()
    }
}

/// What every client shares.
struct Shared {
    node: Catalogue,
    socket: PathBuf,
    ledger: Ledger,
    beliefs: RwLock<Beliefs>,
    gate: tokio::sync::RwLock<()>,
    issued: AtomicUsize,
    stop: AtomicBool,
    settings: Settings,
}

/// The load and the checks; the node is empty again at the end.
pub async fn load(node: &Node, settings: &Settings) -> Run {
    println!(
        "load: seed {:#x} (set GPUSLICE_LOAD_SEED to reproduce), {} clients, {} operations",
        settings.seed, settings.clients, settings.ops
    );
    let shared = Arc::new(Shared {
        node: node.catalogue.clone(),
        socket: node.daemon.socket.clone(),
        ledger: Ledger::default(),
        beliefs: RwLock::new(Beliefs::default()),
        gate: tokio::sync::RwLock::new(()),
        issued: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        settings: settings.clone(),
    });
    let starts_before = mps_starts(node);
    let calls_before = metrics::scrape(&node.metrics)
        .await
        .map(|m| metrics::calls(&m));
    let mut report = Report {
        seed: settings.seed,
        clients: settings.clients,
        ..Report::default()
    };
    let mut violations = Findings::default();
    let (checkpoint_tx, mut checkpoint_rx) = mpsc::unbounded_channel();
    let (loaded_tx, mut loaded_rx) = mpsc::unbounded_channel();
    let (drain_tx, drain_rx) = watch::channel(false);
    let tasks: Vec<_> = (0..settings.clients)
        .map(|id| {
            let (shared, cp, loaded, drain) = (
                shared.clone(),
                checkpoint_tx.clone(),
                loaded_tx.clone(),
                drain_rx.clone(),
            );
            tokio::spawn(async move { client_task(&shared, id, &cp, &loaded, drain).await })
        })
        .collect();
    drop(loaded_tx);
    let started = Instant::now();
    let mut paused = Duration::ZERO;
    let mut ticker = tokio::time::interval(settings.snapshot_every);
    let mut finished = 0;
    while finished < settings.clients {
        tokio::select! {
            Some(at) = checkpoint_rx.recv() => {
                let t = Instant::now();
                let _quiet = shared.gate.write().await;
                let found = looks::checkpoint(node, &shared.ledger).await;
                violations.add(&format!("checkpoint after {at} ops"), found);
                report.checkpoints += 1;
                paused += t.elapsed();
            }
            _ = ticker.tick() => {
                let _pass = shared.gate.read().await;
                let t = Instant::now();
                let found = looks::snapshot(node, &shared.ledger, &shared.beliefs).await;
                report.snapshot_time += t.elapsed();
                let every = shared.settings.reload_every;
                if every > 0 && report.snapshots % every == every - 1 {
                    // The reload runs while the clients keep going.
                    let t = Instant::now();
                    tokio::task::block_in_place(|| node.daemon.reload());
                    report.reloads.push(t.elapsed());
                }
                violations.add(&format!("snapshot {}", report.snapshots), found);
                report.snapshots += 1;
            }
            Some(()) = loaded_rx.recv() => finished += 1,
        }
        if violations.len() > 100 {
            shared.stop.store(true, Ordering::Relaxed);
        }
    }
    report.load_time = started.elapsed().saturating_sub(paused);
    let drained = Instant::now();
    let _ = drain_tx.send(true);
    for task in tasks {
        let (load, drain, found) = task.await.expect("a load client panicked");
        report.load.extend(load);
        report.drain.extend(drain);
        violations.add("a client", found);
    }
    report.drain_time = drained.elapsed();
    report.mps_starts = mps_starts(node) - starts_before;
    let found = looks::checkpoint(node, &shared.ledger).await;
    violations.add("after the last unprepare", found);
    let calls_after = metrics::scrape(&node.metrics)
        .await
        .map(|m| metrics::calls(&m));
    violations.add("metrics", counted(&report, calls_before, calls_after));
    Run {
        report,
        violations: violations.into_lines(),
    }
}

/// The Prepare and Unprepare calls the metrics counted over the run must be
/// the clients' own.
fn counted(
    report: &Report,
    before: Result<(f64, f64), String>,
    after: Result<(f64, f64), String>,
) -> Vec<String> {
    let ((p0, u0), (p1, u1)) = match (before, after) {
        (Ok(b), Ok(a)) => (b, a),
        (Err(e), _) | (_, Err(e)) => return vec![e],
    };
    let (mut prepares, mut unprepares) = (0usize, report.drain.len());
    for s in &report.load {
        match s.kind {
            OpKind::Unprepare | OpKind::UnprepareUnknown => unprepares += 1,
            OpKind::RetryRace => prepares += 2,
            OpKind::UnprepareRace => {
                prepares += 1;
                unprepares += 1;
            }
            _ => prepares += 1,
        }
    }
    let (counted_p, counted_u) = (p1 - p0, u1 - u0);
    if (counted_p - prepares as f64).abs() > 0.5 || (counted_u - unprepares as f64).abs() > 0.5 {
        return vec![format!(
            "the histograms counted {counted_p} prepares and {counted_u} unprepares; the \
             clients made {prepares} and {unprepares}"
        )];
    }
    Vec::new()
}

/// MPS control daemons the stand-in started so far (its record).
fn mps_starts(node: &Node) -> usize {
    node.daemon
        .mps_lines()
        .iter()
        .filter(|l| l.starts_with("start "))
        .count()
}

/// One client: random operations until the run has issued them all, then
/// (when told) unprepares of whatever it still holds.
async fn client_task(
    shared: &Shared,
    id: usize,
    checkpoint: &mpsc::UnboundedSender<usize>,
    loaded: &mpsc::UnboundedSender<()>,
    mut drain: watch::Receiver<bool>,
) -> (Vec<Sample>, Vec<Sample>, Vec<String>) {
    let mut chooser = Chooser::new(shared.settings.seed, u32::try_from(id).expect("fits"));
    let mut client = Client {
        api: connect(&shared.socket).await,
        held: Vec::new(),
        ledger: &shared.ledger,
        violations: Vec::new(),
    };
    let (total, every) = (shared.settings.ops, shared.settings.checkpoint_every);
    let mut samples = Vec::new();
    while !shared.stop.load(Ordering::Relaxed) {
        let _pass = shared.gate.read().await;
        let i = shared.issued.fetch_add(1, Ordering::Relaxed);
        if i >= total {
            break;
        }
        if (i + 1).is_multiple_of(every) && i + 1 < total {
            let _ = checkpoint.send(i + 1);
        }
        let seen = shared
            .beliefs
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let op = chooser.choose(&shared.node, &seen, &client.held);
        samples.push(client.run(op).await);
    }
    let _ = loaded.send(());
    let _ = drain.wait_for(|go| *go).await;
    let mut drained = Vec::new();
    while !client.held.is_empty() {
        drained.push(client.unprepare(0, OpKind::Unprepare).await);
    }
    (samples, drained, client.violations)
}

/// Stops gpusliced (it must exit 0); every warning or error it logged is a
/// violation (none is expected: a refusal is the caller's news, not the
/// operator's).
pub fn finish(node: Node) -> Vec<String> {
    let log = node.daemon.log();
    let found: Vec<String> = log
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR "))
        .take(20)
        .map(|l| format!("gpusliced logged: {l}"))
        .collect();
    drop(node.daemon.stop());
    found
}
