//! The Kubernetes CEL functions DRA selectors use, added on the `cel` crate's
//! standard environment: `quantity()` with its methods, `semver()` with its
//! methods, the strings extension and `cel.bind`. Pure.
//!
//! Follows Kubernetes' apiserver CEL libraries (quantity.go, semver.go):
//! quantities and versions have `==` and `!=` but no ordering operators (a
//! `>=` on them is a "no matching overload" error, as in Kubernetes, where
//! the type checker refuses it before the claim is even stored); they order
//! through `compareTo`, `isGreaterThan` and `isLessThan`. Quantity `mul`,
//! `div` and `divInt` (added in Kubernetes 1.34+ behind a compatibility
//! version) are not offered.

use std::any::Any;

use cel::common::types::{CelBool, CelDouble, CelInt, CelString, Type};
use cel::common::value::{StaticVal, Val};
use cel::{DeclarationError, Env, ExecutionError, add_member_overload, add_overload};

use crate::bind::bind_macro;
use crate::quantity::Quantity;
use crate::version::Version;

static QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");
static SEMVER_TYPE: Type = Type::new_unspecified_type("kubernetes.Semver");

/// A quantity as a CEL value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantityVal(pub Quantity);

/// A version as a CEL value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemverVal(pub Version);

impl Val for QuantityVal {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }
    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other.downcast_ref::<Self>().is_some_and(|o| o.0 == self.0)
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(*self)
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
impl StaticVal for QuantityVal {}

impl Val for SemverVal {
    fn get_type(&self) -> &Type {
        &SEMVER_TYPE
    }
    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }
    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<Self>()
            .is_some_and(|o| o.0.compare(&self.0).is_eq())
    }
    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}
impl StaticVal for SemverVal {}

/// The DRA selector environment: CEL's standard library, the strings
/// extension, `cel.bind`, and the quantity and semver libraries.
pub fn environment() -> Result<Env, DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)?;
    env.add_type(QUANTITY_TYPE.to_owned())?;
    env.add_type(SEMVER_TYPE.to_owned())?;
    env.add_macro(cel::parser::Macro::receiver("bind", 3, bind_macro))?;
    add_quantity(&mut env)?;
    add_semver(&mut env)?;
    Ok(env)
}

fn add_quantity(env: &mut Env) -> Result<(), DeclarationError> {
    add_overload!(env, fn quantity: (CelString<'_>) -> Result<QuantityVal>)?;
    add_overload!(env, fn is_quantity: (CelString<'_>) -> CelBool)?;
    add_member_overload!(env, fn sign: (QuantityVal) -> CelInt)?;
    add_member_overload!(env, fn q_greater: (QuantityVal, QuantityVal) -> CelBool, name = "isGreaterThan")?;
    add_member_overload!(env, fn q_less: (QuantityVal, QuantityVal) -> CelBool, name = "isLessThan")?;
    add_member_overload!(env, fn q_compare: (QuantityVal, QuantityVal) -> CelInt, name = "compareTo")?;
    add_member_overload!(env, fn as_approximate_float: (QuantityVal) -> CelDouble)?;
    add_member_overload!(env, fn as_integer: (QuantityVal) -> Result<CelInt>)?;
    add_member_overload!(env, fn is_integer: (QuantityVal) -> CelBool)?;
    add_member_overload!(env, fn add: (QuantityVal, QuantityVal) -> Result<QuantityVal>)?;
    add_member_overload!(env, fn add_int: (QuantityVal, CelInt) -> Result<QuantityVal>, name = "add")?;
    add_member_overload!(env, fn sub: (QuantityVal, QuantityVal) -> Result<QuantityVal>)?;
    add_member_overload!(env, fn sub_int: (QuantityVal, CelInt) -> Result<QuantityVal>, name = "sub")?;
    Ok(())
}

fn add_semver(env: &mut Env) -> Result<(), DeclarationError> {
    add_overload!(env, fn semver: (CelString<'_>) -> Result<SemverVal>)?;
    add_overload!(env, fn semver_normalized: (CelString<'_>, CelBool) -> Result<SemverVal>, name = "semver")?;
    add_overload!(env, fn is_semver: (CelString<'_>) -> CelBool)?;
    add_overload!(env, fn is_semver_normalized: (CelString<'_>, CelBool) -> CelBool, name = "isSemver")?;
    add_member_overload!(env, fn major: (SemverVal) -> CelInt)?;
    add_member_overload!(env, fn minor: (SemverVal) -> CelInt)?;
    add_member_overload!(env, fn patch: (SemverVal) -> CelInt)?;
    add_member_overload!(env, fn v_greater: (SemverVal, SemverVal) -> CelBool, name = "isGreaterThan")?;
    add_member_overload!(env, fn v_less: (SemverVal, SemverVal) -> CelBool, name = "isLessThan")?;
    add_member_overload!(env, fn v_compare: (SemverVal, SemverVal) -> CelInt, name = "compareTo")?;
    Ok(())
}

fn quantity(text: &CelString<'_>) -> Result<QuantityVal, ExecutionError> {
    Quantity::parse(text.inner())
        .map(QuantityVal)
        .map_err(|e| ExecutionError::function_error("quantity", e))
}

fn is_quantity(text: &CelString<'_>) -> CelBool {
    Quantity::parse(text.inner()).is_ok().into()
}

fn sign(q: &QuantityVal) -> CelInt {
    q.0.sign().into()
}

fn q_greater(a: &QuantityVal, b: &QuantityVal) -> CelBool {
    (a.0 > b.0).into()
}

fn q_less(a: &QuantityVal, b: &QuantityVal) -> CelBool {
    (a.0 < b.0).into()
}

fn q_compare(a: &QuantityVal, b: &QuantityVal) -> CelInt {
    ordering(a.0.cmp(&b.0))
}

fn as_approximate_float(q: &QuantityVal) -> CelDouble {
    q.0.as_approximate_float().into()
}

fn as_integer(q: &QuantityVal) -> Result<CelInt, ExecutionError> {
    q.0.as_integer().map(CelInt::from).ok_or_else(|| {
        ExecutionError::function_error("asInteger", "cannot convert value to integer")
    })
}

fn is_integer(q: &QuantityVal) -> CelBool {
    q.0.as_integer().is_some().into()
}

fn overflow(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "quantity overflow")
}

fn add(a: &QuantityVal, b: &QuantityVal) -> Result<QuantityVal, ExecutionError> {
    a.0.checked_add(b.0)
        .map(QuantityVal)
        .ok_or_else(|| overflow("add"))
}

fn add_int(a: &QuantityVal, b: &CelInt) -> Result<QuantityVal, ExecutionError> {
    add(a, &QuantityVal(Quantity::from_units(*b.inner())))
}

fn sub(a: &QuantityVal, b: &QuantityVal) -> Result<QuantityVal, ExecutionError> {
    a.0.checked_sub(b.0)
        .map(QuantityVal)
        .ok_or_else(|| overflow("sub"))
}

fn sub_int(a: &QuantityVal, b: &CelInt) -> Result<QuantityVal, ExecutionError> {
    sub(a, &QuantityVal(Quantity::from_units(*b.inner())))
}

fn semver(text: &CelString<'_>) -> Result<SemverVal, ExecutionError> {
    Version::parse(text.inner(), false)
        .map(SemverVal)
        .map_err(|e| ExecutionError::function_error("semver", e))
}

fn semver_normalized(
    text: &CelString<'_>,
    normalize: &CelBool,
) -> Result<SemverVal, ExecutionError> {
    Version::parse(text.inner(), *normalize.inner())
        .map(SemverVal)
        .map_err(|e| ExecutionError::function_error("semver", e))
}

fn is_semver(text: &CelString<'_>) -> CelBool {
    Version::parse(text.inner(), false).is_ok().into()
}

fn is_semver_normalized(text: &CelString<'_>, normalize: &CelBool) -> CelBool {
    Version::parse(text.inner(), *normalize.inner())
        .is_ok()
        .into()
}

fn number(n: u64) -> CelInt {
    CelInt::from(i64::try_from(n).unwrap_or(i64::MAX))
}

fn major(v: &SemverVal) -> CelInt {
    number(v.0.major())
}

fn minor(v: &SemverVal) -> CelInt {
    number(v.0.minor())
}

fn patch(v: &SemverVal) -> CelInt {
    number(v.0.patch())
}

fn v_greater(a: &SemverVal, b: &SemverVal) -> CelBool {
    a.0.compare(&b.0).is_gt().into()
}

fn v_less(a: &SemverVal, b: &SemverVal) -> CelBool {
    a.0.compare(&b.0).is_lt().into()
}

fn v_compare(a: &SemverVal, b: &SemverVal) -> CelInt {
    ordering(a.0.compare(&b.0))
}

fn ordering(order: std::cmp::Ordering) -> CelInt {
    CelInt::from(match order {
        std::cmp::Ordering::Less => -1,
        std::cmp::Ordering::Equal => 0,
        std::cmp::Ordering::Greater => 1,
    })
}
