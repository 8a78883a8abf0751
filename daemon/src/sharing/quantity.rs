//! Kubernetes `resource.Quantity` strings ("10Gi", "512Mi", "1.5G", "1e9") read
//! as a whole number of bytes. Pure.
//!
//! Parsing is gpuslice-quantity's exact `Quantity` (the one `gpuslicectl
//! match` evaluates selectors with), so a limit here reads as the same amount
//! as in a selector. Fractions of a byte round up, as `Quantity.Value()` does.
//! Negative amounts, and milli and smaller suffixes (which make no sense for
//! memory), are refused.

use gpuslice_quantity::Quantity;

/// Parses `text` as a byte count. The error says what is wrong with it.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if text.ends_with(['m', 'u', 'n']) {
        return Err(format!(
            "{text:?} is a fraction of a byte (m, u and n are milli, micro, nano); use Ki, Mi, Gi, Ti, k, M, G, T or none"
        ));
    }
    let quantity = Quantity::parse(text).map_err(|e| e.to_string())?;
    if quantity.sign() < 0 {
        return Err(format!(
            "{text:?} is negative; a memory amount is at least 0"
        ));
    }
    u64::try_from(quantity.ceil_units()).map_err(|_| format!("{text:?} is too large"))
}
