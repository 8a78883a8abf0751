//! The words of the advice: durations, percents, and why the rule abstains
//! (sizes are gpuslice-quantity's `show::size`).
//! Pure.

use gpuslice_quantity::show::size;

use super::Need;
use crate::advice::history::DeviceHistory;

/// A duration as "45s", "20m", "3h" or "7d" (whole units, rounded down).
pub fn duration(s: u64) -> String {
    match s {
        0..120 => format!("{s}s"),
        120..7_200 => format!("{}m", s / 60),
        7_200..172_800 => format!("{}h", s / 3_600),
        _ => format!("{}d", s / 86_400),
    }
}

/// A percent as "11.5%".
pub fn percent(p: f64) -> String {
    let shown = format!("{p:.1}");
    format!("{}%", shown.strip_suffix(".0").unwrap_or(&shown))
}

/// Why too little was seen, if so.
pub(super) fn too_little(history: &DeviceHistory, min_observed_s: u64) -> Option<String> {
    if history.observed_s < min_observed_s {
        return Some(format!(
            "observed {} of the {} needed",
            duration(history.observed_s),
            duration(min_observed_s)
        ));
    }
    let span = u64::try_from(history.last.saturating_sub(history.first)).unwrap_or(0);
    if history.observed_s.saturating_mul(2) < span {
        return Some(format!(
            "sampled {} of the {} since first seen; needs at least half (the daemon was \
             stopped or sampling was off)",
            duration(history.observed_s),
            duration(span)
        ));
    }
    None
}

/// Why to give the device back.
pub(super) fn give_back(observed_s: u64) -> String {
    format!("never active in {} observed", duration(observed_s))
}

/// "peak 4.0 GiB (4.6 GiB with headroom) and SM p95 10% (11.5%)".
pub(super) fn fits(need: &Need) -> String {
    let memory = format!(
        "peak {} ({} with headroom)",
        size(need.peak),
        size(need.memory)
    );
    match (need.sm_p95, need.sm) {
        (Some(p95), Some(sm)) => format!(
            "{memory} and SM p95 {} ({})",
            percent(f64::from(p95)),
            percent(sm)
        ),
        _ => format!("{memory}, SM unknown"),
    }
}
