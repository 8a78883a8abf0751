//! The text-format rules that matter to the parsers that read our output,
//! written down independently of the encoder: the Prometheus 0.0.4 rules
//! that Go's `expfmt.TextParser` (node_exporter's textfile collector)
//! enforces, plus the collector's own (no timestamps), and the OpenMetrics
//! 1.0 rules that differ (`# EOF`, counter family names). The e2e tests also
//! run the real Go parser (`tests/tools/promcheck`) on what the daemon writes.

use std::collections::{BTreeMap, BTreeSet};

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// One family's descriptor lines.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyInfo {
    pub name: String,
    pub kind: String,
    pub help: String,
}

fn is_name(s: &str, colon: bool) -> bool {
    let mut chars = s.chars();
    let ok_first = |c: char| c.is_ascii_alphabetic() || c == '_' || (colon && c == ':');
    chars.next().is_some_and(ok_first)
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':'))
}

/// Parses one sample line strictly; panics with the line on any violation.
fn sample(line: &str) -> Sample {
    let (head, value) = line
        .rsplit_once(' ')
        .unwrap_or_else(|| panic!("no value: {line:?}"));
    let value: f64 = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().unwrap_or_else(|_| panic!("bad value: {line:?}")),
    };
    let (name, labels) = match head.split_once('{') {
        Some((name, rest)) => (name, parse_labels(rest, line)),
        None => (head, BTreeMap::new()),
    };
    assert!(
        !name.contains(' '),
        "a timestamp or a space in the name (the textfile collector refuses timestamps): {line:?}"
    );
    assert!(is_name(name, true), "bad metric name: {line:?}");
    Sample {
        name: name.to_owned(),
        labels,
        value,
    }
}

fn parse_labels(rest: &str, line: &str) -> BTreeMap<String, String> {
    let body = rest
        .strip_suffix('}')
        .unwrap_or_else(|| panic!("labels not closed: {line:?}"));
    let mut labels = BTreeMap::new();
    let mut chars = body.chars().peekable();
    while chars.peek().is_some() {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        assert!(is_name(&key, false), "bad label name {key:?}: {line:?}");
        assert_eq!(chars.next(), Some('"'), "unquoted label value: {line:?}");
        let mut value = String::new();
        loop {
            match chars.next() {
                Some('\\') => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(c @ ('\\' | '"')) => value.push(c),
                    other => panic!("bad escape {other:?}: {line:?}"),
                },
                Some('"') => break,
                Some(c) => value.push(c),
                None => panic!("label value not closed: {line:?}"),
            }
        }
        assert!(
            labels.insert(key.clone(), value).is_none(),
            "label {key} twice: {line:?}"
        );
        match chars.next() {
            Some(',') | None => {}
            Some(c) => panic!("{c:?} after a label value: {line:?}"),
        }
    }
    labels
}

/// Every sample of a text in either format.
pub fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(sample)
        .collect()
}

/// The sample names a family of `kind` named `family` may have.
fn belongs(family: &str, kind: &str, name: &str) -> bool {
    match kind {
        "histogram" => ["_bucket", "_sum", "_count"]
            .iter()
            .any(|s| name.strip_suffix(s) == Some(family)),
        _ => name == family,
    }
}

/// Checks the Prometheus 0.0.4 rules; returns the families in order.
pub fn check_prometheus(text: &str) -> Vec<FamilyInfo> {
    assert!(
        text.ends_with('\n'),
        "the last line must end with a newline"
    );
    let mut families: Vec<FamilyInfo> = Vec::new();
    let mut help: Option<(String, String)> = None;
    let mut series = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name.to_owned(), text.to_owned()));
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "type {kind:?} is not 0.0.4: {line:?}"
            );
            assert!(
                families.iter().all(|f| f.name != name),
                "second TYPE for {name}"
            );
            let (help_name, help_text) = help.take().unwrap_or_default();
            assert_eq!(help_name, name, "HELP must precede TYPE of {name}");
            families.push(FamilyInfo {
                name: name.to_owned(),
                kind: kind.to_owned(),
                help: help_text,
            });
        } else if line.starts_with('#') {
            panic!("a comment the 0.0.4 output has no use for (OpenMetrics-only?): {line:?}");
        } else {
            let s = sample(line);
            let family = families
                .last()
                .unwrap_or_else(|| panic!("sample before any TYPE: {line:?}"));
            assert!(
                belongs(&family.name, &family.kind, &s.name),
                "{} does not belong to family {} ({}): a 0.0.4 parser files it under another, \
                 untyped family",
                s.name,
                family.name,
                family.kind
            );
            let key = format!("{}{:?}", s.name, s.labels);
            assert!(series.insert(key), "duplicate series: {line:?}");
        }
    }
    for family in families.iter().filter(|f| f.kind == "counter") {
        assert!(
            family.name.ends_with("_total"),
            "counter {} lacks _total",
            family.name
        );
    }
    check_histograms(text, &families);
    families
}

/// Buckets cumulative, `+Inf` present and equal to `_count`.
fn check_histograms(text: &str, families: &[FamilyInfo]) {
    let all = samples(text);
    for family in families.iter().filter(|f| f.kind == "histogram") {
        let bucket = format!("{}_bucket", family.name);
        let count = format!("{}_count", family.name);
        for c in all.iter().filter(|s| s.name == count) {
            let mut buckets: Vec<(f64, f64)> = all
                .iter()
                .filter(|s| s.name == bucket)
                .filter(|s| {
                    let mut l = s.labels.clone();
                    l.remove("le");
                    l == c.labels
                })
                .map(|s| {
                    let le = s.labels.get("le").expect("bucket without le");
                    let le = if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse().expect("numeric le")
                    };
                    (le, s.value)
                })
                .collect();
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert!(
                buckets.windows(2).all(|w| w[0].1 <= w[1].1),
                "{bucket}: not cumulative"
            );
            assert_eq!(
                buckets.last(),
                Some(&(f64::INFINITY, c.value)),
                "{bucket}: +Inf != count"
            );
        }
    }
}

/// Checks the OpenMetrics rules that differ from 0.0.4.
pub fn check_openmetrics(text: &str) {
    assert!(text.ends_with("\n# EOF\n"), "OpenMetrics ends with # EOF");
    assert_eq!(text.matches("# EOF").count(), 1);
    assert!(
        !text.lines().any(str::is_empty),
        "no blank lines in OpenMetrics"
    );
    for line in text.lines().filter_map(|l| l.strip_prefix("# TYPE ")) {
        let (name, kind) = line.split_once(' ').unwrap_or((line, ""));
        if kind == "counter" {
            assert!(
                !name.ends_with("_total"),
                "OpenMetrics counter family {name} keeps no _total"
            );
            assert!(
                text.contains(&format!("\n{name}_total")),
                "{name}: samples need _total"
            );
        }
    }
    let body: String = text
        .lines()
        .filter(|l| *l != "# EOF")
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(!samples(&body).is_empty());
}
