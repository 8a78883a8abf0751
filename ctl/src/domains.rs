//! `gpuslicectl domains`: the node's NVLink clique and the address its IMEX
//! daemons bind, then one line per ComputeDomain with a channel prepared on
//! the node (its IMEX daemon's state, pid, restarts, readiness, peers and
//! the channel claims).

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::json;

use super::render::{doc, table};

/// Renders the reply as a table, or as one JSON document.
pub fn render(reply: &pb::ListDomainsResponse, json: bool) -> String {
    if json {
        let domains: Vec<_> = reply
            .domains
            .iter()
            .map(|d| {
                json!({ "domain": d.domain, "claims": d.claims, "peers": d.peers,
                        "daemon_state": d.daemon_state, "pid": d.pid, "restarts": d.restarts,
                        "ready": d.ready, "not_ready": d.not_ready })
            })
            .collect();
        return doc(
            &json!({ "clique": reply.clique, "bind_address": reply.bind_address,
                            "domains": domains }),
        );
    }
    let or = |text: &str, none: &str| {
        if text.is_empty() {
            none.to_owned()
        } else {
            text.to_owned()
        }
    };
    let mut out = format!(
        "clique: {}\nbind address: {}\n",
        or(&reply.clique, "none (no multi-node NVLink fabric)"),
        or(&reply.bind_address, "all interfaces")
    );
    if reply.domains.is_empty() {
        out.push_str("no ComputeDomain has a channel prepared on this node\n");
        return out;
    }
    out.push('\n');
    let rows: Vec<Vec<String>> = reply
        .domains
        .iter()
        .map(|d| {
            vec![
                d.domain.clone(),
                d.daemon_state.clone(),
                if d.pid == 0 {
                    "-".to_owned()
                } else {
                    d.pid.to_string()
                },
                d.restarts.to_string(),
                if d.ready {
                    "yes".to_owned()
                } else {
                    format!("no: {}", d.not_ready)
                },
                d.peers.join(","),
                d.claims.join(","),
            ]
        })
        .collect();
    out.push_str(&table(
        &[
            "DOMAIN",
            "IMEX DAEMON",
            "PID",
            "RESTARTS",
            "READY",
            "PEERS",
            "CLAIMS",
        ],
        &rows,
    ));
    out
}
