//! The Prometheus text parser node_exporter's textfile collector uses, as a
//! second reader of what gpusliced exports: `tests/tools/promcheck` built
//! offline in GOPATH mode against Debian's golang-github-prometheus-common-dev
//! (expfmt.TextParser) and golang-github-prometheus-client-golang-dev
//! (promlint, the checks of `promtool check metrics`), once per test run,
//! into the target dir.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::common::files::write_new;
use crate::tools::{built_once, go_build, run, which};

const GOPATH: &str = "/usr/share/gocode";
const LIBRARIES: [(&str, &str); 2] = [
    (
        "src/github.com/prometheus/common/expfmt",
        "golang-github-prometheus-common-dev",
    ),
    (
        "src/github.com/prometheus/client_golang/prometheus/testutil/promlint",
        "golang-github-prometheus-client-golang-dev",
    ),
];

/// The built checker, or why it cannot be built here.
pub fn checker() -> Result<&'static Path, &'static str> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built_once(&BUILT, build)
}

fn build() -> Result<PathBuf, String> {
    let go = which("go").ok_or("`go` is not installed (apt-get install golang-go)")?;
    for (dir, package) in LIBRARIES {
        if !Path::new(GOPATH).join(dir).is_dir() {
            return Err(format!(
                "{GOPATH}/{dir} is missing (apt-get install {package})"
            ));
        }
    }
    go_build(&go, "promcheck", GOPATH)
        .map_err(|e| format!("building the Prometheus text checker: {e}"))
}

/// The checker's verdict on `file`: Ok(the families as JSON) when the parser
/// reads it and promlint finds nothing, Err(its report) otherwise.
pub fn check(checker: &Path, file: &Path) -> Result<serde_json::Value, String> {
    let out = run(Command::new(checker).arg(file))?;
    serde_json::from_str(&out).map_err(|e| format!("promcheck printed no JSON ({e}): {out}"))
}

/// `text` read by the Go parser and linted by promlint: the families as
/// JSON, or None (a skip, said) where the checker is not installed; a
/// report of anything wrong fails the test.
pub fn check_text(test: &str, text: &str) -> Option<serde_json::Value> {
    let checker = match checker() {
        Ok(c) => c,
        Err(why) => {
            crate::tools::skip(test, why);
            return None;
        }
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("scrape.prom");
    write_new(&file, text);
    Some(check(checker, &file).unwrap_or_else(|report| panic!("{report}\n{text}")))
}

/// The value the Go parser read for `family` with exactly `labels`; for a
/// histogram, its sample count.
pub fn value(families: &serde_json::Value, family: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let fam = families.as_array()?.iter().find(|f| f["name"] == family)?;
    let metric = fam["metrics"].as_array()?.iter().find(|m| {
        let got = m["labels"].as_object();
        got.is_some_and(|got| {
            got.len() == labels.len()
                && labels
                    .iter()
                    .all(|(k, v)| got.get(*k).and_then(|x| x.as_str()) == Some(*v))
        })
    })?;
    metric["value"]
        .as_f64()
        .or_else(|| metric["count"].as_f64())
}

#[test]
fn the_prometheus_check_can_fail() {
    let checker = match checker() {
        Ok(c) => c,
        Err(why) => return crate::tools::skip("the_prometheus_check_can_fail", why),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        write_new(&path, text);
        path
    };
    let good = write(
        "good.prom",
        "# HELP a_errors_total Errors.\n# TYPE a_errors_total counter\na_errors_total{code=\"X\"} 2\n",
    );
    let families = check(checker, &good).expect("0.0.4 text parses");
    assert_eq!(
        value(&families, "a_errors_total", &[("code", "X")]),
        Some(2.0)
    );
    // OpenMetrics counter naming read as 0.0.4: an untyped family without help.
    let openmetrics = write(
        "om.prom",
        "# HELP a_errors Errors.\n# TYPE a_errors counter\na_errors_total{code=\"X\"} 2\n# EOF\n",
    );
    let report = check(checker, &openmetrics).expect_err("OpenMetrics naming is refused");
    assert!(
        report.contains("UNTYPED") && report.contains("no help text"),
        "{report}"
    );
    let stamped = write(
        "ts.prom",
        "# HELP a_x X.\n# TYPE a_x gauge\na_x 1 1700000000000\n",
    );
    let report = check(checker, &stamped).expect_err("timestamps are refused");
    assert!(report.contains("timestamps"), "{report}");
}
