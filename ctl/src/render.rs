//! Turning replies into aligned tables or JSON documents.

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::{Value, json};

/// Aligns `rows` under `header`, two spaces between columns.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let mut out = line(header.iter().map(|h| (*h).to_owned()).collect());
    for row in rows {
        out.push_str(&line(row.clone()));
    }
    out
}

pub fn doc(value: &Value) -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(value).unwrap_or_default()
    )
}

fn attr(device: &pb::Device, key: &str) -> String {
    use pb::attribute_value::Value as V;
    match device.attributes.get(key).and_then(|a| a.value.as_ref()) {
        Some(V::String(s) | V::Version(s)) => s.clone(),
        Some(V::Int(i)) => i.to_string(),
        Some(V::Bool(b)) => b.to_string(),
        None => String::new(),
    }
}

fn attr_json(value: &pb::AttributeValue) -> Value {
    use pb::attribute_value::Value as V;
    match &value.value {
        Some(V::String(s)) => json!({ "string": s }),
        Some(V::Version(s)) => json!({ "version": s }),
        Some(V::Int(i)) => json!({ "int": i }),
        Some(V::Bool(b)) => json!({ "bool": b }),
        None => Value::Null,
    }
}

/// An amount of the API (int64, never negative) as "6.0 GiB"
/// (gpuslice-quantity's one way to print it).
pub fn gib(bytes: i64) -> String {
    gpuslice_quantity::show::gib(u64::try_from(bytes).unwrap_or(0))
}

/// Whether `status` lists something to act on: a problem (unhealthy or
/// unreadable devices, missing driver files, MIG and sharing problems) or
/// an open warning (over-shares, unclaimed processes).
pub fn needs_attention(s: &pb::GetStatusResponse) -> bool {
    !s.problems.is_empty() || !s.warnings.is_empty()
}

/// `status`. The claim status line (and JSON key) only once a DRA plugin
/// has said it.
pub fn status(s: &pb::GetStatusResponse, json: bool) -> String {
    if json {
        let mut value = json!({
            "version": s.version, "backend": s.backend, "driver_version": s.driver_version,
            "cuda_driver_version": s.cuda_driver_version, "gpu_count": s.gpu_count,
            "claim_count": s.claim_count, "uptime_seconds": s.uptime_seconds,
            "boot_id": s.boot_id, "cdi_dir": s.cdi_dir, "state_dir": s.state_dir,
            "problems": s.problems, "warnings": s.warnings,
            "sim_processes_dir": s.sim_processes_dir,
            "mig_advertise": s.mig_advertise.as_ref().map(|m| json!({
                "form": advertise_form(m), "configured": m.configured, "reason": m.reason,
            })),
        });
        if let (Some(c), Some(map)) = (&s.claim_status, value.as_object_mut()) {
            let state = json!({ "access": claim_status_access(c), "reason": c.reason });
            map.insert("claim_status".to_owned(), state);
        }
        return doc(&value);
    }
    let rows = [
        ("version", s.version.clone()),
        ("backend", s.backend.clone()),
        (
            "driver",
            format!("{} (CUDA {})", s.driver_version, s.cuda_driver_version),
        ),
        ("gpus", s.gpu_count.to_string()),
        ("claims", s.claim_count.to_string()),
        ("uptime", format!("{}s", s.uptime_seconds)),
        ("cdi dir", s.cdi_dir.clone()),
        ("state dir", s.state_dir.clone()),
        (
            "mig advertise",
            s.mig_advertise.as_ref().map_or_else(
                || "unknown (gpusliced too old)".to_owned(),
                |m| format!("{} ({})", advertise_form(m), m.reason),
            ),
        ),
        (
            "health",
            if s.problems.is_empty() {
                "ok".to_owned()
            } else {
                format!("{} problem(s)", s.problems.len())
            },
        ),
    ];
    let mut out = table(
        &["FIELD", "VALUE"],
        &rows.map(|(k, v)| vec![k.to_owned(), v]),
    );
    if let Some(c) = &s.claim_status {
        out.push_str(&claim_status_line(c));
    }
    for p in &s.problems {
        out.push_str(&format!("problem: {p}\n"));
    }
    if s.warnings.is_empty() {
        out.push_str("warnings: none\n");
    }
    for w in &s.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// "layout" or "partitionable" (as the config spells them).
fn advertise_form(state: &pb::MigAdvertiseState) -> &'static str {
    match pb::MigAdvertise::try_from(state.form) {
        Ok(pb::MigAdvertise::Partitionable) => "partitionable",
        Ok(pb::MigAdvertise::Layout) => "layout",
        _ => "unknown",
    }
}

/// "written", "off" or "unknown" (not checked yet).
fn claim_status_access(state: &pb::ClaimStatusState) -> &'static str {
    match pb::ClaimStatusAccess::try_from(state.access) {
        Ok(pb::ClaimStatusAccess::Written) => "written",
        Ok(pb::ClaimStatusAccess::Off) => "off",
        Ok(pb::ClaimStatusAccess::Unknown) => "unknown",
        Ok(pb::ClaimStatusAccess::Unspecified) | Err(_) => "unspecified",
    }
}

/// `claim status: written`, `claim status: off: <reason>` or `claim status:
/// not checked yet`.
fn claim_status_line(state: &pb::ClaimStatusState) -> String {
    let said = match pb::ClaimStatusAccess::try_from(state.access) {
        Ok(pb::ClaimStatusAccess::Written) => "written".to_owned(),
        Ok(pb::ClaimStatusAccess::Off) => format!("off: {}", state.reason),
        Ok(pb::ClaimStatusAccess::Unknown) => "not checked yet".to_owned(),
        Ok(pb::ClaimStatusAccess::Unspecified) | Err(_) => {
            format!("unspecified ({})", state.access)
        }
    };
    format!("claim status: {said}\n")
}

/// `inventory`.
pub fn inventory(inv: &pb::GetInventoryResponse, json: bool) -> String {
    if json {
        return doc(&inventory_json(inv));
    }
    let rows: Vec<Vec<String>> = inv
        .devices
        .iter()
        .map(|d| {
            let kind = match attr(d, "profile") {
                p if p.is_empty() => attr(d, "type"),
                p => format!("mig {p}"),
            };
            let uuid = match attr(d, "parentUUID") {
                p if p.is_empty() => attr(d, "uuid"),
                p => format!("in {p}"),
            };
            let state = match (d.holders.is_empty(), d.available) {
                (false, _) => d.holders.join(","),
                (true, true) => "free".to_owned(),
                (true, false) if !d.healthy => "-".to_owned(),
                (true, false) => "blocked".to_owned(),
            };
            let health = if d.healthy { "ok" } else { "unhealthy" };
            vec![
                d.name.clone(),
                kind,
                attr(d, "productName"),
                gib(d.capacity.get("memory").copied().unwrap_or(0)),
                gib(d.memory_available),
                uuid,
                state,
                health.to_owned(),
            ]
        })
        .collect();
    let mut out = table(
        &[
            "DEVICE", "TYPE", "PRODUCT", "MEMORY", "FREE", "UUID", "HELD BY", "HEALTH",
        ],
        &rows,
    );
    for d in inv.devices.iter().filter(|d| !d.healthy) {
        out.push_str(&format!("unhealthy: {}: {}\n", d.name, d.health_reason));
    }
    out
}

/// `claims`.
pub fn claims(list: &pb::ListClaimsResponse, json: bool) -> String {
    if json {
        let claims: Vec<Value> = list
            .claims
            .iter()
            .map(|c| {
                let claim = c.claim.clone().unwrap_or_default();
                json!({ "uid": claim.uid, "namespace": claim.namespace, "name": claim.name,
                        "phase": c.phase, "cdi_spec_path": c.cdi_spec_path,
                        "prepared_at": c.prepared_at, "devices": devices_json(&c.devices),
                        "health_problems": c.health_problems })
            })
            .collect();
        return doc(&json!({ "claims": claims }));
    }
    let rows: Vec<Vec<String>> = list
        .claims
        .iter()
        .map(|c| {
            let claim = c.claim.clone().unwrap_or_default();
            let devices: Vec<&str> = c.devices.iter().map(|d| d.device.as_str()).collect();
            let mut sharing: Vec<&str> = c.devices.iter().map(|d| d.sharing.as_str()).collect();
            sharing.dedup();
            vec![
                claim.uid,
                format!("{}/{}", claim.namespace, claim.name),
                c.phase.clone(),
                devices.join(","),
                sharing.join("; "),
                if c.health_problems.is_empty() {
                    "ok".to_owned()
                } else {
                    format!("{} problem(s)", c.health_problems.len())
                },
            ]
        })
        .collect();
    let mut out = table(
        &["UID", "CLAIM", "PHASE", "DEVICES", "SHARING", "HEALTH"],
        &rows,
    );
    for c in &list.claims {
        let uid = c.claim.as_ref().map_or("", |r| r.uid.as_str());
        for p in &c.health_problems {
            out.push_str(&format!("problem: {uid}: {p}\n"));
        }
    }
    out
}

fn devices_json(devices: &[pb::PreparedDevice]) -> Vec<Value> {
    devices
        .iter()
        .map(|d| {
            json!({ "device": d.device, "cdi_device_ids": d.cdi_device_ids,
                    "sharing": d.sharing, "share_id": d.share_id })
        })
        .collect()
}

/// `prepare`.
pub fn prepared(uid: &str, reply: &pb::PrepareResponse, json: bool) -> String {
    if json {
        return doc(
            &json!({ "uid": uid, "already_prepared": reply.already_prepared,
                            "devices": devices_json(&reply.devices) }),
        );
    }
    let rows: Vec<Vec<String>> = reply
        .devices
        .iter()
        .flat_map(|d| {
            d.cdi_device_ids
                .iter()
                .map(|id| vec![d.device.clone(), id.clone(), d.sharing.clone()])
        })
        .collect();
    table(&["DEVICE", "CDI DEVICE", "SHARING"], &rows)
}

/// `unprepare`.
pub fn unprepared(uid: &str, reply: &pb::UnprepareResponse, json: bool) -> String {
    if json {
        return doc(&json!({ "uid": uid, "was_prepared": reply.was_prepared }));
    }
    if reply.was_prepared {
        format!("claim {uid} unprepared\n")
    } else {
        format!("claim {uid} was not prepared; nothing to do\n")
    }
}

/// The inventory as one JSON value (generation and devices).
pub fn inventory_json(inv: &pb::GetInventoryResponse) -> Value {
    let devices: Vec<Value> = inv
        .devices
        .iter()
        .map(|d| {
            let attrs: serde_json::Map<String, Value> = d
                .attributes
                .iter()
                .map(|(k, v)| (k.clone(), attr_json(v)))
                .collect();
            let mut device = json!({ "name": d.name, "attributes": attrs,
                        "capacity": d.capacity, "available": d.available,
                        "holders": d.holders, "healthy": d.healthy,
                        "health_reason": d.health_reason,
                        "memory_available": d.memory_available });
            if let (Some(f), Some(map)) = (&d.features, device.as_object_mut()) {
                map.insert(
                    "features".to_owned(),
                    json!({ "mig": f.mig, "mig_profiles": f.mig_profiles, "mps": f.mps,
                            "mps_limits": f.mps_limits,
                            "timeslice_settings": f.timeslice_settings,
                            "nvlink_links": f.nvlink_links, "clique": f.clique }),
                );
            }
            device
        })
        .collect();
    json!({ "generation": inv.generation, "devices": devices })
}

#[cfg(test)]
mod tests {
    use super::{needs_attention, status, table};
    use gpuslice_proto::gpuslice::v1 as pb;

    #[test]
    fn a_problem_or_a_warning_needs_attention() {
        assert!(!needs_attention(&pb::GetStatusResponse::default()));
        for (problems, warnings) in [
            (vec!["gpu-0 unhealthy".to_owned()], vec![]),
            (vec![], vec!["process 7".to_owned()]),
        ] {
            let reply = pb::GetStatusResponse {
                problems,
                warnings,
                ..Default::default()
            };
            assert!(needs_attention(&reply), "{reply:?}");
        }
    }

    #[test]
    fn status_has_a_line_per_open_warning_or_says_none() {
        let quiet = status(&pb::GetStatusResponse::default(), false);
        assert!(quiet.ends_with("warnings: none\n"), "{quiet}");
        let reply = pb::GetStatusResponse {
            warnings: vec![
                "claim a/b uses 6.0 GiB of its 4.0 GiB share".into(),
                "process 7".into(),
            ],
            ..Default::default()
        };
        let text = status(&reply, false);
        assert!(!text.contains("warnings: none"), "{text}");
        assert!(
            text.ends_with(
                "warning: claim a/b uses 6.0 GiB of its 4.0 GiB share\nwarning: process 7\n"
            ),
            "{text}"
        );
        let doc: serde_json::Value = serde_json::from_str(&status(&reply, true)).unwrap();
        assert_eq!(doc["warnings"][1], "process 7");
    }

    #[test]
    fn status_shows_the_claim_status_line_only_once_a_plugin_said_it() {
        let quiet = pb::GetStatusResponse::default();
        assert!(!status(&quiet, false).contains("claim status"));
        let doc: serde_json::Value = serde_json::from_str(&status(&quiet, true)).unwrap();
        assert!(doc.get("claim_status").is_none(), "{doc}");

        let said = |access: pb::ClaimStatusAccess, reason: &str| pb::GetStatusResponse {
            claim_status: Some(pb::ClaimStatusState {
                access: access.into(),
                reason: reason.to_owned(),
            }),
            ..Default::default()
        };
        let off = "[claim_status] mode = \"off\"";
        for (reply, line, access) in [
            (
                said(pb::ClaimStatusAccess::Written, ""),
                "claim status: written",
                "written",
            ),
            (
                said(pb::ClaimStatusAccess::Off, off),
                "claim status: off: [claim_status] mode = \"off\"",
                "off",
            ),
            (
                said(pb::ClaimStatusAccess::Unknown, ""),
                "claim status: not checked yet",
                "unknown",
            ),
        ] {
            let text = status(&reply, false);
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("claim status"))
                .collect();
            assert_eq!(lines, [line], "{text}");
            assert!(
                text.ends_with(&format!("{line}\nwarnings: none\n")),
                "{text}"
            );
            let doc: serde_json::Value = serde_json::from_str(&status(&reply, true)).unwrap();
            assert_eq!(doc["claim_status"]["access"], access, "{doc}");
            let reason = reply.claim_status.as_ref().map(|c| c.reason.as_str());
            assert_eq!(doc["claim_status"]["reason"].as_str(), reason, "{doc}");
        }
    }

    #[test]
    fn columns_are_aligned() {
        let out = table(
            &["A", "LONGER"],
            &[
                vec!["xxxx".into(), "y".into()],
                vec!["z".into(), "w".into()],
            ],
        );
        assert_eq!(out, "A     LONGER\nxxxx  y\nz     w\n");
    }
}
