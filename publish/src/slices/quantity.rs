//! Integer quantities in a form the API server writes back unchanged (each
//! is canonical for its own format), so a published slice compares equal to
//! what a later list returns: the largest binary suffix that keeps an integer
//! ("80Gi") or the largest decimal one ("2k", "80G", "132"), whichever is
//! shorter (binary on a tie). And the way back, [`whole_value`], for the
//! amounts the scheduler writes into a claim (consumed capacity).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const BINARY: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
const DECIMAL: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];

/// `value` as a canonical Kubernetes quantity string.
pub fn canonical(value: i64) -> String {
    if value == 0 {
        return "0".to_owned();
    }
    let binary = with_suffix(value, 1024, &BINARY);
    let decimal = with_suffix(value, 1000, &DECIMAL);
    if decimal.len() < binary.len() {
        decimal
    } else {
        binary
    }
}

fn with_suffix(value: i64, base: i64, suffixes: &[&str; 7]) -> String {
    let mut mantissa = value;
    let mut exponent = 0;
    while mantissa % base == 0 && exponent + 1 < suffixes.len() {
        mantissa /= base;
        exponent += 1;
    }
    format!("{mantissa}{}", suffixes[exponent])
}

/// `value` as a [`Quantity`].
pub fn quantity(value: i64) -> Quantity {
    Quantity(canonical(value))
}

/// A quantity as a whole number, rounded up as `Quantity.Value()` does:
/// "10Gi", "512Mi", "1.5G", "1e9", "1048576". `None` for what is not a
/// non-negative quantity of at least one unit or does not fit an `i64`
/// (milli and smaller suffixes).
pub fn whole_value(text: &str) -> Option<i64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number = number.strip_prefix('+').unwrap_or(number);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits(whole) || !digits(fraction) {
        return None;
    }
    let (base, power): (u128, u32) = if suffix.is_empty() {
        (1, 0)
    } else if let Some(p) = BINARY.iter().position(|s| *s == suffix && !s.is_empty()) {
        (1024, u32::try_from(p).ok()?)
    } else if let Some(p) = DECIMAL.iter().position(|s| *s == suffix && !s.is_empty()) {
        (1000, u32::try_from(p).ok()?)
    } else {
        let exponent = suffix.strip_prefix(['e', 'E'])?;
        if exponent.is_empty() || !digits(exponent) {
            return None;
        }
        (10, exponent.parse::<u32>().ok().filter(|e| *e <= 18)?)
    };
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > 30 {
        return None;
    }
    let mantissa: u128 = format!("{whole}{fraction}").parse().ok()?;
    let numerator = mantissa.checked_mul(base.checked_pow(power)?)?;
    let denominator = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    i64::try_from(numerator.div_ceil(denominator)).ok()
}

#[cfg(test)]
mod tests {
    use super::{canonical, whole_value};

    #[test]
    fn canonical_forms() {
        let cases = [
            (0, "0"),
            (1, "1"),
            (132, "132"),
            (1000, "1k"),
            (2000, "2k"),
            (1024, "1Ki"),
            (1536, "1536"),
            (1_024_000, "1024k"),
            (1_000_000, "1M"),
            (1_048_576, "1Mi"),
            (80 * 1024 * 1024 * 1024, "80Gi"),
            (85_899_345_920, "80Gi"),
            (10_334_765_056, "9856Mi"),
            (80_000_000_000, "80G"),
            (95_830_000_000, "95830M"),
            (-2048, "-2Ki"),
            (1 << 62, "4Ei"),
        ];
        for (value, want) in cases {
            assert_eq!(canonical(value), want, "{value}");
        }
    }

    #[test]
    fn whole_values_read_what_canonical_writes_and_what_users_write() {
        for value in [
            1,
            1024,
            1_048_576,
            85_899_345_920,
            132,
            2000,
            80_000_000_000,
        ] {
            assert_eq!(whole_value(&canonical(value)), Some(value), "{value}");
        }
        for (text, value) in [("1.5Gi", 1_610_612_736), ("1e9", 1_000_000_000), ("0.5", 1)] {
            assert_eq!(whole_value(text), Some(value), "{text}");
        }
        for bad in ["", "Gi", "-1Gi", "10GB", "1.2.3", "100m", "9999999999Ei"] {
            assert_eq!(whole_value(bad), None, "{bad}");
        }
    }
}
