//! `gpuslicectl match`'s report as text for people or one JSON document:
//! each target's selector table, and after a claim's last table its
//! verdict.

use std::fmt::Write as _;

use gpuslice_selector::allocate::Assigned;
use gpuslice_selector::{Hint, Outcome, Severity};

use crate::match_verdict::ClaimVerdict;

use crate::matching::{Checked, DeviceResult, Report, TargetReport};
use crate::render::table;

/// The report in the chosen format.
pub fn render(report: &Report, json: bool) -> String {
    if json {
        return crate::render::doc(&serde_json::to_value(report).unwrap_or_default());
    }
    let mut out = format!(
        "Devices as gpuslice-dra-plugin publishes them (driver {}).\n",
        report.driver
    );
    for skipped in &report.skipped {
        let _ = writeln!(out, "left out of the pool: {skipped}");
    }
    for (i, target) in report.targets.iter().enumerate() {
        out.push('\n');
        out.push_str(&render_target(target));
        let next = report.targets.get(i + 1).and_then(|t| t.claim);
        if let Some(verdict) = target
            .claim
            .filter(|c| next != Some(*c))
            .and_then(|c| report.claims.get(c))
        {
            out.push_str(&render_verdict(verdict));
        }
    }
    // A claim without requests has no table to follow.
    for (c, verdict) in report.claims.iter().enumerate() {
        if !report.targets.iter().any(|t| t.claim == Some(c)) {
            out.push_str(&render_verdict(verdict));
        }
    }
    out
}

fn render_verdict(verdict: &ClaimVerdict) -> String {
    let words = match verdict.verdict {
        "now" => format!("can be allocated now: {}", devices(&verdict.devices)),
        "empty_node_only" => {
            "cannot be allocated now, only on an empty node (other claims hold what it needs):"
                .to_owned()
        }
        "never" => "cannot be allocated on this node, not even when it is empty:".to_owned(),
        _ => "not judged".to_owned(),
    };
    let mut out = format!("\n{}: {words}\n", verdict.label);
    for shortfall in &verdict.shortfalls {
        let _ = writeln!(out, "  {}", shortfall.message);
    }
    for note in &verdict.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}

/// `request: device, device; request: device`.
fn devices(assigned: &[Assigned]) -> String {
    let mut by_request: Vec<(&str, Vec<&str>)> = Vec::new();
    for a in assigned {
        match by_request.last_mut() {
            Some((request, devices)) if *request == a.request => devices.push(&a.device),
            _ => by_request.push((&a.request, vec![&a.device])),
        }
    }
    by_request
        .iter()
        .map(|(request, devices)| format!("{request} {}", devices.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

fn render_target(target: &TargetReport) -> String {
    let mut out = format!("{}\n", target.target);
    for note in &target.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    for checked in &target.selectors {
        out.push_str(&render_selector(checked));
    }
    if target.selectors.iter().any(|s| s.invalid.is_some()) {
        out.push_str("  Not evaluated: Kubernetes would refuse this selector.\n");
        return out;
    }
    let rows: Vec<Vec<String>> = target.devices.iter().map(row).collect();
    for line in table(&["DEVICE", "RESULT", "WHY"], &rows).lines() {
        let _ = writeln!(out, "  {line}");
    }
    let matched = target
        .devices
        .iter()
        .filter(|d| d.outcome == Outcome::Match)
        .count();
    let errors = target
        .devices
        .iter()
        .filter(|d| matches!(d.outcome, Outcome::Error { .. }))
        .count();
    let _ = writeln!(
        out,
        "  {matched} of {} devices match.",
        target.devices.len()
    );
    for why in &target.why_no_slice {
        let _ = writeln!(out, "  no MIG slice: {why}");
    }
    if errors > 0 {
        let _ = writeln!(
            out,
            "  {errors} device(s) raised an evaluation error: the scheduler aborts the claim's allocation when a selector errors on a device it considers, so fix or guard the selector."
        );
    }
    out
}

fn render_selector(checked: &Checked) -> String {
    let mut out = format!(
        "  selector ({}): {}\n",
        checked.selector.origin, checked.selector.expression
    );
    if let Some(invalid) = &checked.invalid
        && checked.hints.is_empty()
    {
        let _ = writeln!(out, "    invalid: {}", invalid.replace('\n', "\n      "));
    }
    for hint in &checked.hints {
        out.push_str(&render_hint(hint));
    }
    out
}

fn render_hint(hint: &Hint) -> String {
    let label = match hint.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let mut out = format!("    {label}: {}\n", hint.problem);
    if let Some(suggestion) = &hint.suggestion {
        let _ = writeln!(out, "      write instead: {suggestion}");
    }
    out
}

fn row(device: &DeviceResult) -> Vec<String> {
    let (result, mut why) = match &device.outcome {
        Outcome::Match => ("match", String::new()),
        Outcome::NoMatch { clause, actual } => (
            "no match",
            match actual {
                Some(value) => format!("false: {clause}  (here {value})"),
                None => format!("false: {clause}"),
            },
        ),
        Outcome::Error {
            clause,
            message,
            hint,
        } => (
            "ERROR",
            match hint {
                Some(hint) => format!("{message} in: {clause}; {hint}"),
                None => format!("{message} in: {clause}"),
            },
        ),
    };
    if let Some(selector) = &device.selector {
        why = format!("[{selector}] {why}");
    }
    if !device.taints.is_empty() {
        why = format!(
            "{why} (tainted {}: skipped unless tolerated)",
            device.taints.join(", ")
        )
        .trim_start()
        .to_owned();
    }
    vec![device.device.clone(), result.to_owned(), why]
}
