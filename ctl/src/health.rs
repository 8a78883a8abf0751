//! `gpuslicectl health` and `gpuslicectl health clear DEVICE`: the unhealthy
//! devices with the claims on them, and an operator's clear.

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::json;

use crate::render::{doc, table};

/// Whether `health` lists an unhealthy device.
pub fn needs_attention(reply: &pb::GetHealthResponse) -> bool {
    !reply.unhealthy.is_empty()
}

/// `health`.
pub fn render(reply: &pb::GetHealthResponse, json: bool) -> String {
    if json {
        let unhealthy: Vec<_> = reply
            .unhealthy
            .iter()
            .map(|u| {
                json!({ "device": u.device, "gpu_uuid": u.gpu_uuid, "reason": u.reason,
                        "since": u.since, "claims": u.claims })
            })
            .collect();
        let unwatched: Vec<_> = (reply.unwatched.iter())
            .map(|u| json!({ "index": u.index, "reason": u.reason }))
            .collect();
        return doc(&json!({
            "watching": reply.watching, "not_watching_reason": reply.not_watching_reason,
            "unwatched": unwatched, "ignored_xids": reply.ignored_xids, "unhealthy": unhealthy,
        }));
    }
    let ignored: Vec<String> = reply.ignored_xids.iter().map(u64::to_string).collect();
    let mut out = if reply.watching {
        format!(
            "watching XID and ECC events (XIDs ignored: {})\n",
            ignored.join(", ")
        )
    } else {
        format!(
            "NOT watching health events: {}\n",
            reply.not_watching_reason
        )
    };
    for u in &reply.unwatched {
        out.push_str(&format!("GPU {} not watched: {}\n", u.index, u.reason));
    }
    if reply.unhealthy.is_empty() {
        out.push_str("every device is healthy\n");
        return out;
    }
    let rows: Vec<Vec<String>> = reply
        .unhealthy
        .iter()
        .map(|u| {
            let claims = if u.claims.is_empty() {
                "-".to_owned()
            } else {
                u.claims.join(",")
            };
            vec![u.device.clone(), claims, u.reason.clone()]
        })
        .collect();
    out.push_str(&table(&["DEVICE", "CLAIMS", "REASON"], &rows));
    out
}

/// `health clear DEVICE`.
pub fn cleared(device: &str, reply: &pb::ClearHealthResponse, json: bool) -> String {
    if json {
        return doc(&json!({ "device": device, "cleared": reply.cleared,
                            "still_unhealthy": reply.still_unhealthy }));
    }
    let mut out = match reply.cleared {
        0 => format!("{device}: no fault to clear\n"),
        n => format!("{device}: cleared {n} fault(s)\n"),
    };
    if !reply.still_unhealthy.is_empty() {
        out.push_str(&format!(
            "{device} is still unhealthy: {}\n",
            reply.still_unhealthy
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use gpuslice_proto::gpuslice::v1 as pb;

    use super::{cleared, needs_attention, render};

    fn reply() -> pb::GetHealthResponse {
        pb::GetHealthResponse {
            watching: true,
            ignored_xids: vec![13, 31],
            unhealthy: vec![pb::UnhealthyDevice {
                device: "gpu-0".into(),
                gpu_uuid: "GPU-a".into(),
                reason: "XID 79 (GPU has fallen off the bus) since 2025-06-01T12:00:00Z".into(),
                since: 1_748_779_200,
                claims: vec!["c1".into()],
            }],
            ..Default::default()
        }
    }

    #[test]
    fn table_names_the_device_its_claims_and_why() {
        let out = render(&reply(), false);
        assert!(
            out.starts_with("watching XID and ECC events (XIDs ignored: 13, 31)\n"),
            "{out}"
        );
        let row = out.lines().find(|l| l.starts_with("gpu-0")).unwrap();
        assert!(row.contains("c1") && row.contains("XID 79"), "{row}");
        let healthy = render(&pb::GetHealthResponse::default(), false);
        assert!(healthy.contains("NOT watching"), "{healthy}");
        assert!(healthy.contains("every device is healthy"), "{healthy}");
    }

    #[test]
    fn an_unhealthy_device_needs_attention_and_a_healthy_node_does_not() {
        assert!(needs_attention(&reply()));
        let quiet = pb::GetHealthResponse {
            watching: false,
            not_watching_reason: "no events".into(),
            ..Default::default()
        };
        assert!(!needs_attention(&quiet));
    }

    #[test]
    fn json_carries_every_field() {
        let doc: serde_json::Value = serde_json::from_str(&render(&reply(), true)).unwrap();
        assert_eq!(doc["watching"], true);
        assert_eq!(doc["unhealthy"][0]["device"], "gpu-0");
        assert_eq!(doc["unhealthy"][0]["since"], 1_748_779_200);
        assert_eq!(doc["unhealthy"][0]["claims"][0], "c1");
        assert_eq!(doc["ignored_xids"][1], 31);
    }

    #[test]
    fn clear_says_what_is_left() {
        let reply = pb::ClearHealthResponse {
            cleared: 0,
            still_unhealthy: "its GPU: XID 79".into(),
        };
        let out = cleared("gpu-0-mig-1g10gb-0", &reply, false);
        assert!(out.contains("no fault to clear"), "{out}");
        assert!(out.contains("still unhealthy: its GPU: XID 79"), "{out}");
    }
}
