//! `gpuslicectl domains`: the node's NVLink clique, the address its IMEX
//! daemons bind and the rack network, then one line per ComputeDomain with
//! a channel prepared on the node (its IMEX daemon's state, pid, restarts,
//! readiness, members and whether it knows and reaches them, the channel
//! claims); `domains members` tells a domain's daemon its members by hand.

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::json;

use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use tonic::transport::Channel;

use super::DomainsAction;
use super::render::{doc, table};

/// `domains`, or `domains members`: asks gpusliced, renders its answer.
pub async fn run(
    client: &mut GpuSliceClient<Channel>,
    action: Option<&DomainsAction>,
    json: bool,
) -> anyhow::Result<String> {
    if let Some(DomainsAction::Members {
        domain,
        members: words,
        ..
    }) = action
    {
        let req = pb::SetDomainMembersRequest {
            domain: domain.clone(),
            members: members(words)?,
        };
        let reply = client.set_domain_members(req).await?.into_inner();
        return Ok(members_set(domain, &reply, json));
    }
    let reply = client
        .list_domains(pb::ListDomainsRequest {})
        .await?
        .into_inner();
    Ok(render(&reply, json))
}

/// Renders the reply as a table, or as one JSON document.
pub fn render(reply: &pb::ListDomainsResponse, json: bool) -> String {
    if json {
        let domains: Vec<_> = reply
            .domains
            .iter()
            .map(|d| {
                let members: Vec<_> = d
                    .members
                    .iter()
                    .map(|m| json!({ "index": m.index, "address": m.address }))
                    .collect();
                json!({ "domain": d.domain, "namespace": d.namespace, "name": d.name,
                        "claims": d.claims, "members": members,
                        "members_known": d.members_known, "connected": d.connected,
                        "not_connected": d.not_connected, "unit": d.unit,
                        "daemon_state": d.daemon_state, "pid": d.pid, "restarts": d.restarts,
                        "ready": d.ready, "not_ready": d.not_ready })
            })
            .collect();
        return doc(
            &json!({ "clique": reply.clique, "bind_address": reply.bind_address,
                     "rack_network": reply.rack_network, "domains": domains }),
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
        "clique: {}\nbind address: {}\nrack network: {}\n",
        or(&reply.clique, "none (no multi-node NVLink fabric)"),
        or(&reply.bind_address, "none set"),
        or(&reply.rack_network.join(", "), "none set")
    );
    if reply.domains.is_empty() {
        out.push_str("no ComputeDomain has a channel prepared on this node\n");
        return out;
    }
    out.push('\n');
    let rows: Vec<Vec<String>> = reply.domains.iter().map(row).collect();
    out.push_str(&table(
        &[
            "DOMAIN",
            "IMEX DAEMON",
            "PID",
            "RESTARTS",
            "READY",
            "MEMBERS",
            "CONNECTED",
            "CLAIMS",
        ],
        &rows,
    ));
    out
}

/// One domain's row.
fn row(d: &pb::DomainInfo) -> Vec<String> {
    let members: Vec<String> = d
        .members
        .iter()
        .map(|m| format!("{}={}", m.index, m.address))
        .collect();
    let connected = match (d.connected, d.members_known) {
        (true, _) => "yes".to_owned(),
        (false, false) => "not told yet".to_owned(),
        (false, true) => format!("no: {}", d.not_connected),
    };
    vec![
        format!("{}/{}", d.namespace, d.name),
        if d.unit.is_empty() {
            d.daemon_state.clone()
        } else {
            format!("{} ({})", d.daemon_state, d.unit)
        },
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
        if members.is_empty() {
            "none yet".to_owned()
        } else {
            members.join(",")
        },
        connected,
        d.claims.join(","),
    ]
}

/// `INDEX=ADDRESS` words as members.
pub fn members(words: &[String]) -> anyhow::Result<Vec<pb::DomainMember>> {
    words
        .iter()
        .map(|word| {
            let (index, address) = word.split_once('=').ok_or_else(|| {
                anyhow::anyhow!("{word:?}: write a member as INDEX=ADDRESS, e.g. 0=10.0.0.11")
            })?;
            let index = index.parse().map_err(|_| {
                anyhow::anyhow!("{word:?}: the index is a whole number from 0 to 17")
            })?;
            Ok(pb::DomainMember {
                index,
                address: address.to_owned(),
            })
        })
        .collect()
}

/// What `domains members` answers.
pub fn members_set(domain: &str, reply: &pb::SetDomainMembersResponse, json: bool) -> String {
    if json {
        return doc(
            &json!({ "domain": domain, "changed": reply.changed, "skipped": reply.skipped }),
        );
    }
    let mut out = if reply.changed {
        format!("ComputeDomain {domain}: members changed; its IMEX daemon is told (SIGUSR1)\n")
    } else {
        format!("ComputeDomain {domain}: members unchanged\n")
    };
    for skipped in &reply.skipped {
        out.push_str(&format!("skipped {skipped}\n"));
    }
    out
}
