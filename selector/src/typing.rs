//! Just enough typing of a selector to catch quantities and versions used
//! like numbers or strings. Pure.
//!
//! A sub-expression is a quantity when it is `quantity(..)`, a capacity
//! (`device.capacity[d].x`) or `.add`/`.sub` on one; a version when it is
//! `semver(..)` or an attribute this node publishes as a version. Kubernetes
//! gives quantities and versions `==` but no `<`, `<=`, `>`, `>=`; they
//! order with `compareTo`, `isGreaterThan`, `isLessThan`, which take another
//! quantity or version, never a string.

use cel::common::ast::{Expr, LiteralValue};
use cel::parser::Expression;

use crate::hints::{Catalog, Hint, error, text, warning};
use crate::unparse::{Which, call, entry, operator_symbol};

/// What a sub-expression is known to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Quantity,
    Version { attribute: bool },
    Str,
    Number,
    Other,
}

fn type_of(expr: &Expression, catalog: &Catalog) -> Ty {
    if let Some((which, domain, id)) = entry(expr) {
        return match which {
            Which::Capacity => Ty::Quantity,
            Which::Attributes => {
                match catalog.attributes.get(&(domain.to_owned(), id.to_owned())) {
                    Some(&"version") => Ty::Version { attribute: true },
                    Some(&"string") => Ty::Str,
                    Some(&"int") => Ty::Number,
                    _ => Ty::Other,
                }
            }
        };
    }
    match &expr.expr {
        Expr::Literal(LiteralValue::String(_)) => return Ty::Str,
        Expr::Literal(LiteralValue::Int(_) | LiteralValue::UInt(_) | LiteralValue::Double(_)) => {
            return Ty::Number;
        }
        _ => {}
    }
    match call(expr) {
        Some(("quantity", None, _)) => Ty::Quantity,
        Some(("semver", None, _)) => Ty::Version { attribute: false },
        Some(("add" | "sub", Some(target), _)) if type_of(target, catalog) == Ty::Quantity => {
            Ty::Quantity
        }
        _ => Ty::Other,
    }
}

fn name(ty: Ty) -> &'static str {
    match ty {
        Ty::Quantity => "quantity",
        Ty::Version { .. } => "version",
        _ => "value",
    }
}

fn plural(ty: Ty) -> &'static str {
    match ty {
        Ty::Quantity => "quantities",
        Ty::Version { .. } => "versions",
        _ => "values",
    }
}

/// `other` made the same type as `ty`: `"40Gi"` -> `quantity("40Gi")`.
fn convert(other: &Expression, other_ty: Ty, ty: Ty) -> String {
    let inner = text(other);
    match (ty, other_ty) {
        (Ty::Quantity, Ty::Str) => format!("quantity({inner})"),
        (Ty::Quantity, Ty::Number) => format!("quantity(\"{inner}\")"),
        (Ty::Version { .. }, Ty::Str) => format!("semver({inner})"),
        _ => inner,
    }
}

fn flipped(op: &str) -> &str {
    match op {
        ">" => "<",
        "<" => ">",
        ">=" => "<=",
        "<=" => ">=",
        other => other,
    }
}

/// Hints for one call: operators and the comparison methods.
pub fn call_hints(
    function: &str,
    target: Option<&Expression>,
    args: &[Expression],
    catalog: &Catalog,
) -> Option<Hint> {
    if let (Some(op), [lhs, rhs]) = (operator_symbol(function), args) {
        return operator(op, lhs, rhs, catalog);
    }
    let target = target?;
    if !matches!(function, "compareTo" | "isGreaterThan" | "isLessThan") {
        return None;
    }
    let ty = type_of(target, catalog);
    let [arg] = args else { return None };
    let arg_ty = type_of(arg, catalog);
    let needs = matches!(
        (ty, arg_ty),
        (Ty::Quantity, Ty::Str | Ty::Number) | (Ty::Version { .. }, Ty::Str)
    );
    needs.then(|| {
        error(
            format!(
                "{function} on a {} takes a {0}, not a {}",
                name(ty),
                if arg_ty == Ty::Str {
                    "string"
                } else {
                    "number"
                }
            ),
            Some(format!(
                "{}.{function}({})",
                text(target),
                convert(arg, arg_ty, ty)
            )),
        )
    })
}

fn operator(op: &str, lhs: &Expression, rhs: &Expression, catalog: &Catalog) -> Option<Hint> {
    let (lt, rt) = (type_of(lhs, catalog), type_of(rhs, catalog));
    let special = |t: Ty| matches!(t, Ty::Quantity | Ty::Version { .. });
    // The special side first, so the rewrite reads `capacity.compareTo(..)`.
    let device_on_right = entry(rhs).is_some() && entry(lhs).is_none();
    let keep = (special(lt) && !(device_on_right && special(rt))) || !special(rt);
    let (a, at, b, bt, op) = if keep {
        (lhs, lt, rhs, rt, op)
    } else {
        (rhs, rt, lhs, lt, flipped(op))
    };
    if !special(at) {
        return None;
    }
    match op {
        ">" | "<" | ">=" | "<=" => Some(error(
            format!(
                "{} have no ordering operators in Kubernetes CEL (no {op}); compare with compareTo, isGreaterThan or isLessThan",
                plural(at)
            ),
            Some(format!(
                "{}.compareTo({}) {op} 0",
                text(a),
                convert(b, bt, at)
            )),
        )),
        "==" | "!=" if matches!(bt, Ty::Str | Ty::Number) => {
            let problem = format!(
                "a {} is never equal to a {}: `{} {op} {}` is always {}",
                name(at),
                if bt == Ty::Str { "string" } else { "number" },
                text(a),
                text(b),
                op == "!="
            );
            let suggestion = Some(format!("{} {op} {}", text(a), convert(b, bt, at)));
            // A capacity or semver() is a quantity or version everywhere; an
            // attribute is a version on this node's devices.
            Some(if at == (Ty::Version { attribute: true }) {
                warning(problem, suggestion)
            } else {
                error(problem, suggestion)
            })
        }
        _ => None,
    }
}
