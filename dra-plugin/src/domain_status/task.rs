//! The loop: a round every [`EVERY`], sooner when woken (a channel was
//! prepared or unprepared), until told to stop. A round's problems are
//! logged when they differ from the last round's, so a lasting one is said
//! once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use super::round::{DomainApi, DomainNode, round};

/// How often a round runs when nothing wakes it: how soon a daemon's
/// readiness, a peer's or a lost Node reaches the status.
pub const EVERY: Duration = Duration::from_secs(1);

/// Runs rounds for `node` until `stop` turns true.
pub async fn run(
    api: impl DomainApi,
    gpusliced: impl DomainNode,
    node: String,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    let mut said: Vec<String> = Vec::new();
    loop {
        let report = round(&api, &gpusliced, &node).await;
        if report.problems != said {
            for problem in &report.problems {
                tracing::warn!(%problem, "ComputeDomain status");
            }
            said = report.problems;
        }
        if report.templates_made + report.statuses_written + report.templates_removed > 0 {
            tracing::info!(
                templates = report.templates_made,
                statuses = report.statuses_written,
                conflicts = report.conflicts,
                peers = report.peers_set,
                removed = report.templates_removed,
                "ComputeDomains kept"
            );
        }
        tokio::select! {
            () = tokio::time::sleep(EVERY) => {}
            () = wake.notified() => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
    }
}
