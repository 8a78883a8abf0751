//! `gpuslicectl claims --idle D` (the claims without GPU activity for at
//! least D) and the JSON document of a GetActivity reply (`top --output
//! json`). Pure.

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::{Value, json};

use crate::render::{doc, table};
use crate::top_render::NOT_SAMPLED;
use crate::units::{ago, span};

/// The claims idle for at least `min_idle` seconds, as a table or JSON. Idle
/// time is the daemon's (`idle_seconds`: since the last active sample, or
/// since the prepare when never active, or not sampled yet).
pub fn idle_claims(reply: &pb::GetActivityResponse, min_idle: u64, json: bool) -> String {
    let min = i64::try_from(min_idle).unwrap_or(i64::MAX);
    let idle: Vec<&pb::ClaimActivity> = reply
        .claims
        .iter()
        .filter(|c| c.idle_seconds >= min)
        .collect();
    if json {
        let claims: Vec<Value> = idle.iter().map(|c| claim_json(c)).collect();
        return doc(
            &json!({ "idle_at_least_seconds": min_idle, "now": reply.now,
                            "claims": claims }),
        );
    }
    if idle.is_empty() {
        return format!(
            "no claim has been idle for {} or more ({} prepared)\n",
            span(min),
            reply.claims.len()
        );
    }
    let rows: Vec<Vec<String>> = idle
        .iter()
        .map(|c| {
            let r = c.claim.clone().unwrap_or_default();
            let devices: Vec<&str> = c.devices.iter().map(|d| d.device.as_str()).collect();
            vec![
                r.uid,
                format!("{}/{}", r.namespace, r.name),
                c.kind.clone(),
                devices.join(","),
                span(c.idle_seconds),
                if c.not_sampled_yet {
                    NOT_SAMPLED.to_owned()
                } else {
                    ago(c.last_active, reply.now)
                },
            ]
        })
        .collect();
    table(
        &["UID", "CLAIM", "KIND", "DEVICES", "IDLE FOR", "LAST ACTIVE"],
        &rows,
    )
}

fn process_json(p: &pb::ProcessActivity) -> Value {
    json!({ "pid": p.pid, "name": p.name, "memory_used_bytes": p.memory_used_bytes,
            "sm_percent": p.sm_percent, "mps_client": p.mps_client })
}

fn device_json(d: &pb::DeviceActivity) -> Value {
    let processes: Vec<Value> = d.processes.iter().map(process_json).collect();
    json!({ "device": d.device, "gpu": d.gpu, "uuid": d.uuid, "sharing": d.sharing,
            "memory_used_bytes": d.memory_used_bytes,
            "memory_share_bytes": d.memory_share_bytes,
            "memory_total_bytes": d.memory_total_bytes,
            "device_memory_used_bytes": d.device_memory_used_bytes,
            "sm_percent": d.sm_percent, "processes": processes,
            "pool": d.pool, "share_id": d.share_id,
            "summary": d.summary.as_ref().map(summary_json),
            "last_action": d.last_action.as_ref().map(action_json) })
}

fn summary_json(s: &pb::DeviceUsageSummary) -> Value {
    json!({ "window_seconds": s.window_seconds, "memory_peak_bytes": s.memory_peak_bytes,
            "sm_mean_percent": s.sm_mean_percent, "sm_peak_percent": s.sm_peak_percent,
            "process_count": s.process_count, "idle_since": s.idle_since,
            "overshare_since": s.overshare_since, "active_since": s.active_since,
            "within_share_since": s.within_share_since })
}

fn action_json(a: &pb::LimitAction) -> Value {
    json!({ "kind": a.kind, "mode": a.mode, "outcome": a.outcome, "pid": a.pid,
            "comm": a.comm, "memory_used_bytes": a.memory_used_bytes,
            "over_for_s": a.over_for_s, "at_ms": a.at_ms })
}

fn claim_json(c: &pb::ClaimActivity) -> Value {
    let r = c.claim.clone().unwrap_or_default();
    let devices: Vec<Value> = c.devices.iter().map(device_json).collect();
    json!({ "uid": r.uid, "namespace": r.namespace, "name": r.name, "kind": c.kind,
            "prepared_at": c.prepared_at, "last_active": c.last_active,
            "idle_seconds": c.idle_seconds, "not_sampled_yet": c.not_sampled_yet,
            "devices": devices })
}

/// The whole reply as one JSON document.
pub fn activity_json(reply: &pb::GetActivityResponse) -> String {
    let claims: Vec<Value> = reply.claims.iter().map(claim_json).collect();
    let unclaimed: Vec<Value> = reply
        .unclaimed
        .iter()
        .map(|u| {
            let p = u.process.clone().unwrap_or_default();
            json!({ "gpu": u.gpu, "device": u.device, "process": process_json(&p),
                    "reason": u.reason })
        })
        .collect();
    let warnings: Vec<Value> = reply
        .warnings
        .iter()
        .map(|w| {
            json!({ "kind": w.kind, "since": w.since, "claim_uid": w.claim_uid,
                    "device": w.device, "pid": w.pid, "message": w.message })
        })
        .collect();
    let e = reply.episodes.unwrap_or_default();
    doc(&json!({
        "enabled": reply.enabled, "interval_ms": reply.interval_ms,
        "sampled_at_ms": reply.sampled_at_ms, "sample_cpu_us": reply.sample_cpu_us,
        "now": reply.now, "conditions_generation": reply.conditions_generation,
        "claims": claims, "unclaimed": unclaimed, "warnings": warnings,
        "episodes": { "overshare_mps": e.overshare_mps,
                      "overshare_timeslicing": e.overshare_timeslicing,
                      "unclaimed": e.unclaimed },
    }))
}

#[cfg(test)]
mod tests {
    use super::{activity_json, idle_claims, pb};
    use crate::fixture::{GIB, IDLE_UID, MPS_UID, reply};

    #[test]
    fn only_claims_idle_that_long_are_listed() {
        let all = idle_claims(&reply(), 0, false);
        assert!(all.contains(MPS_UID) && all.contains(IDLE_UID), "{all}");
        let hour = idle_claims(&reply(), 3_600, false);
        assert_eq!(
            hour,
            "UID                                   CLAIM            KIND       DEVICES  \
             IDLE FOR  LAST ACTIVE\n\
             00000000-0000-4000-8000-000000000002  team-b/notebook  exclusive  gpu-2    \
             2h        never\n"
        );
        let exact = idle_claims(&reply(), 12, false);
        assert!(
            exact.contains(MPS_UID),
            "idle for exactly the bound: {exact}"
        );
        assert!(!idle_claims(&reply(), 13, false).contains(MPS_UID));
        assert_eq!(
            idle_claims(&reply(), 86_400, false),
            "no claim has been idle for 1d or more (2 prepared)\n"
        );
    }

    #[test]
    fn a_claim_not_sampled_yet_says_so_in_the_table_and_the_json() {
        let mut fresh = reply();
        fresh.claims[1].not_sampled_yet = true;
        let table = idle_claims(&fresh, 3_600, false);
        assert!(
            table
                .lines()
                .nth(1)
                .unwrap()
                .ends_with("2h        not sampled yet"),
            "{table}"
        );
        let doc: serde_json::Value = serde_json::from_str(&activity_json(&fresh)).unwrap();
        assert_eq!(doc["claims"][0]["not_sampled_yet"], false);
        assert_eq!(doc["claims"][1]["not_sampled_yet"], true);
    }

    #[test]
    fn idle_claims_as_json() {
        let doc: serde_json::Value =
            serde_json::from_str(&idle_claims(&reply(), 60, true)).unwrap();
        assert_eq!(doc["idle_at_least_seconds"], 60);
        let claims = doc["claims"].as_array().unwrap();
        assert_eq!(claims.len(), 1);
        assert_eq!(claims[0]["uid"], IDLE_UID);
        assert_eq!(claims[0]["idle_seconds"], 7_200);
        assert!(claims[0]["last_active"].is_null());
    }

    #[test]
    fn the_activity_document_has_every_part() {
        let doc: serde_json::Value = serde_json::from_str(&activity_json(&reply())).unwrap();
        assert_eq!(doc["enabled"], true);
        assert_eq!(doc["interval_ms"], 5_000);
        let device = &doc["claims"][0]["devices"][0];
        assert_eq!(device["memory_used_bytes"], 6 * GIB);
        assert_eq!(device["memory_share_bytes"], 4 * GIB);
        assert_eq!(device["processes"][1]["pid"], 11);
        assert_eq!(doc["unclaimed"][0]["process"]["pid"], 77);
        assert_eq!(doc["warnings"][1]["kind"], "unclaimed");
        assert_eq!(doc["episodes"]["overshare_mps"], 1);
        assert_eq!(doc["conditions_generation"], 3);
        assert_eq!(device["pool"], "node-1");
        assert_eq!(device["share_id"], "");
        let summary = &device["summary"];
        assert_eq!(summary["window_seconds"], 300);
        assert_eq!(summary["memory_peak_bytes"], 7 * GIB);
        assert_eq!(
            (&summary["sm_mean_percent"], &summary["sm_peak_percent"]),
            (&serde_json::json!(25), &serde_json::json!(60))
        );
        assert_eq!(summary["process_count"], 2);
        assert!(summary["idle_since"].is_null());
        assert_eq!(summary["overshare_since"], crate::fixture::NOW - 60);
        let idle = &doc["claims"][1]["devices"][0]["summary"];
        assert_eq!(idle["idle_since"], crate::fixture::NOW - 7_200);
        assert!(idle["sm_mean_percent"].is_null(), "not sampled per process");
        assert!(device["last_action"].is_null());
    }

    #[test]
    fn idle_claims_json_carries_the_summary_and_a_device_without_one_says_null() {
        let mut r = reply();
        r.claims[1].devices[0].summary = None;
        let doc: serde_json::Value = serde_json::from_str(&idle_claims(&r, 60, true)).unwrap();
        assert!(doc["claims"][0]["devices"][0]["summary"].is_null());
        let doc: serde_json::Value =
            serde_json::from_str(&idle_claims(&reply(), 60, true)).unwrap();
        assert_eq!(
            doc["claims"][0]["devices"][0]["summary"]["idle_since"],
            crate::fixture::NOW - 7_200
        );
    }

    #[test]
    fn a_limits_action_shows_on_its_device() {
        let mut reply = reply();
        reply.claims[0].devices[0].last_action = Some(pb::LimitAction {
            kind: "overshare".into(),
            mode: "end".into(),
            outcome: "terminated".into(),
            pid: 11,
            comm: "python".into(),
            memory_used_bytes: 4 * GIB,
            over_for_s: 61,
            at_ms: 5,
        });
        let doc: serde_json::Value = serde_json::from_str(&activity_json(&reply)).unwrap();
        let action = &doc["claims"][0]["devices"][0]["last_action"];
        assert_eq!(action["outcome"], "terminated");
        assert_eq!(
            (action["pid"].as_u64(), action["over_for_s"].as_i64()),
            (Some(11), Some(61))
        );
        assert_eq!(action["memory_used_bytes"], 4 * GIB);
    }
}
