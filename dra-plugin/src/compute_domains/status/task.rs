//! The node's loop: once the three caches have their first lists, a pass
//! ([`super::round`]) every [`EVERY`] (gpusliced's `ListDomains` over the
//! local socket, so a daemon's readiness reaches the status within a
//! second), at once when a cache changes or a channel was prepared or
//! unprepared ([`Keeper::wake`]), and when something a pass waits for is
//! due; until told to stop. A pass's problems are logged when they differ
//! from the last pass's, so a lasting one is said once; a template that is
//! not the domain's is an error.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use super::cache::Caches;
use super::kube_api::{DomainWrites, KubeDomains};
use super::lookup::Lookup;
use super::memory::Memory;
use super::node::{DomainNode, GpuslicedDomains};
use super::round::{Pass, Report};
use crate::gpusliced::GpuSlice;

/// How often gpusliced is asked when nothing wakes the loop.
pub const EVERY: Duration = Duration::from_secs(1);
/// The quiet after a cache event before the pass (a burst of events, one
/// pass).
const SETTLE: Duration = Duration::from_millis(10);

/// What the rest of the plugin holds of the loop.
#[derive(Debug, Clone)]
pub struct Keeper {
    /// Finds the domain a channel claim names.
    pub lookup: Lookup,
    /// Wakes the loop (a channel was prepared or unprepared).
    pub wake: Arc<Notify>,
}

/// What the loop runs with.
#[derive(Clone)]
pub struct Setup {
    /// The ComputeDomain identity's client.
    pub kube: kube::Client,
    /// gpusliced's client.
    pub gpusliced: GpuSlice,
    /// The Node.
    pub node: String,
    /// Where the membership Leases live.
    pub lease_namespace: String,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("node", &self.node)
            .field("lease_namespace", &self.lease_namespace)
            .finish_non_exhaustive()
    }
}

/// Starts the caches and the loop until `stop`.
pub fn start(setup: Setup, stop: &watch::Receiver<bool>) -> (Keeper, Vec<JoinHandle<()>>) {
    let (caches, mut tasks) = Caches::start(&setup.kube, &setup.lease_namespace, stop);
    let wake = Arc::new(Notify::new());
    let keeper = Keeper {
        lookup: Lookup::new(caches.clone(), setup.kube.clone()),
        wake: Arc::clone(&wake),
    };
    let writes = KubeDomains::new(setup.kube, &setup.node, &setup.lease_namespace);
    let gpusliced = GpuslicedDomains::new(setup.gpusliced);
    tasks.push(tokio::spawn(run(
        caches,
        writes,
        gpusliced,
        setup.node,
        wake,
        stop.clone(),
    )));
    (keeper, tasks)
}

/// Passes for `node` until `stop` turns true.
pub async fn run(
    caches: Caches,
    writes: impl DomainWrites + Send + Sync,
    gpusliced: impl DomainNode + Send + Sync,
    node: String,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    let mut memory = Memory::default();
    let mut said = (Vec::new(), Vec::new());
    loop {
        if caches.synced() {
            let here = gpusliced.domains().await;
            let snapshot = caches.snapshot();
            let mut pass = Pass {
                writes: &writes,
                gpusliced: &gpusliced,
                node: &node,
                memory: &mut memory,
                now: Instant::now(),
            };
            let report = pass.run(&snapshot, &here).await;
            say(&node, &report, &mut said);
            let next = report.wake.map_or(EVERY, |at| {
                at.saturating_duration_since(Instant::now()).min(EVERY)
            });
            if wait(&caches, &wake, &mut stop, next).await {
                return;
            }
        } else if wait(&caches, &wake, &mut stop, EVERY).await {
            return;
        }
    }
}

/// Waits for `pause`, a cache event or a wake; true when told to stop.
async fn wait(
    caches: &Caches,
    wake: &Notify,
    stop: &mut watch::Receiver<bool>,
    pause: Duration,
) -> bool {
    let changed = tokio::select! {
        () = tokio::time::sleep(pause) => false,
        () = caches.changed.notified() => true,
        () = wake.notified() => false,
        _ = stop.wait_for(|stop| *stop) => return true,
    };
    if changed {
        tokio::time::sleep(SETTLE).await;
    }
    *stop.borrow()
}

/// Logs what changed since the last pass.
fn say(node: &str, report: &Report, said: &mut (Vec<String>, Vec<String>)) {
    if report.problems != said.0 {
        for problem in &report.problems {
            tracing::warn!(%node, %problem, "ComputeDomain");
        }
        said.0.clone_from(&report.problems);
    }
    if report.refusals != said.1 {
        for refusal in &report.refusals {
            tracing::error!(%node, %refusal, "ComputeDomain template refused");
        }
        said.1.clone_from(&report.refusals);
    }
    let wrote = report.templates_made + report.statuses_written + report.leases_written;
    if wrote + report.members_told > 0 {
        tracing::info!(
            %node,
            templates = report.templates_made,
            statuses = report.statuses_written,
            leases = report.leases_written,
            members = report.members_told,
            "ComputeDomains kept"
        );
    }
}
