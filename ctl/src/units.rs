//! Durations and sizes as an operator types and reads them: `90s`, `30m`,
//! `1h30m`, `1d`; `4GiB`, `512MiB`; "12s ago", "6.0 GiB". Pure.

/// A duration like `90s`, `30m`, `2h`, `1d`, `1h30m` or `0s`, in seconds:
/// one or more number-unit pairs (units s, m, h, d, w), or `0`.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "{text:?} is not a duration: write a number and a unit, e.g. 90s, 30m, 2h, 1d, 1h30m"
        )
    };
    let text = text.trim();
    if text == "0" {
        return Ok(0);
    }
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit: u64 = match c {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            'w' => 7 * 86_400,
            _ => return Err(bad()),
        };
        let n: u64 = number.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(bad)?;
        number.clear();
    }
    if !number.is_empty() || text.is_empty() {
        return Err(bad());
    }
    Ok(total)
}

/// A size like `4GiB`, `512MiB`, `4G` or `1000000`, in bytes. Binary units
/// (KiB, MiB, GiB, TiB) and decimal ones (KB, MB, GB, TB; K, M, G, T alone
/// read as binary, as nvidia-smi and Kubernetes quantities `Gi` do).
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let bad = || format!("{text:?} is not a size: e.g. 4GiB, 512MiB, 1073741824");
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "Ki" | "KiB" => 1 << 10,
        "M" | "Mi" | "MiB" => 1 << 20,
        "G" | "Gi" | "GiB" => 1 << 30,
        "T" | "Ti" | "TiB" => 1 << 40,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        _ => return Err(bad()),
    };
    match number.split_once('.') {
        None => number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(unit))
            .ok_or_else(bad),
        // A fraction (1.5GiB): whole bytes, rounded down.
        Some((whole, frac)) if !frac.is_empty() && frac.len() <= 9 => {
            let whole: u64 = if whole.is_empty() {
                0
            } else {
                whole.parse().map_err(|_| bad())?
            };
            let digits: u64 = frac.parse().map_err(|_| bad())?;
            let scale = 10_u64.pow(u32::try_from(frac.len()).map_err(|_| bad())?);
            let part = u128::from(digits) * u128::from(unit) / u128::from(scale);
            whole
                .checked_mul(unit)
                .and_then(|w| w.checked_add(u64::try_from(part).ok()?))
                .ok_or_else(bad)
        }
        Some(_) => Err(bad()),
    }
}

/// A span of seconds in its two largest units: "45s", "12m", "2h5m", "3d4h".
pub fn span(seconds: i64) -> String {
    let s = seconds.max(0);
    let (d, h, m) = (s / 86_400, s % 86_400 / 3_600, s % 3_600 / 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, m) => format!("{m}m"),
        (0, h, 0) => format!("{h}h"),
        (0, h, m) => format!("{h}h{m}m"),
        (d, 0, _) => format!("{d}d"),
        (d, h, _) => format!("{d}d{h}h"),
    }
}

/// When `at` (Unix seconds) was, seen from `now`: "12s ago", or "never".
pub fn ago(at: Option<i64>, now: i64) -> String {
    match at {
        Some(at) => format!("{} ago", span(now - at)),
        None => "never".to_owned(),
    }
}

/// Bytes for a column: "0", "512 MiB", "6.0 GiB".
pub fn size(bytes: u64) -> String {
    const MIB: f64 = (1u64 << 20) as f64;
    const GIB: f64 = (1u64 << 30) as f64;
    let b = bytes as f64;
    if bytes == 0 {
        "0".to_owned()
    } else if b < GIB {
        format!("{:.0} MiB", (b / MIB).max(1.0))
    } else {
        format!("{:.1} GiB", b / GIB)
    }
}

#[cfg(test)]
mod tests {
    use super::{ago, parse_bytes, parse_duration, size, span};

    #[test]
    fn durations_in_every_unit_and_combined() {
        let cases = [
            ("90s", 90),
            ("30m", 1_800),
            ("2h", 7_200),
            ("1d", 86_400),
            ("1h30m", 5_400),
            ("1d2h3m4s", 93_784),
            ("0s", 0),
            ("0", 0),
            ("2w", 1_209_600),
        ];
        for (text, seconds) in cases {
            assert_eq!(parse_duration(text), Ok(seconds), "{text}");
        }
        for bad in [
            "",
            "30",
            "m",
            "1.5h",
            "30x",
            "h30",
            "-5m",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn sizes_binary_decimal_and_fractions() {
        let gib = 1u64 << 30;
        let cases = [
            ("4GiB", 4 * gib),
            ("4G", 4 * gib),
            ("4Gi", 4 * gib),
            ("512MiB", 512 << 20),
            ("1.5GiB", gib + gib / 2),
            ("2GB", 2_000_000_000),
            ("1000", 1_000),
            ("0", 0),
        ];
        for (text, bytes) in cases {
            assert_eq!(parse_bytes(text), Ok(bytes), "{text}");
        }
        for bad in [
            "",
            "GiB",
            "4 PiB",
            "4XB",
            "1.GiB",
            "-1GiB",
            "99999999999TiB",
        ] {
            assert!(parse_bytes(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn spans_and_ages_read_like_top() {
        assert_eq!(span(0), "0s");
        assert_eq!(span(45), "45s");
        assert_eq!(span(720), "12m");
        assert_eq!(span(7_200), "2h");
        assert_eq!(span(7_500), "2h5m");
        assert_eq!(span(86_400 * 3 + 3_600 * 4 + 59), "3d4h");
        assert_eq!(span(86_400), "1d");
        assert_eq!(span(-5), "0s", "a clock step back is not negative");
        assert_eq!(ago(Some(88), 100), "12s ago");
        assert_eq!(ago(None, 100), "never");
    }

    #[test]
    fn sizes_print_short() {
        assert_eq!(size(0), "0");
        assert_eq!(size(1), "1 MiB");
        assert_eq!(size(512 << 20), "512 MiB");
        assert_eq!(size(6 << 30), "6.0 GiB");
        assert_eq!(size((3 << 30) / 2), "1.5 GiB");
    }
}
