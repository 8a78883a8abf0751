//! gpuslice-quantity: Kubernetes `resource.Quantity` values held exactly, for
//! CEL's `quantity()` and the capacities of a device (gpuslice-selector);
//! every byte count a person types, read with Kubernetes' suffixes
//! ([`bytes`]: the memory amounts of gpusliced's sharing configs,
//! `gpuslicectl sim exec --memory`); and the one way every binary prints a
//! byte amount for people ([`show`]: "6.0 GiB", "512 MiB"). Pure (std and
//! thiserror).
//!
//! A quantity is kept as a whole number of nano-units in an `i128`, which is
//! what `resource.ParseQuantity` keeps: it rounds a value finer than 1n up
//! (away from zero), so two quantities compare exactly ("1.5Gi" equals
//! "1536Mi", "200M" equals "0.2G"). Binary suffixes are exact in decimal.
//! Invariant: a [`Quantity`] never overflows; parsing a value beyond about
//! 1.7e29 fails instead (Kubernetes accepts larger decimal values; no device
//! capacity comes near).

pub mod bytes;
pub mod show;

use std::cmp::Ordering;
use std::fmt;

/// Nano-units per unit.
const NANO: i128 = 1_000_000_000;

/// Why a string is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not the quantity syntax at all.
    #[error(
        "{0:?} is not a quantity: write a number with an optional suffix (Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E) or exponent (e9), e.g. \"40Gi\""
    )]
    Syntax(String),
    /// A suffix Kubernetes does not know ("GB", "K").
    #[error(
        "{text:?} has the unknown suffix {suffix:?}: binary suffixes are Ki, Mi, Gi, Ti, Pi, Ei; decimal ones n, u, m, k, M, G, T, P, E (\"k\" is lowercase, there is no \"B\")"
    )]
    Suffix {
        /// The whole text.
        text: String,
        /// The suffix.
        suffix: String,
    },
    /// Larger than this checker holds.
    #[error("{0:?} is too large a quantity")]
    TooLarge(String),
}

/// An exact quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity {
    nanos: i128,
}

impl Quantity {
    /// A whole number of units (capacities, `add(int)`).
    pub fn from_units(units: i64) -> Self {
        Self {
            nanos: i128::from(units) * NANO,
        }
    }

    /// Parses `text` as `resource.ParseQuantity` does.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let syntax = || QuantityError::Syntax(text.to_owned());
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return Err(syntax());
        }
        let (ten, two) = suffix_powers(suffix).ok_or_else(|| {
            if suffix.starts_with(['e', 'E']) && suffix.len() > 1 {
                syntax()
            } else {
                QuantityError::Suffix {
                    text: text.to_owned(),
                    suffix: suffix.to_owned(),
                }
            }
        })?;
        let magnitude = scale(whole, fraction, ten, two)
            .ok_or_else(|| QuantityError::TooLarge(text.to_owned()))?;
        Ok(Self {
            nanos: if negative { -magnitude } else { magnitude },
        })
    }

    /// -1, 0 or 1.
    pub fn sign(self) -> i64 {
        match self.nanos.cmp(&0) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    }

    /// `self + other`, `None` on overflow.
    pub fn checked_add(self, other: Self) -> Option<Self> {
        self.nanos
            .checked_add(other.nanos)
            .map(|nanos| Self { nanos })
    }

    /// `self - other`, `None` on overflow.
    pub fn checked_sub(self, other: Self) -> Option<Self> {
        self.nanos
            .checked_sub(other.nanos)
            .map(|nanos| Self { nanos })
    }

    /// The value rounded up to a whole unit, as `Quantity.Value()` does.
    pub fn ceil_units(self) -> i128 {
        let whole = self.nanos.div_euclid(NANO);
        if self.nanos.rem_euclid(NANO) == 0 {
            whole
        } else {
            whole + 1
        }
    }

    /// The value as an `i64` when it is whole and fits (`AsInt64`).
    pub fn as_integer(self) -> Option<i64> {
        if self.nanos % NANO == 0 {
            i64::try_from(self.nanos / NANO).ok()
        } else {
            None
        }
    }

    /// The value as Kubernetes would write it: whole values with the largest
    /// exact binary suffix ("40Gi") or decimal one ("2k"), others as decimals.
    pub fn canonical(self) -> String {
        let Some(units) = self.as_integer().filter(|u| *u != 0) else {
            return self.to_string();
        };
        let suffixed = |base: i64, suffixes: [&str; 6]| {
            let (mut mantissa, mut used) = (units, "");
            for suffix in suffixes {
                if mantissa % base != 0 {
                    break;
                }
                mantissa /= base;
                used = suffix;
            }
            format!("{mantissa}{used}")
        };
        let binary = suffixed(1024, ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]);
        let decimal = suffixed(1000, ["k", "M", "G", "T", "P", "E"]);
        if decimal.len() < binary.len() {
            decimal
        } else {
            binary
        }
    }

    /// The value as the nearest `f64`.
    #[expect(
        clippy::cast_precision_loss,
        reason = "asApproximateFloat is approximate by definition"
    )]
    pub fn as_approximate_float(self) -> f64 {
        self.nanos as f64 / 1e9
    }
}

impl fmt::Display for Quantity {
    /// Whole units when the value is whole, else a decimal ("1.5").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.nanos / NANO;
        let fraction = (self.nanos % NANO).unsigned_abs();
        if fraction == 0 {
            write!(f, "{whole}")
        } else {
            let sign = if self.nanos < 0 && whole == 0 {
                "-"
            } else {
                ""
            };
            let digits = format!("{fraction:09}");
            write!(f, "{sign}{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

/// The power of ten and the power of two (in steps of 10) of a suffix.
fn suffix_powers(suffix: &str) -> Option<(i32, u32)> {
    let decimal = match suffix {
        "" => Some(0),
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(ten) = decimal {
        return Some((ten, 0));
    }
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
        .iter()
        .position(|s| *s == suffix);
    if let Some(p) = binary {
        return Some((0, u32::try_from(p + 1).ok()? * 10));
    }
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    exponent.parse::<i32>().ok().map(|e| (e, 0))
}

/// `whole.fraction × 10^ten × 2^two` in nano-units, rounded up.
fn scale(whole: &str, fraction: &str, ten: i32, two: u32) -> Option<i128> {
    let fraction = fraction.trim_end_matches('0');
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(0);
    }
    if digits.len() > 38 {
        return None;
    }
    let mantissa: i128 = digits.parse().ok()?;
    let mantissa = mantissa.checked_mul(1i128.checked_shl(two)?)?;
    // value = mantissa × 10^(ten - len(fraction)); in nanos, 10^(ten - len + 9).
    let exponent = i64::from(ten) - i64::try_from(fraction.len()).ok()? + 9;
    if exponent >= 0 {
        let factor = 10i128.checked_pow(u32::try_from(exponent).ok()?)?;
        mantissa.checked_mul(factor)
    } else {
        let divisor = u32::try_from(-exponent)
            .ok()
            .and_then(|e| 10i128.checked_pow(e));
        // A divisor past i128 leaves a non-zero mantissa below one nano: 1n.
        Some(divisor.map_or(1, |d| (mantissa + d - 1) / d))
    }
}

#[cfg(test)]
mod tests {
    use super::{Quantity, QuantityError};

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn equal_values_in_every_spelling() {
        let groups: &[&[&str]] = &[
            &["1.5Gi", "1536Mi", "1572864Ki", "1610612736", "1.610612736G"],
            &["200M", "0.2G", "200000k", "2e8", "2E8", "200000000"],
            &["40Gi", "42949672960", "+40Gi"],
            &["0", "0Gi", "-0", "0.0", "0m"],
            &["1m", "0.001", "1000u", "1e-3"],
            &["1n", "0.0000000001"],
        ];
        for group in groups {
            for text in *group {
                assert_eq!(q(text), q(group[0]), "{text} vs {}", group[0]);
            }
        }
    }

    #[test]
    fn order_and_arithmetic() {
        assert!(q("50M") < q("50Mi"));
        assert!(q("80Gi") > q("40Gi"));
        assert!(q("-1") < q("0"));
        assert_eq!(
            q("50k").checked_add(Quantity::from_units(20)),
            Some(q("50020"))
        );
        assert_eq!(q("50k").checked_sub(q("20k")), Some(q("30k")));
        assert_eq!(q("-5Gi").sign(), -1);
        assert_eq!(q("0").sign(), 0);
        assert_eq!(q("50k").as_integer(), Some(50_000));
        assert_eq!(q("0.5").ceil_units(), 1);
        assert_eq!(q("-0.5").ceil_units(), 0);
        assert_eq!(q("1.5Gi").ceil_units(), 1_610_612_736);
        assert_eq!(q("1.5").as_integer(), None);
        assert_eq!(q("10E").as_integer(), None);
        assert!((q("1.5Gi").as_approximate_float() - 1_610_612_736.0).abs() < 1e-3);
        assert_eq!(q("1.5").to_string(), "1.5");
        assert_eq!(q("-0.25").to_string(), "-0.25");
        assert_eq!(q("2Ki").to_string(), "2048");
        assert_eq!(q("42949672960").canonical(), "40Gi");
        assert_eq!(q("2000").canonical(), "2k");
        assert_eq!(q("1536").canonical(), "1536");
        assert_eq!(q("9856Mi").canonical(), "9856Mi");
        assert_eq!(q("1.5").canonical(), "1.5");
        assert_eq!(q("0").canonical(), "0");
    }

    #[test]
    fn refused_as_kubernetes_refuses() {
        for bad in [
            "", "Gi", "Mi", "Three", "1,3G", ".", "1.2.3", "e9", "1e", "--1",
        ] {
            assert!(
                matches!(
                    Quantity::parse(bad),
                    Err(QuantityError::Syntax(_) | QuantityError::Suffix { .. })
                ),
                "{bad}"
            );
        }
        for (bad, suffix) in [
            ("200K", "K"),
            ("40GB", "GB"),
            ("1gi", "gi"),
            ("4 Gi", " Gi"),
        ] {
            assert_eq!(
                Quantity::parse(bad),
                Err(QuantityError::Suffix {
                    text: bad.to_owned(),
                    suffix: suffix.to_owned()
                })
            );
        }
        assert!(matches!(
            Quantity::parse("9999999999999999999999999999999999999G"),
            Err(QuantityError::TooLarge(_))
        ));
    }
}
