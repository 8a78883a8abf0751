//! The printed forms, pinned to what the CLI, the daemon's messages and the
//! docs show, and the one rounding rule checked against `f64` formatting.

use super::{cell, gib, gib_exact, mib, size};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

#[test]
fn gib_has_one_decimal() {
    assert_eq!(gib(0), "0.0 GiB");
    assert_eq!(gib(20 * GIB), "20.0 GiB");
    assert_eq!(gib(81_559 * MIB), "79.6 GiB");
    assert_eq!(gib(80 * GIB + 9 * GIB / 10), "80.9 GiB");
    // A tie goes to the even tenth, as `{:.1}` prints it.
    assert_eq!(gib(5 * GIB / 4), "1.2 GiB");
    assert_eq!(gib(7 * GIB / 4), "1.8 GiB");
    assert_eq!(
        gib_exact(20 * GIB),
        "20.0 GiB (21474836480 bytes)",
        "a refusal's amount"
    );
}

#[test]
fn size_is_whole_mib_below_a_gib() {
    for (bytes, text) in [
        (0, "0 MiB"),
        (1, "1 MiB"),
        (MIB / 2, "1 MiB"),
        (MIB, "1 MiB"),
        (3 * MIB / 2, "2 MiB"),
        (5 * MIB / 2, "2 MiB"),
        (512 * MIB, "512 MiB"),
        (1023 * MIB, "1023 MiB"),
        (1023 * MIB + MIB / 2, "1.0 GiB"),
        (GIB - 1, "1.0 GiB"),
        (GIB, "1.0 GiB"),
        (6 * GIB, "6.0 GiB"),
        (3 * GIB / 2, "1.5 GiB"),
    ] {
        assert_eq!(size(bytes), text, "{bytes}");
    }
}

#[test]
fn a_cell_shows_nothing_as_0_and_mib_rounds_down() {
    assert_eq!(cell(0), "0");
    assert_eq!(cell(512 * MIB), "512 MiB");
    assert_eq!(cell(12 * GIB), "12.0 GiB");
    assert_eq!(mib(0), "0 MiB");
    assert_eq!(mib(20 * GIB), "20480 MiB");
    assert_eq!(mib(2 * MIB - 1), "1 MiB");
}

/// The MiB of [`size`] are what `{:.0}` prints of the `f64` amount, ties
/// included, everywhere below 1023.5 MiB.
#[test]
fn size_rounds_as_f64_formatting_does() {
    let steps = (0..=2048u64).map(|half| half * MIB / 2);
    let near = steps.flat_map(|b| [b.saturating_sub(1), b, b + 1]);
    for bytes in near.filter(|b| (1..1023 * MIB + MIB / 2).contains(b)) {
        #[expect(clippy::cast_precision_loss, reason = "below 2^30, exact")]
        let f = bytes as f64 / MIB as f64;
        assert_eq!(size(bytes), format!("{:.0} MiB", f.max(1.0)), "{bytes}");
    }
}
