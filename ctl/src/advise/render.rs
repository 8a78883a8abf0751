//! `gpuslicectl advise`'s table and JSON document from a GetAdvice reply.
//! Pure.

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_quantity::show::cell;
use serde_json::{Value, json};

use crate::render::{doc, table};
use crate::units::span;

/// The advice in words for the ADVICE column: "mig 1g.10gb",
/// "mps 5.0 GiB 10%", "timeslice 1/4", "give back", "keep", "abstain".
pub fn form(a: &pb::Advice) -> String {
    match a.form() {
        pb::AdviceForm::Mig => format!("mig {}", a.mig_profile),
        pb::AdviceForm::Mps => format!("mps {} {}%", cell(a.memory_bytes), a.thread_percentage),
        pb::AdviceForm::Timeslicing => format!("timeslice 1/{}", a.timeslice_sharers),
        pb::AdviceForm::GiveBack => "give back".to_owned(),
        pb::AdviceForm::Keep => "keep".to_owned(),
        pb::AdviceForm::Abstain | pb::AdviceForm::Unspecified => "abstain".to_owned(),
    }
}

/// The table: one row per device of each claim, then the what-if line.
pub fn table_of(reply: &pb::GetAdviceResponse) -> String {
    if !reply.enabled {
        return "no advice: per-claim GPU use is not sampled ([activity] interval_s = 0)\n"
            .to_owned();
    }
    if reply.claims.is_empty() {
        return "no claim is prepared\n".to_owned();
    }
    let rows: Vec<Vec<String>> = reply
        .claims
        .iter()
        .flat_map(|c| {
            let r = c.claim.clone().unwrap_or_default();
            c.devices.iter().map(move |d| {
                let a = d.advice.clone().unwrap_or_default();
                vec![
                    format!("{}/{}", r.namespace, r.name),
                    d.device.clone(),
                    d.current.clone(),
                    span(i64::try_from(a.observed_seconds).unwrap_or(i64::MAX)),
                    a.memory_peak_bytes.map_or_else(|| "-".to_owned(), cell),
                    a.sm_p95_percent
                        .map_or_else(|| "-".to_owned(), |p| format!("{p}%")),
                    form(&a),
                    a.reason.clone(),
                ]
            })
        })
        .collect();
    let mut out = table(
        &[
            "CLAIM", "DEVICE", "NOW", "OBSERVED", "PEAK MEM", "SM p95", "ADVICE", "WHY",
        ],
        &rows,
    );
    if let Some(what_if) = &reply.what_if
        && !what_if.summary.is_empty()
    {
        out.push_str(&format!("\nwhat if: {}\n", what_if.summary));
    }
    out
}

/// The JSON document: the reply, field by field.
pub fn json_of(reply: &pb::GetAdviceResponse) -> String {
    let claims: Vec<Value> = reply
        .claims
        .iter()
        .map(|c| {
            let r = c.claim.clone().unwrap_or_default();
            let devices: Vec<Value> = c
                .devices
                .iter()
                .map(|d| {
                    let a = d.advice.clone().unwrap_or_default();
                    json!({
                        "device": d.device, "gpu": d.gpu, "current": d.current,
                        "advice": advice_json(&a),
                    })
                })
                .collect();
            json!({ "uid": r.uid, "namespace": r.namespace, "name": r.name,
                    "devices": devices })
        })
        .collect();
    let what_if = reply.what_if.as_ref().map(|w| {
        json!({ "gpus_freed": w.gpus_freed, "moves": w.moves,
                "mig_layouts": w.mig_layouts, "summary": w.summary })
    });
    doc(&json!({
        "enabled": reply.enabled,
        "now": reply.now,
        "min_observed_s": reply.min_observed_s,
        "headroom_percent": reply.headroom_percent,
        "claims": claims,
        "what_if": what_if,
    }))
}

fn advice_json(a: &pb::Advice) -> Value {
    let form = match a.form() {
        pb::AdviceForm::Mig => "mig",
        pb::AdviceForm::Mps => "mps",
        pb::AdviceForm::Timeslicing => "timeslicing",
        pb::AdviceForm::GiveBack => "give_back",
        pb::AdviceForm::Keep => "keep",
        pb::AdviceForm::Abstain | pb::AdviceForm::Unspecified => "abstain",
    };
    json!({
        "form": form,
        "mig_profile": a.mig_profile,
        "memory_bytes": a.memory_bytes,
        "thread_percentage": a.thread_percentage,
        "timeslice_sharers": a.timeslice_sharers,
        "observed_seconds": a.observed_seconds,
        "memory_peak_bytes": a.memory_peak_bytes,
        "sm_p95_percent": a.sm_p95_percent,
        "smallest_mig_fit": a.smallest_mig_fit,
        "device_class": a.device_class,
        "reason": a.reason,
    })
}
