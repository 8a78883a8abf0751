//! `gpuslicectl sharing`: one line per GPU (mode, compute mode, time-slice,
//! memory promised, claims), then one line per MPS daemon (pid, supervisor,
//! unit, state, restarts, pipe dir, claims), then problems.

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::{Value, json};

use super::render::{doc, gib, table};

/// Renders the reply as tables, or as one JSON document.
pub fn render(reply: &pb::GetSharingResponse, json: bool) -> String {
    if json {
        return doc(&json!({ "gpus": reply.gpus.iter().map(gpu_json).collect::<Vec<_>>() }));
    }
    let rows: Vec<Vec<String>> = reply.gpus.iter().map(gpu_row).collect();
    let mut out = table(
        &[
            "DEVICE",
            "MODE",
            "COMPUTE MODE",
            "TIME-SLICE",
            "MEMORY PROMISED",
            "CLAIMS",
        ],
        &rows,
    );
    let mut daemons: Vec<&pb::MpsDaemon> = Vec::new();
    for d in reply.gpus.iter().flat_map(|g| &g.mps_daemons) {
        if !daemons.iter().any(|seen| seen.pipe_dir == d.pipe_dir) {
            daemons.push(d);
        }
    }
    if !daemons.is_empty() {
        out.push('\n');
        let rows: Vec<Vec<String>> = daemons.iter().map(|d| daemon_row(d)).collect();
        out.push_str(&table(
            &[
                "MPS DAEMON",
                "PID",
                "SUPERVISOR",
                "UNIT",
                "STATE",
                "RESTARTS",
                "LIMITS",
                "PIPE DIR",
                "CLAIMS",
            ],
            &rows,
        ));
    }
    for g in &reply.gpus {
        for p in &g.problems {
            out.push_str(&format!("problem: {}: {p}\n", g.device));
        }
        if g.interval_state.starts_with("not supported") {
            out.push_str(&format!(
                "warning: {}: time-slice {} {}\n",
                g.device, g.interval, g.interval_state
            ));
        }
    }
    out
}

fn gpu_row(g: &pb::GpuSharing) -> Vec<String> {
    let slice = match (g.interval.is_empty(), g.interval_state.as_str()) {
        (true, _) => String::new(),
        (false, "") => g.interval.clone(),
        (false, state) if state.starts_with("not supported") => {
            format!("{} (not supported)", g.interval)
        }
        (false, state) => format!("{} ({state})", g.interval),
    };
    vec![
        g.device.clone(),
        g.mode.clone(),
        g.compute_mode.clone(),
        slice,
        format!("{} of {}", gib(g.memory_promised), gib(g.memory_total)),
        g.claims.join(", "),
    ]
}

fn daemon_row(d: &pb::MpsDaemon) -> Vec<String> {
    let mut limits: Vec<String> = Vec::new();
    if d.active_thread_percentage > 0 {
        limits.push(format!("threads {}%", d.active_thread_percentage));
    }
    for (uuid, bytes) in &d.pinned_memory_limits {
        limits.push(format!("{} pinned {}", short(uuid), gib(*bytes)));
    }
    vec![
        d.uuids
            .iter()
            .map(|u| short(u))
            .collect::<Vec<_>>()
            .join(","),
        if d.pid == 0 {
            "?".to_owned()
        } else {
            d.pid.to_string()
        },
        d.supervisor.clone(),
        if d.unit.is_empty() {
            "-".to_owned()
        } else {
            d.unit.clone()
        },
        d.state.clone(),
        d.restarts.to_string(),
        if limits.is_empty() {
            "none".to_owned()
        } else {
            limits.join(", ")
        },
        d.pipe_dir.clone(),
        d.claims.join(", "),
    ]
}

/// "GPU-8c0c4320…" for a UUID: enough to tell GPUs apart in a table.
fn short(uuid: &str) -> String {
    if uuid.chars().count() > 12 {
        format!("{}…", uuid.chars().take(12).collect::<String>())
    } else {
        uuid.to_owned()
    }
}

fn gpu_json(g: &pb::GpuSharing) -> Value {
    let daemons: Vec<Value> = g
        .mps_daemons
        .iter()
        .map(|d| {
            json!({ "uuids": d.uuids, "pid": d.pid, "supervisor": d.supervisor, "unit": d.unit,
                    "state": d.state, "restarts": d.restarts, "pipe_dir": d.pipe_dir,
                    "claims": d.claims, "active_thread_percentage": d.active_thread_percentage,
                    "pinned_memory_limits": d.pinned_memory_limits })
        })
        .collect();
    json!({ "device": g.device, "uuid": g.uuid, "mode": g.mode, "compute_mode": g.compute_mode,
            "interval": g.interval, "interval_state": g.interval_state,
            "mps_daemons": daemons, "claims": g.claims, "memory_total": g.memory_total,
            "memory_promised": g.memory_promised, "problems": g.problems })
}
