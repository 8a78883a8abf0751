//! Splits a selector into its top-level `&&` clauses, as written, so a
//! report can name the one that failed. Pure.
//!
//! A lexical scan that skips string literals (quoted, triple-quoted, raw)
//! and bracketed parts. It splits only when the top level has no `||` and no
//! `?:`, which bind looser than `&&`; otherwise the selector is one clause.

/// The top-level `&&` clauses of `source`, trimmed, in order.
pub fn split(source: &str) -> Vec<String> {
    let tokens = top_level(source);
    let looser = tokens.iter().any(|(_, t)| matches!(*t, "||" | "?"));
    if looser {
        return vec![source.trim().to_owned()];
    }
    let mut clauses = Vec::new();
    let mut start = 0;
    for (at, token) in tokens {
        if token == "&&" {
            clauses.push(source[start..at].trim().to_owned());
            start = at + 2;
        }
    }
    clauses.push(source[start..].trim().to_owned());
    clauses
}

/// Operators found outside brackets and strings: (byte offset, operator).
fn top_level(source: &str) -> Vec<(usize, &'static str)> {
    let bytes = source.as_bytes();
    let mut found = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        match bytes[i] {
            b'"' | b'\'' => {
                i = skip_string(bytes, i);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ if depth == 0 => {
                if let Some(op) = operator(rest, i, bytes) {
                    found.push((i, op));
                    i += op.len();
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

fn operator(rest: &[u8], at: usize, all: &[u8]) -> Option<&'static str> {
    const TWO: [&str; 6] = ["&&", "||", "==", "!=", ">=", "<="];
    if let Some(op) = TWO.iter().find(|op| rest.starts_with(op.as_bytes())) {
        return Some(op);
    }
    let word = |b: Option<&u8>| b.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if rest.starts_with(b"in") && !word(rest.get(2)) && (at == 0 || !word(all.get(at - 1))) {
        return Some("in");
    }
    match rest.first() {
        Some(b'>') => Some(">"),
        Some(b'<') => Some("<"),
        // `?` is the conditional, unless it is optional syntax: `a.?b`.
        Some(b'?') if at == 0 || all[at - 1] != b'.' => Some("?"),
        _ => None,
    }
}

/// The index just past the string literal that starts at `start` (a quote,
/// possibly triple). Escapes are skipped (a raw string has none that matter:
/// `\` before its quote cannot end it early either way for our purpose).
fn skip_string(bytes: &[u8], start: usize) -> usize {
    let quote = bytes[start];
    let triple = bytes.get(start..start + 3) == Some(&[quote; 3][..]);
    let mut i = start + if triple { 3 } else { 1 };
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] == quote {
            if !triple {
                return i + 1;
            }
            if bytes.get(i..i + 3) == Some(&[quote; 3][..]) {
                return i + 3;
            }
        }
        i += 1;
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn splits_only_top_level_ands() {
        assert_eq!(
            split("device.driver == 'a&&b' && (x || y) && f(a && b)"),
            ["device.driver == 'a&&b'", "(x || y)", "f(a && b)"]
        );
        assert_eq!(split("a && b || c"), ["a && b || c"]);
        assert_eq!(split("a && b ? c : d"), ["a && b ? c : d"]);
        assert_eq!(split(" x "), ["x"]);
        assert_eq!(
            split(r#"'''it's && "ok"''' == s && t"#),
            [r#"'''it's && "ok"''' == s"#, "t"]
        );
        assert_eq!(split(r#""a\"&&" == s && t"#), [r#""a\"&&" == s"#, "t"]);
        assert_eq!(split("m.?a && b"), ["m.?a", "b"]);
    }
}
