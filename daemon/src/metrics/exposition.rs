//! The two text formats, and which one a scraper gets. Pure.
//!
//! prometheus-client writes OpenMetrics 1.0: a counter family is named
//! without its `_total` suffix in `# HELP`/`# TYPE` while its samples carry
//! it, and the text ends with `# EOF`. The Prometheus text format 0.0.4 (what
//! node_exporter's textfile collector parses, and what `curl` gets) names
//! the family exactly as its samples: read as 0.0.4 unchanged, a counter's
//! `# TYPE gpuslice_errors counter` would describe a family with no samples
//! and `gpuslice_errors_total` would lose its type and help. [`to_prometheus`]
//! renames those families and drops the OpenMetrics-only `# EOF` and
//! `# UNIT` lines; every other line (gauges, histograms, label and value
//! syntax) is the same in both formats.

/// An exposition format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `application/openmetrics-text; version=1.0.0`.
    OpenMetrics,
    /// `text/plain; version=0.0.4`.
    Prometheus,
}

impl Format {
    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Self::Prometheus => "text/plain; version=0.0.4; charset=utf-8",
        }
    }

    /// The format for an `Accept` header: OpenMetrics when the client ranks
    /// it at least as high as plain text (Prometheus does), else 0.0.4 (no
    /// header, `*/*`, or `text/plain`, as curl and older scrapers send).
    pub fn negotiate(accept: Option<&str>) -> Self {
        let (mut openmetrics, mut text) = (0.0_f64, 0.0_f64);
        for range in accept.unwrap_or("").split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or("").to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|v| v.parse::<f64>().ok())
                .unwrap_or(1.0);
            match media.as_str() {
                "application/openmetrics-text" => openmetrics = openmetrics.max(q),
                "text/plain" | "text/*" | "*/*" => text = text.max(q),
                _ => {}
            }
        }
        if openmetrics > 0.0 && openmetrics >= text {
            Self::OpenMetrics
        } else {
            Self::Prometheus
        }
    }
}

/// OpenMetrics text (as prometheus-client writes it) → Prometheus 0.0.4.
pub fn to_prometheus(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|rest| rest.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|tag| {
            let rest = line.strip_prefix(tag)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(&name)
                .then(|| format!("{tag}{name}_total {tail}"))
        });
        match renamed {
            Some(line) => out.push_str(&line),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prometheus_asks_for_openmetrics_and_curl_gets_text() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                          version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::negotiate(Some(prometheus)), Format::OpenMetrics);
        assert_eq!(Format::negotiate(Some("*/*")), Format::Prometheus);
        assert_eq!(Format::negotiate(None), Format::Prometheus);
        assert_eq!(
            Format::negotiate(Some("text/plain;version=0.0.4")),
            Format::Prometheus
        );
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text;q=0.2, text/plain")),
            Format::Prometheus
        );
        assert_eq!(
            Format::negotiate(Some("application/openmetrics-text;q=0")),
            Format::Prometheus
        );
    }

    #[test]
    fn counters_are_renamed_and_openmetrics_markers_dropped() {
        let om = "# HELP a_errors Errors.\n# TYPE a_errors counter\na_errors_total{code=\"X\"} 2\n\
                  # HELP a_seconds Time.\n# TYPE a_seconds histogram\n# UNIT a_seconds seconds\n\
                  a_seconds_sum 0.5\n# HELP a_errors_by Gauge named like a counter.\n\
                  # TYPE a_errors_by gauge\na_errors_by 1\n# EOF\n";
        let text = to_prometheus(om);
        assert_eq!(
            text,
            "# HELP a_errors_total Errors.\n# TYPE a_errors_total counter\n\
             a_errors_total{code=\"X\"} 2\n# HELP a_seconds Time.\n# TYPE a_seconds histogram\n\
             a_seconds_sum 0.5\n# HELP a_errors_by Gauge named like a counter.\n\
             # TYPE a_errors_by gauge\na_errors_by 1\n"
        );
    }
}
