//! The worst-case cost of a selector, to refuse what Kubernetes refuses as
//! "too complex, exceeds cost limit". Pure.
//!
//! Kubernetes estimates the cost with cel-go's checker and refuses a
//! selector above 1,000,000 (`CELSelectorExpressionMaxCost`) or longer than
//! 10 KiB (`CELSelectorExpressionMaxLength`). The `cel` crate has no cost
//! estimator, so this is an approximation in the same units, documented in
//! docs/selectors.md: 1 per name, field, index or call; string functions add
//! a tenth of the strings' largest size; a comprehension costs its range's
//! largest size times its step. Largest sizes follow the DRA limits: 32
//! entries in a device map, 64 bytes in an attribute value; a list literal
//! is as long as written; anything else counts as 64.

use cel::common::ast::{Expr, LiteralValue};
use cel::parser::Expression;

use crate::unparse::{device_map, domain_map};

/// The most a selector may cost.
pub const MAX_COST: u64 = 1_000_000;
/// The longest a selector may be, in bytes.
pub const MAX_LENGTH: usize = 10 * 1024;
/// Most attributes plus capacities of a device.
const MAP_SIZE: u64 = 32;
/// Longest attribute value, and the size of what is not known.
const VALUE_SIZE: u64 = 64;

/// The estimated worst-case cost of `expr`.
pub fn estimate(expr: &Expression) -> u64 {
    match &expr.expr {
        Expr::Literal(_) => 0,
        Expr::Ident(_) => 1,
        Expr::Select(s) => estimate(&s.operand).saturating_add(1),
        Expr::List(l) => l.elements.iter().map(estimate).fold(1, u64::saturating_add),
        Expr::Map(m) => 1u64.saturating_add(u64::try_from(m.entries.len()).unwrap_or(u64::MAX)),
        Expr::Call(c) => {
            let parts = c
                .target
                .iter()
                .map(|t| estimate(t))
                .chain(c.args.iter().map(estimate));
            let base = parts.fold(1, u64::saturating_add);
            if is_string_function(&c.func_name) {
                let sizes = c
                    .target
                    .iter()
                    .map(|t| size(t))
                    .chain(c.args.iter().map(size));
                base.saturating_add(sizes.fold(0, u64::saturating_add) / 10)
            } else {
                base
            }
        }
        Expr::Comprehension(c) => {
            let step = estimate(&c.loop_cond).saturating_add(estimate(&c.loop_step));
            estimate(&c.iter_range)
                .saturating_add(estimate(&c.accu_init))
                .saturating_add(size(&c.iter_range).saturating_mul(step))
                .saturating_add(estimate(&c.result))
        }
        _ => 1,
    }
}

fn is_string_function(name: &str) -> bool {
    matches!(
        name,
        "contains"
            | "startsWith"
            | "endsWith"
            | "matches"
            | "_+_"
            | "lowerAscii"
            | "upperAscii"
            | "replace"
            | "split"
            | "indexOf"
            | "lastIndexOf"
            | "substring"
            | "trim"
            | "join"
    )
}

/// The largest size `expr` can have: elements of a list or map, bytes of a
/// string.
fn size(expr: &Expression) -> u64 {
    if device_map(expr).is_some() || domain_map(expr).is_some() {
        return MAP_SIZE;
    }
    match &expr.expr {
        Expr::List(l) => u64::try_from(l.elements.len()).unwrap_or(u64::MAX),
        Expr::Map(m) => u64::try_from(m.entries.len()).unwrap_or(u64::MAX),
        Expr::Literal(LiteralValue::String(s)) => {
            u64::try_from(s.inner().len()).unwrap_or(u64::MAX)
        }
        // map() and filter() are no longer than their range.
        Expr::Comprehension(c) => size(&c.iter_range),
        _ => VALUE_SIZE,
    }
}

#[cfg(test)]
mod tests {
    use super::{MAX_COST, estimate};

    fn cost(source: &str) -> u64 {
        let env = crate::library::environment().unwrap_or_else(|e| panic!("{e}"));
        let program = env.compile(source).unwrap_or_else(|e| panic!("{e}"));
        estimate(program.expression())
    }

    #[test]
    fn simple_selectors_are_cheap_and_nested_loops_are_not() {
        assert!(cost("device.driver == 'gpu.nvidia.com'") < 10);
        assert!(cost("device.attributes['gpu.nvidia.com'].exists(k, k.startsWith('p'))") < 1_000);
        let list = format!("[{}]", vec!["1"; 200].join(","));
        let nested = format!("{list}.all(x, {list}.all(y, {list}.exists(z, x + y == z)))");
        assert!(cost(&nested) > MAX_COST, "{}", cost(&nested));
        let flat = format!("{list}.all(x, x > 0)");
        assert!(cost(&flat) < MAX_COST);
    }
}
