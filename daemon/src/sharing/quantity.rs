//! Kubernetes `resource.Quantity` strings ("10Gi", "512Mi", "1.5G", "1e9") read
//! as a whole number of bytes. Pure.
//!
//! Fractions of a byte round up, as `Quantity.Value()` does. Milli and smaller
//! suffixes make no sense for memory and are refused.

/// Binary suffixes and their power of 1024.
const BINARY: [(&str, u32); 6] = [
    ("Ki", 1),
    ("Mi", 2),
    ("Gi", 3),
    ("Ti", 4),
    ("Pi", 5),
    ("Ei", 6),
];
/// Decimal suffixes and their power of 1000.
const DECIMAL: [(&str, u32); 6] = [("k", 1), ("M", 2), ("G", 3), ("T", 4), ("P", 5), ("E", 6)];

/// Parses `text` as a byte count. The error says what is wrong with it.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number = number.strip_prefix('+').unwrap_or(number);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits_ok = |s: &str| s.chars().all(|c| c.is_ascii_digit());
    if (whole.is_empty() && fraction.is_empty()) || !digits_ok(whole) || !digits_ok(fraction) {
        return Err(format!(
            "{text:?} is not a quantity; write e.g. \"10Gi\", \"512Mi\" or a number of bytes"
        ));
    }
    let (base, power) = multiplier(suffix).ok_or_else(|| {
        format!(
            "{text:?} has the unknown suffix {suffix:?}; use Ki, Mi, Gi, Ti, k, M, G, T or none"
        )
    })?;
    scale(whole, fraction, base, power).ok_or_else(|| format!("{text:?} is too large"))
}

/// The suffix's base and power, or a decimal exponent ("e9" → 10^9).
fn multiplier(suffix: &str) -> Option<(u128, u32)> {
    if suffix.is_empty() {
        return Some((1, 0));
    }
    if let Some((_, p)) = BINARY.iter().find(|(s, _)| *s == suffix) {
        return Some((1024, *p));
    }
    if let Some((_, p)) = DECIMAL.iter().find(|(s, _)| *s == suffix) {
        return Some((1000, *p));
    }
    let exponent = suffix.strip_prefix(['e', 'E'])?;
    let exponent = exponent.strip_prefix('+').unwrap_or(exponent);
    if exponent.is_empty() || !exponent.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    exponent
        .parse::<u32>()
        .ok()
        .filter(|e| *e <= 19)
        .map(|e| (10, e))
}

/// `whole.fraction × base^power`, rounded up to a whole byte.
fn scale(whole: &str, fraction: &str, base: u128, power: u32) -> Option<u64> {
    let fraction = fraction.trim_end_matches('0');
    if fraction.len() > 30 {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let mantissa: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let numerator = mantissa.checked_mul(base.checked_pow(power)?)?;
    let denominator = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let bytes = numerator.div_ceil(denominator);
    u64::try_from(bytes).ok()
}
