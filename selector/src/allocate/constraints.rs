//! A claim's `matchAttribute` and `distinctAttribute` constraints while the
//! search adds and removes devices (upstream incubating `constraint.go` and
//! `matchAttributeConstraint` in `allocator_incubating.go`). Pure.
//!
//! * A constraint covers the requests it lists (a subrequest through its
//!   request's name or `request/subrequest`), or all when it lists none.
//! * `lookupAttribute`: the fully qualified name as published, else, when
//!   its domain is the driver, the bare name.
//! * matchAttribute: every covered device has the attribute, all with one
//!   value of one type; distinctAttribute: every covered device has it and
//!   no two share a value (values of different types count as distinct, as
//!   upstream's `matchesAttribute` returns at the first type mismatch).

use k8s_openapi::api::resource::v1::{Device, DeviceAttribute};

use super::requests::ConstraintSpec;

/// An attribute value, compared as upstream does (versions by text).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Value {
    /// string
    Str(String),
    /// int
    Int(i64),
    /// bool
    Bool(bool),
    /// version
    Version(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Str(s) | Self::Version(s) => f.write_str(s),
            Self::Int(n) => write!(f, "{n}"),
            Self::Bool(b) => write!(f, "{b}"),
        }
    }
}

fn value(a: &DeviceAttribute) -> Option<Value> {
    match (&a.string, a.int, a.bool, &a.version) {
        (Some(s), ..) => Some(Value::Str(s.clone())),
        (_, Some(n), ..) => Some(Value::Int(n)),
        (_, _, Some(b), _) => Some(Value::Bool(b)),
        (.., Some(v)) => Some(Value::Version(v.clone())),
        _ => None,
    }
}

/// `lookupAttribute`.
pub fn lookup(device: &Device, driver: &str, qualified: &str) -> Option<Value> {
    let attributes = device.attributes.as_ref()?;
    if let Some(a) = attributes.get(qualified) {
        return value(a);
    }
    let (domain, id) = qualified.split_once('/')?;
    if domain != driver {
        return None;
    }
    attributes.get(id).and_then(value)
}

/// Whether a constraint listing `names` covers request `base` (with
/// subrequest `sub`): all when it lists none.
pub fn covers(names: &[String], base: &str, sub: Option<&str>) -> bool {
    names.is_empty()
        || names.iter().any(|n| n == base)
        || sub.is_some_and(|s| names.iter().any(|n| *n == format!("{base}/{s}")))
}

fn same_kind(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// One constraint's state in a search.
#[derive(Debug, Clone)]
pub struct Constraint {
    spec: ConstraintSpec,
    /// Values of the covered devices taken so far, in order.
    taken: Vec<Value>,
}

impl Constraint {
    /// A constraint with no device yet.
    pub fn new(spec: ConstraintSpec) -> Self {
        Self {
            spec,
            taken: Vec::new(),
        }
    }

    /// Whether it covers `base` (with subrequest `sub`).
    pub fn covers(&self, base: &str, sub: Option<&str>) -> bool {
        covers(&self.spec.requests, base, sub)
    }

    /// `add`: whether the device may join; if so it is counted.
    pub fn add(&mut self, base: &str, sub: Option<&str>, device: &Device, driver: &str) -> bool {
        if !self.covers(base, sub) {
            return true;
        }
        let Some(v) = lookup(device, driver, &self.spec.attribute) else {
            return false;
        };
        let fits = if self.spec.distinct {
            distinct(&self.taken, &v)
        } else {
            self.taken.first().is_none_or(|first| *first == v)
        };
        if fits {
            self.taken.push(v);
        }
        fits
    }

    /// `remove`: undoes the last successful `add` of this device.
    pub fn remove(&mut self, base: &str, sub: Option<&str>) {
        if self.covers(base, sub) {
            self.taken.pop();
        }
    }
}

/// upstream `distinctAttributeConstraint.matchesAttribute`.
fn distinct(taken: &[Value], candidate: &Value) -> bool {
    for existing in taken {
        if !same_kind(existing, candidate) {
            return true;
        }
        if existing == candidate {
            return false;
        }
    }
    true
}
