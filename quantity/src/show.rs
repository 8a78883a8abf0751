//! Byte amounts as gpuslice prints them for people, in every binary: "6.0
//! GiB", "512 MiB", "20.0 GiB (21474836480 bytes)". Pure.
//!
//! One rule: binary units (a GiB is 2^30 bytes, as `Gi`), GiB with one
//! decimal, MiB whole, each to the nearest, a tie to the even digit (as
//! Rust's `{:.1}` and `{:.0}` print an `f64`). [`size`] picks MiB below a
//! GiB and never shows a non-zero amount as 0 MiB or 1024 MiB. What a
//! person types is read by [`crate::bytes`], with Kubernetes' suffixes;
//! what is printed here is for reading, never parsed back.

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// "6.0 GiB": always GiB, to the nearest tenth.
pub fn gib(bytes: u64) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "a tenth of a GiB; exact below 8 PiB"
    )]
    let gib = bytes as f64 / GIB as f64;
    format!("{gib:.1} GiB")
}

/// "20.0 GiB (21474836480 bytes)": readable, and exact (refusals).
pub fn gib_exact(bytes: u64) -> String {
    format!("{} ({bytes} bytes)", gib(bytes))
}

/// "0 MiB", "512 MiB", "6.0 GiB": whole MiB below a GiB (at least 1 MiB
/// when not zero), [`gib`] from there.
pub fn size(bytes: u64) -> String {
    if bytes == 0 {
        return "0 MiB".to_owned();
    }
    let (whole, rest) = (bytes / MIB, bytes % MIB);
    let up = rest > MIB / 2 || (rest == MIB / 2 && whole % 2 == 1);
    let mib = (whole + u64::from(up)).max(1);
    if mib < 1024 {
        format!("{mib} MiB")
    } else {
        gib(bytes)
    }
}

/// [`size`] in a table cell, where nothing reads "0".
pub fn cell(bytes: u64) -> String {
    if bytes == 0 {
        "0".to_owned()
    } else {
        size(bytes)
    }
}

/// "20480 MiB": always whole MiB, rounded down, as the DRA plugin's claim
/// status reports its figures (so its words and its numbers agree).
pub fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes / MIB)
}

#[cfg(test)]
#[path = "show_tests.rs"]
mod tests;
