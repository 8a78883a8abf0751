//! Parsed CEL back to text, for the rewrites a hint suggests, and the
//! shapes of expression the hints look for. Pure.
//!
//! Covers what selectors are made of (names, fields, indexes, calls,
//! operators, literals); a comprehension prints as `…`. Strings print with
//! double quotes.

use cel::common::ast::{Expr, LiteralValue};
use cel::parser::Expression;

/// Which map of the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// `device.attributes`.
    Attributes,
    /// `device.capacity`.
    Capacity,
}

impl Which {
    /// One entry of it, in words.
    pub fn singular(self) -> &'static str {
        match self {
            Self::Attributes => "attribute",
            Self::Capacity => "capacity",
        }
    }

    /// The field name.
    pub fn field(self) -> &'static str {
        match self {
            Self::Attributes => "attributes",
            Self::Capacity => "capacity",
        }
    }
}

/// `device.<field>`: the field.
pub fn device_field(expr: &Expression) -> Option<&str> {
    match &expr.expr {
        Expr::Select(s)
            if !s.test && matches!(&s.operand.expr, Expr::Ident(n) if n == "device") =>
        {
            Some(&s.field)
        }
        _ => None,
    }
}

/// `x.key` or `x["key"]`: `x` and the key.
pub fn lookup(expr: &Expression) -> Option<(&Expression, &str)> {
    match &expr.expr {
        Expr::Select(s) if !s.test => Some((&s.operand, &s.field)),
        Expr::Call(c) if c.func_name == "_[_]" && c.args.len() == 2 => {
            string_literal(&c.args[1]).map(|key| (&c.args[0], key))
        }
        _ => None,
    }
}

/// `device.attributes` or `device.capacity`.
pub fn device_map(expr: &Expression) -> Option<Which> {
    match device_field(expr)? {
        "attributes" => Some(Which::Attributes),
        "capacity" => Some(Which::Capacity),
        _ => None,
    }
}

/// `device.attributes["domain"]`: the map and the domain.
pub fn domain_map(expr: &Expression) -> Option<(Which, &str)> {
    let (operand, domain) = lookup(expr)?;
    Some((device_map(operand)?, domain))
}

/// `device.attributes["domain"].id`: the map, domain and id.
pub fn entry(expr: &Expression) -> Option<(Which, &str, &str)> {
    let (operand, id) = lookup(expr)?;
    let (which, domain) = domain_map(operand)?;
    Some((which, domain, id))
}

/// A string literal's text.
pub fn string_literal(expr: &Expression) -> Option<&str> {
    match &expr.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner()),
        _ => None,
    }
}

/// The call's name, target and arguments.
pub fn call(expr: &Expression) -> Option<(&str, Option<&Expression>, &[Expression])> {
    match &expr.expr {
        Expr::Call(c) => Some((&c.func_name, c.target.as_deref(), &c.args)),
        _ => None,
    }
}

/// The operator's symbol, for `_>=_` and the like.
pub fn operator_symbol(function: &str) -> Option<&'static str> {
    Some(match function {
        "_==_" => "==",
        "_!=_" => "!=",
        "_>=_" => ">=",
        "_<=_" => "<=",
        "_>_" => ">",
        "_<_" => "<",
        "_&&_" => "&&",
        "_||_" => "||",
        "_+_" => "+",
        "_-_" => "-",
        "_*_" => "*",
        "_/_" => "/",
        "_%_" => "%",
        "@in" => "in",
        _ => return None,
    })
}

/// `expr` as CEL text.
pub fn unparse(expr: &Expression) -> String {
    match &expr.expr {
        Expr::Ident(name) => name.clone(),
        Expr::Literal(lit) => literal(lit),
        Expr::Select(s) if s.test => format!("has({}.{})", unparse(&s.operand), s.field),
        Expr::Select(s) => format!("{}.{}", unparse(&s.operand), s.field),
        Expr::Call(c) => {
            if let (Some(op), [a, b]) = (operator_symbol(&c.func_name), c.args.as_slice()) {
                return format!("{} {op} {}", unparse(a), unparse(b));
            }
            match (c.func_name.as_str(), c.args.as_slice()) {
                ("_[_]", [a, b]) => format!("{}[{}]", unparse(a), unparse(b)),
                ("!_", [a]) => format!("!{}", unparse(a)),
                ("-_", [a]) => format!("-{}", unparse(a)),
                _ => {
                    let args: Vec<String> = c.args.iter().map(unparse).collect();
                    match &c.target {
                        Some(t) => format!("{}.{}({})", unparse(t), c.func_name, args.join(", ")),
                        None => format!("{}({})", c.func_name, args.join(", ")),
                    }
                }
            }
        }
        Expr::List(l) => {
            let items: Vec<String> = l.elements.iter().map(unparse).collect();
            format!("[{}]", items.join(", "))
        }
        _ => "…".to_owned(),
    }
}

fn literal(lit: &LiteralValue) -> String {
    match lit {
        LiteralValue::String(s) => format!("{:?}", s.inner()),
        LiteralValue::Int(n) => n.inner().to_string(),
        LiteralValue::UInt(n) => format!("{}u", n.inner()),
        LiteralValue::Double(d) => d.inner().to_string(),
        LiteralValue::Boolean(b) => b.inner().to_string(),
        LiteralValue::Null => "null".to_owned(),
        LiteralValue::Bytes(_) => "b\"…\"".to_owned(),
    }
}
