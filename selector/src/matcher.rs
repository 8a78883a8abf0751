//! One selector compiled for a node and evaluated on its devices, with the
//! clause that failed and why. Pure.
//!
//! A selector is refused (never evaluated) when it is too long, does not
//! parse, costs too much or has a mistake Kubernetes rejects (see
//! [`crate::hints`]). Evaluation follows Kubernetes: a device matches when
//! the expression is `true`; an evaluation error (a missing attribute, a
//! wrong type) is not a non-match but an error, which in Kubernetes fails
//! the scheduling of the whole claim.

use std::sync::Arc;

use cel::{Context, Env, ExecutionError, Program, Value};

use cel::parser::Expression;

use crate::clauses;
use crate::unparse::call;

/// Methods whose receiver is what a false clause is about.
macro_rules! METHODS {
    () => {
        "compareTo"
            | "isGreaterThan"
            | "isLessThan"
            | "startsWith"
            | "endsWith"
            | "contains"
            | "matches"
    };
}
use crate::cost::{MAX_COST, MAX_LENGTH, estimate};
use crate::device::DeviceView;
use crate::errors::explain;
use crate::hints::{Catalog, Hint, Severity, check};
use crate::library::{QuantityVal, SemverVal, environment};

/// Why a selector cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The CEL environment could not be built (a bug).
    #[error("internal error building the CEL environment: {0}")]
    Environment(String),
    /// Over Kubernetes' length limit.
    #[error("the selector is {0} bytes long; Kubernetes allows {MAX_LENGTH}")]
    TooLong(usize),
    /// Not CEL.
    #[error("the selector does not parse: {0}")]
    Parse(String),
    /// Over the cost limit.
    #[error("too complex, exceeds cost limit: estimated cost {0}, Kubernetes allows {MAX_COST}")]
    TooComplex(u64),
    /// Mistakes Kubernetes rejects.
    #[error("the selector has {} mistake(s): {}", .0.len(), .0.iter().map(|h| h.problem.as_str()).collect::<Vec<_>>().join("; "))]
    Mistakes(Vec<Hint>),
}

/// What a selector did on one device.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Outcome {
    /// It matched.
    Match,
    /// A clause was false.
    NoMatch {
        /// The clause, as written.
        clause: String,
        /// What its left side is on this device, when it is a comparison.
        #[serde(skip_serializing_if = "Option::is_none")]
        actual: Option<String>,
    },
    /// Evaluation failed.
    Error {
        /// The clause that failed, as written.
        clause: String,
        /// What failed.
        message: String,
        /// What to do about it.
        #[serde(skip_serializing_if = "Option::is_none")]
        hint: Option<String>,
    },
}

/// A selector ready to evaluate.
pub struct Selector {
    env: Arc<Env>,
    program: Program,
    clauses: Vec<Clause>,
    /// Warnings about this node (errors refuse the selector).
    pub warnings: Vec<Hint>,
    /// The estimated cost.
    pub cost: u64,
}

impl std::fmt::Debug for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selector")
            .field("clauses", &self.clauses)
            .field("warnings", &self.warnings)
            .field("cost", &self.cost)
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Clause {
    text: String,
    program: Program,
}

impl Selector {
    /// Compiles `source` for a node whose names are in `catalog`.
    pub fn compile(source: &str, catalog: &Catalog) -> Result<Self, CompileError> {
        if source.len() > MAX_LENGTH {
            return Err(CompileError::TooLong(source.len()));
        }
        let env = shared_environment()?;
        let program = env
            .compile(source)
            .map_err(|e| CompileError::Parse(e.to_string().trim().to_owned()))?;
        let cost = estimate(program.expression());
        if cost > MAX_COST {
            return Err(CompileError::TooComplex(cost));
        }
        let (errors, warnings): (Vec<Hint>, Vec<Hint>) = check(program.expression(), catalog)
            .into_iter()
            .partition(|h| h.severity == Severity::Error);
        if !errors.is_empty() {
            return Err(CompileError::Mistakes(errors));
        }
        let clauses = clauses::split(source)
            .into_iter()
            .filter_map(|text| {
                let program = env.compile(&text).ok()?;
                Some(Clause { text, program })
            })
            .collect();
        Ok(Self {
            env,
            program,
            clauses,
            warnings,
            cost,
        })
    }

    /// Whether the selector holds on `device`, without looking for the
    /// clause that failed (what the allocator asks, many times); an
    /// evaluation error as [`Selector::evaluate`] reports it.
    pub fn holds(&self, device: &DeviceView) -> Result<bool, Outcome> {
        let mut context = Context::with_env(Arc::clone(&self.env));
        context.add_variable_as_val("device", device.to_cel());
        boolean(&self.program, &context)
            .map_err(|error| self.error_clause(&context, &error, device))
    }

    /// Evaluates the selector on `device`.
    pub fn evaluate(&self, device: &DeviceView) -> Outcome {
        let mut context = Context::with_env(Arc::clone(&self.env));
        context.add_variable_as_val("device", device.to_cel());
        match boolean(&self.program, &context) {
            Ok(true) => Outcome::Match,
            Ok(false) => self.false_clause(&context),
            Err(error) => self.error_clause(&context, &error, device),
        }
    }

    fn false_clause(&self, context: &Context<'_, '_>) -> Outcome {
        let clause = self
            .clauses
            .iter()
            .find(|c| matches!(boolean(&c.program, context), Ok(false)));
        Outcome::NoMatch {
            clause: clause.map_or_else(|| self.whole(), |c| c.text.clone()),
            actual: clause
                .and_then(|c| subject(c.program.expression()))
                .and_then(|subject| show(subject, context)),
        }
    }

    fn error_clause(
        &self,
        context: &Context<'_, '_>,
        error: &ExecutionError,
        device: &DeviceView,
    ) -> Outcome {
        let failing = self
            .clauses
            .iter()
            .find_map(|c| boolean(&c.program, context).err().map(|e| (c, e)));
        let (clause, error) = failing.map_or_else(
            || (self.whole(), error.clone()),
            |(c, e)| (c.text.clone(), e),
        );
        let (message, hint) = explain(&error, device);
        Outcome::Error {
            clause,
            message,
            hint,
        }
    }

    fn whole(&self) -> String {
        self.clauses
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join(" && ")
    }
}

thread_local! {
    /// The environment is the same for every selector: built once a thread.
    static ENVIRONMENT: Result<Arc<Env>, String> =
        environment().map(Arc::new).map_err(|e| e.to_string());
}

fn shared_environment() -> Result<Arc<Env>, CompileError> {
    ENVIRONMENT.with(|env| env.clone().map_err(CompileError::Environment))
}

/// Runs `program` and wants a bool.
fn boolean(program: &Program, context: &Context<'_, '_>) -> Result<bool, ExecutionError> {
    let value = Value::resolve_val(program.expression(), context)?;
    match value.downcast_ref::<cel::common::types::CelBool>() {
        Some(b) => Ok(*b.inner()),
        None => Err(ExecutionError::function_error(
            "selector",
            format!("must evaluate to bool, not {}", value.get_type().name()),
        )),
    }
}

/// What a false clause is about: the left side of a comparison, the
/// receiver of a comparison method (`x` of `x.compareTo(y) >= 0`).
fn subject(expr: &Expression) -> Option<&Expression> {
    let (function, target, args) = call(expr)?;
    let inner = match (function, target, args) {
        ("_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_", None, [left, _]) => left,
        (METHODS!(), Some(receiver), _) => return Some(receiver),
        _ => return None,
    };
    match call(inner) {
        Some((METHODS!(), Some(receiver), _)) => Some(receiver),
        _ => Some(inner),
    }
}

/// The value of `expr` on this device, as CEL text.
fn show(expr: &Expression, context: &Context<'_, '_>) -> Option<String> {
    let value = Value::resolve_val(expr, context).ok()?;
    if let Some(q) = value.downcast_ref::<QuantityVal>() {
        return Some(format!("quantity(\"{}\")", q.0.canonical()));
    }
    if let Some(v) = value.downcast_ref::<SemverVal>() {
        return Some(format!("semver(\"{}\")", v.0));
    }
    match Value::try_from(value.as_ref()).ok()? {
        Value::String(s) => Some(format!("{:?}", s.as_str())),
        Value::Int(n) => Some(n.to_string()),
        Value::UInt(n) => Some(format!("{n}u")),
        Value::Float(f) => Some(f.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".to_owned()),
        _ => None,
    }
}
