//! `cel.bind(name, value, expr)`, cel-go's bindings extension that the
//! Kubernetes DRA environment turns on, as a parse-time macro: the
//! comprehension cel-go expands it to (no iteration; the accumulator holds
//! `value` under `name` while `expr` is evaluated). Pure.

use cel::ParseError;
use cel::common::ast::{ComprehensionExpr, Expr, ListExpr, LiteralValue};
use cel::parser::{Expression, MacroExprHelper};

/// Expands `cel.bind(..)`; declines a `bind` on any other target.
pub fn bind_macro(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<Expression>,
    args: &mut Vec<Expression>,
) -> Result<Option<Expression>, ParseError> {
    let on_cel =
        matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(name)) if name == "cel");
    if !on_cel {
        return Ok(None);
    }
    let [name, value, body]: [Expression; 3] = std::mem::take(args).try_into().map_err(|_| {
        helper.new_error(
            0,
            "cel.bind takes three arguments: a name, a value and an expression",
        )
    })?;
    let Expr::Ident(var) = name.expr else {
        return Err(helper.new_error(name.id, "cel.bind's first argument must be a simple name"));
    };
    let bind = ComprehensionExpr {
        iter_range: helper.next_expr(Expr::List(ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: var.clone(),
        accu_init: value,
        loop_cond: helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into()))),
        loop_step: helper.next_expr(Expr::Ident(var)),
        result: body,
    };
    target.take();
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(bind)))))
}
