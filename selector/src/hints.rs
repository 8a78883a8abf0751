//! The common selector mistakes, found in the parsed expression, each with
//! what to write instead. Pure.
//!
//! Errors are what Kubernetes refuses (its type checker rejects the claim or
//! class, or every evaluation fails): ordering operators on quantities or
//! versions, an attribute or capacity name without its domain, a field
//! `device` does not have, a quantity compared with a plain string or
//! number. Warnings depend on this node's devices: a name no device here
//! publishes (with the nearest real one), a version attribute compared with
//! a string.

use std::collections::{BTreeMap, BTreeSet};

use cel::common::ast::Expr;
use cel::parser::Expression;

use crate::device::{Attr, DeviceView};
use crate::unparse::{
    Which, call, device_field, domain_map, entry, lookup, string_literal, unparse,
};

/// How bad a mistake is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Kubernetes rejects the expression, or it can never work.
    Error,
    /// Legal, but wrong for this node's devices.
    Warning,
}

/// One mistake.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hint {
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong.
    pub problem: String,
    /// What to write instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// The names this node's devices publish, and the driver.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The driver (default domain).
    pub driver: String,
    /// (domain, id) -> attribute type.
    pub attributes: BTreeMap<(String, String), &'static str>,
    /// (domain, id) of capacities.
    pub capacity: BTreeSet<(String, String)>,
}

impl Catalog {
    /// The names of `devices`.
    pub fn new(driver: &str, devices: &[DeviceView]) -> Self {
        let mut catalog = Self {
            driver: driver.to_owned(),
            ..Self::default()
        };
        for d in devices {
            for (domain, ids) in &d.attributes {
                for (id, attr) in ids {
                    catalog
                        .attributes
                        .insert((domain.clone(), id.clone()), Attr::kind(attr));
                }
            }
            for (domain, ids) in &d.capacity {
                for id in ids.keys() {
                    catalog.capacity.insert((domain.clone(), id.clone()));
                }
            }
        }
        catalog
    }

    fn names(&self, which: Which) -> Vec<&(String, String)> {
        match which {
            Which::Attributes => self.attributes.keys().collect(),
            Which::Capacity => self.capacity.iter().collect(),
        }
    }
}

const DEVICE_FIELDS: [&str; 4] = [
    "driver",
    "attributes",
    "capacity",
    "allowMultipleAllocations",
];

/// Every mistake in `expr`, outermost first.
pub fn check(expr: &Expression, catalog: &Catalog) -> Vec<Hint> {
    let mut hints = Vec::new();
    walk(expr, &mut |e| hints.extend(at(e, catalog)));
    hints.dedup();
    hints
}

fn walk(expr: &Expression, visit: &mut dyn FnMut(&Expression)) {
    visit(expr);
    match &expr.expr {
        Expr::Call(c) => {
            c.target.iter().for_each(|t| walk(t, visit));
            c.args.iter().for_each(|a| walk(a, visit));
        }
        Expr::Select(s) => walk(&s.operand, visit),
        Expr::List(l) => l.elements.iter().for_each(|e| walk(e, visit)),
        Expr::Comprehension(c) => {
            for part in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                walk(part, visit);
            }
        }
        _ => {}
    }
}

fn at(expr: &Expression, catalog: &Catalog) -> Vec<Hint> {
    let mut out = Vec::new();
    if let Some(field) = device_field(expr).filter(|f| !DEVICE_FIELDS.contains(f)) {
        out.push(error(
            format!("`device` has no field {field:?}; it has driver, attributes, capacity and allowMultipleAllocations"),
            nearest(field, DEVICE_FIELDS.iter().copied()).map(|n| format!("device.{n}")),
        ));
    }
    if let Some((operand, key)) = lookup(expr)
        && let Some(which) = crate::unparse::device_map(operand)
    {
        out.extend(domain_key(which, key, catalog));
    }
    if let Some((which, domain, id)) = entry(expr) {
        out.extend(unknown_name(which, domain, id, catalog));
    }
    if let Some((function, target, args)) = call(expr) {
        out.extend(crate::typing::call_hints(function, target, args, catalog));
    }
    out
}

/// `device.attributes.productName`, `device.attributes["productName"]` or
/// `device.attributes["gpu.nvidia.com/productName"]`.
fn domain_key(which: Which, key: &str, catalog: &Catalog) -> Option<Hint> {
    let field = which.field();
    if let Some((domain, id)) = key.split_once('/') {
        return Some(error(
            format!("device.{field} is keyed by domain alone, not by {key:?}"),
            Some(format!("device.{field}[{domain:?}].{id}")),
        ));
    }
    if key.contains('.') {
        return None;
    }
    let domain = catalog
        .names(which)
        .into_iter()
        .find(|(_, id)| id == key)
        .map_or(catalog.driver.as_str(), |(d, _)| d.as_str());
    Some(error(
        format!(
            "{key:?} is looked up in device.{field} without its domain: that map is keyed by domain, so this is an empty map, never the {}",
            if which == Which::Attributes {
                "attribute"
            } else {
                "capacity"
            }
        ),
        Some(format!("device.{field}[{domain:?}].{key}")),
    ))
}

/// A name no device on this node publishes.
fn unknown_name(which: Which, domain: &str, id: &str, catalog: &Catalog) -> Option<Hint> {
    let names = catalog.names(which);
    if names.iter().any(|(d, i)| d == domain && i == id) {
        return None;
    }
    let field = which.field();
    let entry = which.singular();
    if let Some((other, _)) = names.iter().find(|(_, i)| i == id) {
        return Some(warning(
            format!("no device here has {entry} {id:?} in domain {domain:?}; it is in {other:?}"),
            Some(format!("device.{field}[{other:?}].{id}")),
        ));
    }
    let same_domain = names
        .iter()
        .filter(|(d, _)| d == domain)
        .map(|(_, i)| i.as_str());
    let guess = nearest(id, same_domain);
    Some(warning(
        format!(
            "no device here has {entry} {id:?} in domain {domain:?}: looking it up is an error on every device{}",
            if guess.is_some() {
                ""
            } else {
                " (this node's names are listed by `gpuslicectl inventory`)"
            }
        ),
        guess.map(|n| format!("device.{field}[{domain:?}].{n}")),
    ))
}

/// The candidate closest to `word` by edit distance (case folded), if close.
pub fn nearest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let word_lower = word.to_lowercase();
    candidates
        .map(|c| (distance(&word_lower, &c.to_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(2))
        .min()
        .map(|(_, c)| c)
}

fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

/// An error hint.
pub fn error(problem: String, suggestion: Option<String>) -> Hint {
    Hint {
        severity: Severity::Error,
        problem,
        suggestion,
    }
}

/// A warning hint.
pub fn warning(problem: String, suggestion: Option<String>) -> Hint {
    Hint {
        severity: Severity::Warning,
        problem,
        suggestion,
    }
}

/// Whether `expr` is `device.attributes[..]` looked up with a literal.
pub fn is_domain_map(expr: &Expression) -> bool {
    domain_map(expr).is_some()
}

/// The literal text of `expr` when it is a string literal, quoted.
pub fn quoted(expr: &Expression) -> Option<String> {
    string_literal(expr).map(|s| format!("{s:?}"))
}

/// `expr` as text (re-exported for the typing rules).
pub fn text(expr: &Expression) -> String {
    unparse(expr)
}
