//! Integer quantities in a form the API server writes back unchanged (each
//! is canonical for its own format), so a published slice compares equal to
//! what a later list returns: the largest binary suffix that keeps an integer
//! ("80Gi") or the largest decimal one ("2k", "80G", "132"), whichever is
//! shorter (binary on a tie). And the way back, [`whole_value`], for the
//! amounts the scheduler writes into a claim (consumed capacity). Both are
//! gpuslice-quantity's, the one reader and writer of quantities.

use gpuslice_quantity::Quantity as Exact;
use gpuslice_quantity::bytes::parse_bytes;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// `value` as a canonical Kubernetes quantity string.
pub fn canonical(value: i64) -> String {
    Exact::from_units(value).canonical()
}

/// `value` as a [`Quantity`].
pub fn quantity(value: i64) -> Quantity {
    Quantity(canonical(value))
}

/// A byte amount as a whole number, rounded up as `Quantity.Value()` does:
/// "10Gi", "512Mi", "1.5G", "1e9", "1048576" ([`parse_bytes`]). `None` for
/// what is not a non-negative quantity or does not fit an `i64` (milli and
/// smaller suffixes included).
pub fn whole_value(text: &str) -> Option<i64> {
    parse_bytes(text)
        .ok()
        .and_then(|bytes| i64::try_from(bytes).ok())
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
