//! Durations as an operator types and reads them: `90s`, `30m`, `1h30m`,
//! `1d`; "12s ago". Pure. Sizes are gpuslice-quantity's: typed as
//! Kubernetes quantities (`bytes::parse_bytes`: `4Gi`, `512Mi`), printed by
//! `show` ("6.0 GiB"; `show::cell` in a table).

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

#[cfg(test)]
mod tests {
    use super::{ago, parse_duration, span};

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
}
