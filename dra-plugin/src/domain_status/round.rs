//! One round of a node's plugin over every ComputeDomain: the template
//! made where missing, the node's turn at the status (written with its
//! resourceVersion; a conflict is read again and retried, at most
//! [`ATTEMPTS`] times), the peers told to gpusliced, the templates of gone
//! domains removed. What went wrong is reported per domain, never stops the
//! round.

use std::collections::{BTreeMap, BTreeSet};

use gpuslice_compute_domain::api::{ComputeDomain, ComputeDomainStatus};
use gpuslice_compute_domain::coordinate::{NodeView, next_status};
use gpuslice_compute_domain::membership::{self, DEFAULT_MAX_NODES_PER_CLIQUE};
use gpuslice_compute_domain::template::workload_template;
use k8s_openapi::api::resource::v1::ResourceClaimTemplate;

/// Status writes tried per domain and round.
pub const ATTEMPTS: usize = 5;

/// A refused or failed write of a domain's status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// Someone wrote first (409): read again.
    Conflict,
    /// Anything else.
    Failed(String),
}

/// The API server, as the round uses it.
pub trait DomainApi {
    /// Every ComputeDomain.
    fn domains(&self) -> impl Future<Output = Result<Vec<ComputeDomain>, String>> + Send;
    /// One ComputeDomain as stored now; `None` when it is gone.
    fn domain(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<ComputeDomain>, String>> + Send;
    /// Replaces `domain`'s status, if its resourceVersion is still the
    /// stored one.
    fn write_status(
        &self,
        domain: &ComputeDomain,
    ) -> impl Future<Output = Result<(), WriteError>> + Send;
    /// Creates `template`; `Ok(false)` when it exists already.
    fn create_template(
        &self,
        template: &ResourceClaimTemplate,
    ) -> impl Future<Output = Result<bool, String>> + Send;
    /// The (namespace, name, domain uid) of every template made for a
    /// domain.
    fn domain_templates(
        &self,
    ) -> impl Future<Output = Result<Vec<(String, String, String)>, String>> + Send;
    /// Clears the finalizers of a template and deletes it.
    fn remove_template(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<(), String>> + Send;
    /// The names of the cluster's Nodes.
    fn node_names(&self) -> impl Future<Output = Result<BTreeSet<String>, String>> + Send;
}

/// What gpusliced says of the node's domains.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeDomains {
    /// The node's clique; empty without a fabric.
    pub clique: String,
    /// The address its IMEX daemons bind.
    pub address: String,
    /// Per domain uid with a channel prepared here: (ready, peers now).
    pub domains: BTreeMap<String, (bool, Vec<String>)>,
}

/// gpusliced, as the round uses it.
pub trait DomainNode {
    /// `ListDomains`.
    fn domains(&self) -> impl Future<Output = Result<NodeDomains, String>> + Send;
    /// `SetDomainPeers`.
    fn set_peers(
        &self,
        domain: &str,
        peers: &[String],
    ) -> impl Future<Output = Result<(), String>> + Send;
}

/// What a round did, for the log and the tests.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct RoundReport {
    /// Templates made.
    pub templates_made: usize,
    /// Status writes that landed.
    pub statuses_written: usize,
    /// Conflicts met (each read again).
    pub conflicts: usize,
    /// Domains whose peers were told to gpusliced.
    pub peers_set: usize,
    /// Templates of gone domains removed.
    pub templates_removed: usize,
    /// What failed, one line each.
    pub problems: Vec<String>,
}

/// One round for node `node`.
pub async fn round(api: &impl DomainApi, gpusliced: &impl DomainNode, node: &str) -> RoundReport {
    let mut report = RoundReport::default();
    let here = match gpusliced.domains().await {
        Ok(here) => here,
        Err(err) => {
            report
                .problems
                .push(format!("gpusliced ListDomains: {err}"));
            return report;
        }
    };
    let domains = match api.domains().await {
        Ok(domains) => domains,
        Err(err) => {
            report.problems.push(format!("list ComputeDomains: {err}"));
            return report;
        }
    };
    let mut live = BTreeSet::new();
    for domain in domains {
        let Some(uid) = domain.metadata.uid.clone() else {
            continue;
        };
        live.insert(uid.clone());
        ensure_template(api, &domain, &mut report).await;
        let view = NodeView {
            node: node.to_owned(),
            ip_address: here.address.clone(),
            clique_id: here.clique.clone(),
            member: here.domains.contains_key(&uid),
            ready: here.domains.get(&uid).is_some_and(|(ready, _)| *ready),
        };
        let Some(status) = take_turn(api, domain, &view, &mut report).await else {
            continue;
        };
        if let Some((_, told)) = here.domains.get(&uid) {
            let peers = membership::peers(&status, node);
            if !peers.is_empty() && &peers != told {
                match gpusliced.set_peers(&uid, &peers).await {
                    Ok(()) => report.peers_set += 1,
                    Err(err) => report.problems.push(format!("SetDomainPeers {uid}: {err}")),
                }
            }
        }
    }
    remove_stale_templates(api, &live, &mut report).await;
    report
}

async fn ensure_template(api: &impl DomainApi, domain: &ComputeDomain, report: &mut RoundReport) {
    let name = domain.metadata.name.clone().unwrap_or_default();
    match workload_template(domain) {
        Ok(template) => match api.create_template(&template).await {
            Ok(true) => report.templates_made += 1,
            Ok(false) => {}
            Err(err) => report
                .problems
                .push(format!("ComputeDomain {name}: template: {err}")),
        },
        Err(err) => report.problems.push(format!("ComputeDomain {name}: {err}")),
    }
}

/// The node's turn at `domain`'s status, retried on conflicts; the status
/// as it stands after it (`None` when the domain is gone or failed).
async fn take_turn(
    api: &impl DomainApi,
    mut domain: ComputeDomain,
    view: &NodeView,
    report: &mut RoundReport,
) -> Option<ComputeDomainStatus> {
    let namespace = domain.metadata.namespace.clone().unwrap_or_default();
    let name = domain.metadata.name.clone().unwrap_or_default();
    let others = |d: &ComputeDomain| {
        d.status
            .as_ref()
            .is_some_and(|s| s.nodes.iter().any(|n| n.name != view.node))
    };
    for _ in 0..ATTEMPTS {
        // Only a member prunes lost nodes, and only when others are listed.
        let nodes = if view.member && others(&domain) {
            match api.node_names().await {
                Ok(nodes) => Some(nodes),
                Err(err) => {
                    report.problems.push(format!("list Nodes: {err}"));
                    None
                }
            }
        } else {
            None
        };
        let exists = |n: &str| nodes.as_ref().is_none_or(|set| set.contains(n));
        let next = match next_status(&domain, view, &exists, DEFAULT_MAX_NODES_PER_CLIQUE) {
            Ok(next) => next,
            Err(err) => {
                report.problems.push(format!("ComputeDomain {name}: {err}"));
                return None;
            }
        };
        let Some(status) = next else {
            return Some(domain.status.unwrap_or_default());
        };
        domain.status = Some(status.clone());
        match api.write_status(&domain).await {
            Ok(()) => {
                report.statuses_written += 1;
                return Some(status);
            }
            Err(WriteError::Conflict) => {
                report.conflicts += 1;
                match api.domain(&namespace, &name).await {
                    Ok(Some(fresh)) => domain = fresh,
                    Ok(None) => return None,
                    Err(err) => {
                        report.problems.push(format!("ComputeDomain {name}: {err}"));
                        return None;
                    }
                }
            }
            Err(WriteError::Failed(err)) => {
                report
                    .problems
                    .push(format!("ComputeDomain {name}: status: {err}"));
                return None;
            }
        }
    }
    report.problems.push(format!(
        "ComputeDomain {name}: status still conflicting after {ATTEMPTS} tries; next round"
    ));
    None
}

async fn remove_stale_templates(
    api: &impl DomainApi,
    live: &BTreeSet<String>,
    report: &mut RoundReport,
) {
    let templates = match api.domain_templates().await {
        Ok(templates) => templates,
        Err(err) => {
            report.problems.push(format!("list templates: {err}"));
            return;
        }
    };
    for (namespace, name, uid) in templates {
        if live.contains(&uid) {
            continue;
        }
        match api.remove_template(&namespace, &name).await {
            Ok(()) => report.templates_removed += 1,
            Err(err) => report
                .problems
                .push(format!("template {namespace}/{name}: {err}")),
        }
    }
}
