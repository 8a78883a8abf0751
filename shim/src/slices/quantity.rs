//! Integer quantities in a form the API server writes back unchanged (each
//! is canonical for its own format), so a published slice compares equal to
//! what a later list returns: the largest binary suffix that keeps an integer
//! ("80Gi") or the largest decimal one ("2k", "80G", "132"), whichever is
//! shorter (binary on a tie).

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

#[cfg(test)]
mod tests {
    use super::canonical;

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
}
