//! gpusliced's Prometheus metrics under load: the node runs the loopback
//! listener, every snapshot scrapes it, and the figures must agree with what
//! the clients saw. During the load: the scrape answers, and no RPC error
//! with a code the load never accepts is counted. With the clients paused:
//! the claims by kind and the running MPS daemons are exactly the prepared
//! claims' and their daemons. Over the whole run: the Prepare and Unprepare
//! histograms counted exactly the calls the clients made.

use std::collections::BTreeMap;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::node::Catalogue;
use super::workload::{Plan, Sharing};

/// Sample lines as `name{labels}` → value.
pub type Samples = BTreeMap<String, f64>;

/// `host:port` from the READY status ("...; metrics on http://ADDR/metrics").
pub fn address(ready_status: &str) -> Option<String> {
    let rest = ready_status.split("metrics on http://").nth(1)?;
    Some(rest.split("/metrics").next()?.to_owned())
}

/// GET /metrics (text format 0.0.4), parsed.
pub async fn scrape(addr: &str) -> Result<Samples, String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("metrics listener {addr}: {e}"))?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let mut raw = String::new();
    stream
        .write_all(request.as_bytes())
        .await
        .and(stream.read_to_string(&mut raw).await.map(drop))
        .map_err(|e| format!("metrics scrape: {e}"))?;
    let (head, body) = raw.split_once("\r\n\r\n").ok_or("no response head")?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(format!("metrics scrape answered {head:?}"));
    }
    Ok(body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect())
}

/// The sum of every series of `family` whose labels contain `with`.
pub fn sum(samples: &Samples, family: &str, with: &str) -> f64 {
    samples
        .iter()
        .filter(|(series, _)| {
            series
                .strip_prefix(family)
                .is_some_and(|rest| rest.starts_with('{'))
                && series.contains(with)
        })
        .map(|(_, v)| v)
        .sum()
}

/// Errors counted with a code no operation of the load may get.
pub fn unexpected_errors(samples: &Samples) -> Vec<String> {
    const EXPECTED: [&str; 3] = [
        "FAILED_PRECONDITION",
        "RESOURCE_EXHAUSTED",
        "INVALID_ARGUMENT",
    ];
    samples
        .iter()
        .filter(|(series, value)| {
            series.starts_with("gpuslice_errors_total{")
                && **value > 0.0
                && !EXPECTED
                    .iter()
                    .any(|c| series.contains(&format!("code=\"{c}\"")))
        })
        .map(|(series, value)| format!("metrics count {value} of {series}"))
        .collect()
}

/// The claim kind the metrics give `plan`: its sharing strategy if any,
/// else "mig" if it has a slice, else "exclusive".
fn kind(plan: &Plan, node: &Catalogue) -> &'static str {
    match plan.sharing {
        Sharing::Mps { .. } => "mps",
        Sharing::TimeSlicing(_) => "timeslicing",
        Sharing::Alone
            if plan
                .devices
                .iter()
                .any(|d| matches!(node.device(d), Some(super::node::Device::Slice(_)))) =>
        {
            "mig"
        }
        Sharing::Alone => "exclusive",
    }
}

/// Differences between the gauges and the prepared claims (with `daemons`
/// MPS daemons running), with the clients paused.
pub fn gauges(
    samples: &Samples,
    prepared: &[&Plan],
    daemons: usize,
    node: &Catalogue,
) -> Vec<String> {
    let mut out = Vec::new();
    for k in ["exclusive", "mig", "mps", "timeslicing"] {
        let want = prepared.iter().filter(|p| kind(p, node) == k).count();
        let seen = sum(samples, "gpuslice_claims", &format!("kind=\"{k}\""));
        if (seen - want as f64).abs() > 0.5 {
            out.push(format!(
                "metrics: gpuslice_claims{{kind=\"{k}\"}} is {seen}, {want} prepared"
            ));
        }
    }
    let running = sum(samples, "gpuslice_mps_daemons", "state=\"running\"");
    let all = sum(samples, "gpuslice_mps_daemons", "state=");
    if (running - daemons as f64).abs() > 0.5 || (all - running).abs() > 0.5 {
        out.push(format!(
            "metrics: {running} MPS daemons running and {} otherwise, {daemons} expected",
            all - running
        ));
    }
    out
}

/// Calls counted by the Prepare and Unprepare histograms.
pub fn calls(samples: &Samples) -> (f64, f64) {
    (
        sum(
            samples,
            "gpuslice_prepare_duration_seconds_count",
            "outcome=",
        ),
        sum(
            samples,
            "gpuslice_unprepare_duration_seconds_count",
            "outcome=",
        ),
    )
}
