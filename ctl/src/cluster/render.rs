//! What `gpuslicectl claims --cluster` prints (pure): the entries read
//! ([`super::usage`]) kept by `--idle D` and `--overshare`, as an aligned
//! table with a footer counting the entries skipped, or one JSON document
//! that lists them. Times are seen from `now`, given by the caller.

use gpuslice_quantity::show::cell;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::usage::{Entry, Reading, Why};
use crate::render::{doc, table};
use crate::units::span;

/// Which entries to keep. Both filters given: entries that pass both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filter {
    /// `--idle D`: only entries idle (Idle=True) for at least D seconds.
    pub idle: Option<u64>,
    /// `--overshare`: only entries above their memory share (OverShare=True).
    pub overshare: bool,
}

impl Filter {
    fn keeps(&self, entry: &Entry, now: Timestamp) -> bool {
        let idle = match self.idle {
            None => true,
            Some(min) => entry
                .idle_since
                .is_some_and(|since| seconds(since, now) >= i64::try_from(min).unwrap_or(i64::MAX)),
        };
        idle && (!self.overshare || entry.overshare_since.is_some())
    }

    /// What the kept entries are, for the line saying none is.
    fn describe(&self) -> String {
        let idle = self.idle.map(|d| {
            format!(
                "idle for {} or more",
                span(i64::try_from(d).unwrap_or(i64::MAX))
            )
        });
        let over = self.overshare.then(|| "above its memory share".to_owned());
        match (idle, over) {
            (Some(i), Some(o)) => format!("{i} and {o}"),
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => "reports its usage".to_owned(),
        }
    }
}

/// The table or JSON document of `reading`'s entries kept by `filter`.
pub fn render(
    reading: &Reading,
    driver: &str,
    filter: Filter,
    now: Timestamp,
    json: bool,
) -> String {
    let mut kept: Vec<&Entry> = reading
        .entries
        .iter()
        .filter(|e| filter.keeps(e, now))
        .collect();
    kept.sort_by(|a, b| {
        (&a.namespace, &a.name, &a.usage.node, &a.device, &a.share_id).cmp(&(
            &b.namespace,
            &b.name,
            &b.usage.node,
            &b.device,
            &b.share_id,
        ))
    });
    if json {
        return document(reading, driver, filter, now, &kept);
    }
    let mut out = if kept.is_empty() {
        format!(
            "no device of {driver} {} ({} devices in {} claims read)\n",
            filter.describe(),
            reading.entries.len(),
            reading.claims
        )
    } else {
        rows(&kept, filter, now)
    };
    out.push_str(&footer(reading, driver));
    out
}

fn rows(kept: &[&Entry], filter: Filter, now: Timestamp) -> String {
    let mut header = vec!["NAMESPACE/NAME", "NODE", "DEVICE", "SHARING", "IDLE FOR"];
    if filter.overshare {
        header.extend(["USED / SHARE", "OVER FOR"]);
    } else {
        header.push("MEMORY");
    }
    header.push("ADVICE");
    let rows: Vec<Vec<String>> = kept
        .iter()
        .map(|e| {
            let mut row = vec![
                format!("{}/{}", e.namespace, e.name),
                e.usage.node.clone(),
                e.device.clone(),
                e.usage.sharing.clone(),
                idle_for(e, now),
            ];
            if filter.overshare {
                let m = e.usage.memory;
                row.push(memory(m.used_bytes, m.share_bytes));
                row.push(
                    e.overshare_since
                        .map_or_else(|| "-".to_owned(), |s| span(seconds(s, now))),
                );
            } else {
                row.push(memory_of(e));
            }
            row.push(advice(e));
            row
        })
        .collect();
    table(&header, &rows)
}

/// IDLE FOR: how long idle, else what the Idle condition says.
fn idle_for(entry: &Entry, now: Timestamp) -> String {
    match (entry.idle_since, entry.idle_status.as_str()) {
        (Some(since), _) => span(seconds(since, now)),
        (None, "False") => "active".to_owned(),
        (None, "Unknown") => "not sampled".to_owned(),
        (None, _) => "-".to_owned(),
    }
}

/// MEMORY: used of the share on a shared device, else of the device.
fn memory_of(entry: &Entry) -> String {
    let m = entry.usage.memory;
    memory(m.used_bytes, m.share_bytes.or(m.total_bytes))
}

fn memory(used: Option<u64>, of: Option<u64>) -> String {
    match (used, of) {
        (Some(used), Some(of)) => format!("{} / {}", cell(used), cell(of)),
        (Some(used), None) => cell(used),
        (None, Some(of)) => format!("- / {}", cell(of)),
        (None, None) => "-".to_owned(),
    }
}

/// ADVICE: the advised form, in words.
fn advice(entry: &Entry) -> String {
    let Some(advice) = &entry.usage.advice else {
        return "-".to_owned();
    };
    match (advice.form.as_str(), &advice.mig_profile) {
        ("giveBack", _) => "give back".to_owned(),
        ("abstain", _) => "too early".to_owned(),
        ("mig", Some(profile)) => format!("mig {profile}"),
        (form, _) => form.to_owned(),
    }
}

fn footer(reading: &Reading, driver: &str) -> String {
    let (first, n) = match reading.skipped.as_slice() {
        [] => return String::new(),
        [one] => {
            return format!(
                "skipped 1 entry of {driver}: {} {}: {}\n",
                one.claim,
                one.device,
                why(&one.why)
            );
        }
        [first, ..] => (first, reading.skipped.len()),
    };
    let unknown = reading
        .skipped
        .iter()
        .filter(|s| matches!(s.why, Why::Unknown(_)))
        .count();
    format!(
        "skipped {n} entries of {driver}: {unknown} of an unknown data kind or version, {} \
         malformed (first: {} {}: {}; --output json lists them all)\n",
        n - unknown,
        first.claim,
        first.device,
        why(&first.why)
    )
}

fn why(why: &Why) -> String {
    match why {
        Why::Unknown(what) => format!("data is {what}, unknown to this gpuslicectl"),
        Why::Malformed(error) => format!("malformed data: {error}"),
    }
}

fn document(
    reading: &Reading,
    driver: &str,
    filter: Filter,
    now: Timestamp,
    kept: &[&Entry],
) -> String {
    let devices: Vec<Value> = kept
        .iter()
        .map(|e| {
            json!({ "namespace": e.namespace, "name": e.name, "node": e.usage.node,
                    "pool": e.pool, "device": e.device, "share_id": e.share_id,
                    "sharing": e.usage.sharing, "idle": (!e.idle_status.is_empty()).then_some(&e.idle_status),
                    "idle_since": e.idle_since.map(|t| t.to_string()),
                    "idle_seconds": e.idle_since.map(|t| seconds(t, now)),
                    "overshare_since": e.overshare_since.map(|t| t.to_string()),
                    "overshare_seconds": e.overshare_since.map(|t| seconds(t, now)),
                    "data": e.data })
        })
        .collect();
    let skipped: Vec<Value> = reading
        .skipped
        .iter()
        .map(|s| {
            let (kind, reason) = match &s.why {
                Why::Unknown(what) => ("unknown", what),
                Why::Malformed(error) => ("malformed", error),
            };
            json!({ "claim": s.claim, "device": s.device, "skipped": kind, "reason": reason })
        })
        .collect();
    doc(&json!({
        "driver": driver, "now": now.to_string(), "claims": reading.claims,
        "idle_at_least_seconds": filter.idle, "overshare": filter.overshare,
        "devices": devices, "skipped": skipped,
    }))
}

/// Whole seconds from `since` to `now` (0 when `since` is later).
fn seconds(since: Timestamp, now: Timestamp) -> i64 {
    (now.as_second() - since.as_second()).max(0)
}

#[cfg(test)]
#[path = "render_tests.rs"]
mod tests;
