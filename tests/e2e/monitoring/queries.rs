//! The PromQL the shipped monitoring runs, read from the files a user
//! installs: every target of the Grafana dashboard and the queries of its
//! variables, every alert of the PrometheusRule, and the `promql` examples
//! of docs/monitoring.md.

use serde_json::{Value, json};

use crate::tools::repo_root;

/// One query and where it comes from.
#[derive(Debug)]
pub struct Query {
    /// The panel's title, the variable's name or the alert's name.
    pub source: String,
    /// PromQL as Prometheus gets it.
    pub expr: String,
}

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(repo_root().join(path)).expect("read a shipped file");
    serde_norway::from_str(&text).expect("YAML")
}

/// The dashboard's JSON from its ConfigMap.
fn dashboard() -> Value {
    let map = yaml("packaging/monitoring/dashboard-configmap.yaml");
    let data = map["data"].as_object().expect("the ConfigMap's data");
    assert_eq!(data.len(), 1, "one dashboard");
    let json = data.values().next().and_then(Value::as_str).expect("JSON");
    serde_json::from_str(json).expect("the dashboard is JSON")
}

/// Each `$variable` of `expr` set to its "All" value (`allValue`), as
/// Grafana sends it when the selector says All.
fn with_all(expr: &str, variables: &[(String, String)]) -> String {
    variables.iter().fold(expr.to_owned(), |e, (name, all)| {
        e.replace(&format!("${name}"), all)
    })
}

/// Every dashboard query, variables set to All. A variable's
/// `label_values(EXPR, LABEL)` becomes `group by (LABEL) (EXPR)`, the
/// values Grafana lists. A stat panel's ` or vector(0)` (so it shows 0, not
/// "No data") is left off: the query must find what it counts.
pub fn dashboard_queries() -> Vec<Query> {
    let board = dashboard();
    let templating = board["templating"]["list"].as_array().expect("variables");
    let variables: Vec<(String, String)> = templating
        .iter()
        .filter(|v| v["type"] == "query")
        .map(|v| {
            let name = v["name"].as_str().expect("a name").to_owned();
            let all = v["allValue"].as_str().expect("an allValue").to_owned();
            (name, all)
        })
        .collect();
    let mut queries: Vec<Query> = templating
        .iter()
        .filter(|v| v["type"] == "query")
        .map(|v| {
            let text = v["query"]["query"].as_str().expect("a variable query");
            let inner = text
                .strip_prefix("label_values(")
                .and_then(|t| t.strip_suffix(')'))
                .expect("label_values(EXPR, LABEL)");
            let (expr, label) = inner.rsplit_once(',').expect("EXPR, LABEL");
            Query {
                source: format!("variable {}", v["name"]),
                expr: with_all(&format!("group by ({}) ({expr})", label.trim()), &variables),
            }
        })
        .collect();
    for panel in board["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("an expr");
            let expr = expr.strip_suffix(" or vector(0)").unwrap_or(expr);
            queries.push(Query {
                source: format!("panel {}", panel["title"]),
                expr: with_all(expr, &variables),
            });
        }
    }
    queries
}

/// prometheusrule.yaml's groups as a rule file Prometheus loads.
pub fn rule_file() -> Value {
    let rule = yaml("packaging/monitoring/prometheusrule.yaml");
    json!({ "groups": rule["spec"]["groups"] })
}

/// Every alert: its name and expression.
pub fn alerts() -> Vec<Query> {
    rule_file()["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| {
            Some(Query {
                source: r["alert"].as_str()?.to_owned(),
                expr: r["expr"].as_str()?.trim().to_owned(),
            })
        })
        .collect()
}

/// The ```promql blocks of docs/monitoring.md.
pub fn doc_examples() -> Vec<Query> {
    let page = std::fs::read_to_string(repo_root().join("docs/monitoring.md"))
        .expect("read docs/monitoring.md");
    page.split("```promql\n")
        .skip(1)
        .filter_map(|rest| rest.split("```").next())
        .map(|expr| Query {
            source: "docs/monitoring.md".to_owned(),
            expr: expr.trim().to_owned(),
        })
        .collect()
}
