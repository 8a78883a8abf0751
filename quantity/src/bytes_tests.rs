//! Byte counts: every Kubernetes suffix with its Kubernetes meaning, and
//! other tools' spellings refused with what to write.

use super::{BytesError, parse_bytes};
use crate::QuantityError;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

#[test]
fn decimal_and_binary_suffixes_mean_what_kubernetes_means() {
    for (text, bytes) in [
        ("4G", 4_000_000_000),
        ("4Gi", 4 * GIB),
        ("512M", 512_000_000),
        ("512Mi", 512 * MIB),
        ("2k", 2_000),
        ("2Ki", 2_048),
        ("1T", 1_000_000_000_000),
        ("1Ti", 1 << 40),
        ("1.5Gi", 3 * GIB / 2),
        ("1e9", 1_000_000_000),
        ("1048576", MIB),
        ("0", 0),
        (" 10Gi ", 10 * GIB),
        ("+1Mi", MIB),
    ] {
        assert_eq!(parse_bytes(text), Ok(bytes), "{text}");
    }
}

#[test]
fn a_fraction_of_a_byte_rounds_up() {
    assert_eq!(parse_bytes("0.5"), Ok(1));
    assert_eq!(parse_bytes("1.0000001k"), Ok(1_001));
    assert_eq!(parse_bytes("1e-3"), Ok(1));
}

#[test]
fn other_spellings_are_refused_with_what_to_write() {
    for (text, write) in [
        ("4GiB", "4Gi"),
        ("512MiB", "512Mi"),
        ("1.5GiB", "1.5Gi"),
        ("4KiB", "4Ki"),
        ("4gi", "4Gi"),
        ("4 GiB", "4Gi"),
        ("4096B", "4096"),
        ("4GB", "4G (G is 10^9) or 4Gi (Gi is 2^30)"),
        ("4K", "4k (k is 10^3) or 4Ki (Ki is 2^10)"),
        ("2kB", "2k (k is 10^3) or 2Ki (Ki is 2^10)"),
        ("4mb", "4M (M is 10^6) or 4Mi (Mi is 2^20)"),
        ("1TB", "1T (T is 10^12) or 1Ti (Ti is 2^40)"),
    ] {
        assert_eq!(
            parse_bytes(text),
            Err(BytesError::Spelling {
                text: text.trim().to_owned(),
                write: write.to_owned()
            }),
            "{text}"
        );
    }
    let message = parse_bytes("4GiB").map_err(|e| e.to_string());
    assert_eq!(
        message,
        Err("\"4GiB\" is not a Kubernetes quantity: write 4Gi".to_owned())
    );
}

#[test]
fn what_is_no_byte_count_is_refused_and_says_why() {
    assert_eq!(
        parse_bytes("10m"),
        Err(BytesError::Fraction("10m".to_owned()))
    );
    assert_eq!(
        parse_bytes("-1Gi"),
        Err(BytesError::Negative("-1Gi".to_owned()))
    );
    assert_eq!(
        parse_bytes("99999999999Ei"),
        Err(BytesError::TooLarge("99999999999Ei".to_owned()))
    );
    assert_eq!(
        parse_bytes("lots"),
        Err(BytesError::Quantity(QuantityError::Syntax(
            "lots".to_owned()
        )))
    );
    for bad in ["", "Gi", "GiB", "1.2.3", "4XB", "1e", "4 PiB x"] {
        assert!(
            matches!(parse_bytes(bad), Err(BytesError::Quantity(_))),
            "{bad}: {:?}",
            parse_bytes(bad)
        );
    }
}
