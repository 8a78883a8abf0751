//! A byte count as a person types it (`gpuslicectl sim exec --memory`, the
//! memory amounts of gpusliced's sharing configs, the memory a scheduler
//! consumed from a device): a Kubernetes quantity, with Kubernetes' meaning
//! of every suffix. `G` is 10^9 and `Gi` 2^30, as in a Pod's memory limit;
//! there is no `B`. Pure.
//!
//! Parsing is [`Quantity::parse`], so an amount reads the same here as in a
//! selector's `quantity()`. On top of it: surrounding white space is
//! ignored; fractions of a byte round up, as `Quantity.Value()` does; a
//! negative amount, a milli, micro or nano suffix (no fraction of a byte
//! makes sense), or more than `u64` holds is refused. A size in another
//! tool's spelling ("4GiB", "4GB", "4K") is refused with what to write
//! instead ("write 4Gi").

use crate::{Quantity, QuantityError};

/// Why a text is not a byte count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BytesError {
    /// A size as other tools write it; `write` is the quantity to use.
    #[error("{text:?} is not a Kubernetes quantity: write {write}")]
    Spelling {
        /// The whole text.
        text: String,
        /// What to write instead: "4Gi", or both readings of "4GB".
        write: String,
    },
    /// A milli, micro or nano suffix.
    #[error(
        "{0:?} is a fraction of a byte (m, u and n are milli, micro, nano); use Ki, Mi, Gi, Ti, k, M, G, T or none"
    )]
    Fraction(String),
    /// Below zero.
    #[error("{0:?} is negative; a memory amount is at least 0")]
    Negative(String),
    /// More bytes than a `u64` holds.
    #[error("{0:?} is too large")]
    TooLarge(String),
    /// Not a quantity at all.
    #[error(transparent)]
    Quantity(QuantityError),
}

/// Parses `text` as a whole number of bytes.
pub fn parse_bytes(text: &str) -> Result<u64, BytesError> {
    let text = text.trim();
    if text.ends_with(['m', 'u', 'n']) {
        return Err(BytesError::Fraction(text.to_owned()));
    }
    let quantity = Quantity::parse(text).map_err(|err| match &err {
        QuantityError::Suffix { suffix, .. } => {
            respell(text, suffix).map_or(BytesError::Quantity(err), |write| BytesError::Spelling {
                text: text.to_owned(),
                write,
            })
        }
        _ => BytesError::Quantity(err),
    })?;
    if quantity.sign() < 0 {
        return Err(BytesError::Negative(text.to_owned()));
    }
    u64::try_from(quantity.ceil_units()).map_err(|_| BytesError::TooLarge(text.to_owned()))
}

/// The quantity to write for a size with `suffix` in another spelling:
/// "4Gi" for "4GiB" or "4gi"; both readings for "4GB", "4K" or "4g"; the
/// bare number for "4096B". `None` for a suffix that is no size.
fn respell(text: &str, suffix: &str) -> Option<String> {
    let number = text.strip_suffix(suffix)?;
    let unit = suffix.trim();
    let (unit, had_b) = match unit.strip_suffix(['B', 'b']) {
        Some(rest) => (rest, true),
        None => (unit, false),
    };
    if unit.is_empty() {
        return had_b.then(|| number.to_owned());
    }
    let lower = unit.to_ascii_lowercase();
    let (letter, binary) = match lower.strip_suffix('i') {
        Some(letter) => (letter, true),
        None => (lower.as_str(), false),
    };
    if letter == "e" && !binary && !had_b {
        // "1e": an exponent cut short, not exa.
        return None;
    }
    let power = ["k", "m", "g", "t", "p", "e"]
        .iter()
        .position(|l| *l == letter)?
        + 1;
    let upper = letter.to_ascii_uppercase();
    if binary {
        return Some(format!("{number}{upper}i"));
    }
    let decimal = if letter == "k" { "k" } else { upper.as_str() };
    Some(format!(
        "{number}{decimal} ({decimal} is 10^{}) or {number}{upper}i ({upper}i is 2^{})",
        power * 3,
        power * 10
    ))
}

#[cfg(test)]
#[path = "bytes_tests.rs"]
mod tests;
