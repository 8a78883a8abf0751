//! The looks at the node the run takes: concurrent snapshots (which also
//! refresh what the clients believe, and scrape the metrics) and exact
//! checkpoints with the clients paused. Each reads the ledger before and
//! after it looks (see [`super::ledger::Window`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

use gpuslice_proto::gpuslice::v1 as pb;

use super::concurrent::{self, Look};
use super::driver::Node;
use super::ledger::{Ledger, Life, Window};
use super::metrics;
use super::observe::{self, durable_names, read_json, spec_name};
use super::quiescent::{self, Extra};
use super::workload::{Beliefs, Plan, Sharing};
use crate::cdi_schema::assert_all_valid;
use crate::harness::list;

/// Looks at the node between two ledger snapshots.
pub async fn look(node: &Node, ledger: &Ledger) -> Result<(Window, Look), String> {
    let before = ledger.snapshot();
    let api = observe::api(&node.api).await?;
    let daemon = &node.daemon;
    let records_dir = daemon.state_dir.join("claims");
    let specs = durable_names(&daemon.cdi_dir);
    let records = durable_names(&records_dir);
    let prepared: Vec<&String> = before
        .iter()
        .filter(|(_, e)| e.life == Life::Prepared)
        .map(|(uid, _)| uid)
        .collect();
    let spec_of = prepared
        .iter()
        .map(|uid| {
            (
                (*uid).clone(),
                read_json(&daemon.cdi_dir.join(spec_name(uid))),
            )
        })
        .collect();
    let record_of = prepared
        .iter()
        .map(|uid| {
            (
                (*uid).clone(),
                read_json(&records_dir.join(format!("{uid}.json"))),
            )
        })
        .collect();
    let hardware = observe::hardware(&daemon.path().join("sim-hardware.json"))?;
    let processes = observe::mps_processes(&mps_dir(daemon.path()));
    let after = ledger.snapshot();
    let look = Look {
        api,
        specs,
        records,
        spec_of,
        record_of,
        hardware,
        processes,
    };
    Ok((Window { before, after }, look))
}

fn mps_dir(node_dir: &Path) -> PathBuf {
    node_dir.join("run/mps")
}

/// A concurrent look; refreshes what the clients believe.
pub async fn snapshot(node: &Node, ledger: &Ledger, beliefs: &RwLock<Beliefs>) -> Vec<String> {
    let (w, look) = match look(node, ledger).await {
        Ok(found) => found,
        Err(why) => return vec![why],
    };
    let mut seen = Beliefs::default();
    for d in &look.api.inventory.devices {
        if d.holders.is_empty() {
            seen.free.insert(d.name.clone());
        }
        if !d.available && node.catalogue.shareable().iter().any(|g| g.name == d.name) {
            seen.held_whole.insert(d.name.clone());
        }
    }
    for g in &look.api.sharing.gpus {
        seen.mode.insert(g.device.clone(), g.mode.clone());
    }
    *beliefs
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = seen;
    let mut found = concurrent::check(&look, &w, &node.catalogue, &node.schema);
    match metrics::scrape(&node.metrics).await {
        Ok(samples) => found.extend(metrics::unexpected_errors(&samples)),
        Err(why) => found.push(why),
    }
    found
}

/// An exact look with nothing in flight (the caller holds the gate).
pub async fn checkpoint(node: &Node, ledger: &Ledger) -> Vec<String> {
    let (w, look) = match look(node, ledger).await {
        Ok(found) => found,
        Err(why) => return vec![why],
    };
    let daemon = &node.daemon;
    let status = node
        .api
        .clone()
        .get_status(pb::GetStatusRequest {})
        .await
        .map(tonic::Response::into_inner);
    let status = match status {
        Ok(s) => s,
        Err(s) => return vec![format!("GetStatus failed: {s}")],
    };
    let mut all_files = list(&daemon.cdi_dir);
    all_files.extend(list(&daemon.state_dir.join("claims")));
    let extra = Extra {
        status,
        smi: daemon.smi_lines(),
        mps_folders: quiescent::folders(&mps_dir(daemon.path())),
        all_files,
    };
    let prepared: Vec<_> = w
        .after
        .values()
        .filter(|e| e.life == Life::Prepared)
        .collect();
    let mut found = quiescent::check(&look, &extra, &prepared, &node.catalogue);
    found.extend(concurrent::check(&look, &w, &node.catalogue, &node.schema));
    let plans: Vec<&Plan> = prepared.iter().map(|e| e.plan.as_ref()).collect();
    let daemons: BTreeSet<Vec<String>> = plans
        .iter()
        .filter(|p| matches!(p.sharing, Sharing::Mps { .. }))
        .map(|p| {
            let mut key = p.devices.clone();
            key.sort();
            key
        })
        .collect();
    match metrics::scrape(&node.metrics).await {
        Ok(samples) => {
            found.extend(metrics::gauges(
                &samples,
                &plans,
                daemons.len(),
                &node.catalogue,
            ));
            found.extend(metrics::unexpected_errors(&samples));
        }
        Err(why) => found.push(why),
    }
    if !look.specs.is_empty() {
        assert_all_valid(&daemon.cdi_dir);
    }
    found
}
