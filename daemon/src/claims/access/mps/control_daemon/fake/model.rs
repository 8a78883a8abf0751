//! What NVIDIA's control daemon (550.163.01) answers to the commands the
//! fakes know, as a pure state machine: the in-process [`super::FakeMps`]
//! answers with it, `tests/tools/fake-mps-control` (Python) follows the same
//! rules, and both are held to `tests/tools/fake-mps-control.transcript`,
//! which the real daemon answers too (`tests/e2e/mps_real/`).
//!
//! The rules, as the real daemon showed them:
//! - a command is its first word (after blanks); the rest is read the way C
//!   reads it: a percentage by `strtod` (`50abc` is 50, `0x10` is 16), a
//!   device ordinal by `sscanf("%d%s")` (no number: device 0, no value), a
//!   limit by `strtol` with `G`/`g` right after the digits for GiB, anything
//!   else MiB (`4GB` is 4 GiB, `1T` 1 MiB, 0 clears);
//! - percentages in (0, 100] are kept, others refused with the old value
//!   answered, all printed as `%.1f`;
//! - ordinals 0..=31; a pinned limit reads back rounded down to whole GiB
//!   (`<n>G`) from 1 GiB up, `<n>M` below, nothing when unset;
//! - an unknown command answers `Unknown command "<first word>"`.

use crate::claims::mps_daemon::limits::MAX_ORDINALS;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// One daemon's settings.
#[derive(Debug, Clone)]
pub struct DaemonModel {
    /// The default active thread percentage.
    percentage: f64,
    /// Pinned limits in bytes, by ordinal.
    pinned: [Option<u64>; MAX_ORDINALS],
    /// The default client priority, 0 or 1.
    priority: i64,
}

/// What one command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// An answer (empty: the client prints nothing).
    Answer(String),
    /// `quit`: the daemon exits (status 0), answering nothing.
    Quit,
}

impl DaemonModel {
    /// A daemon started with `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` = `env`
    /// (invalid or unset: 100).
    pub fn new(env: Option<&str>) -> Self {
        let percentage = env
            .map(strtod)
            .filter(|p| valid_percentage(*p))
            .unwrap_or(100.0);
        Self {
            percentage,
            pinned: [None; MAX_ORDINALS],
            priority: 0,
        }
    }

    /// The reply to one command line (as sent, without its newline).
    pub fn reply(&mut self, line: &str) -> Reply {
        let trimmed = line.trim_start();
        let name = trimmed.split_whitespace().next().unwrap_or("");
        let rest = &trimmed[name.len()..];
        let answer = match name {
            "quit" => return Reply::Quit,
            "get_server_list" | "get_device_client_list" => String::new(),
            "get_default_active_thread_percentage" => format!("{:.1}", self.percentage),
            "set_default_active_thread_percentage" => {
                let asked = strtod(rest);
                if valid_percentage(asked) {
                    self.percentage = asked;
                }
                format!("{:.1}", self.percentage)
            }
            "set_default_device_pinned_mem_limit" => {
                let (ordinal, value) = ordinal_and_value(rest);
                if let Some(slot) = self.slot(ordinal) {
                    let bytes = limit_bytes(value);
                    *slot = (bytes != 0).then_some(bytes);
                }
                String::new()
            }
            "get_default_device_pinned_mem_limit" => {
                let (ordinal, _) = ordinal_and_value(rest);
                self.slot(ordinal)
                    .and_then(|s| *s)
                    .map_or_else(String::new, |bytes| {
                        if bytes >= GIB {
                            format!("{}G", bytes / GIB)
                        } else {
                            format!("{}M", bytes / MIB)
                        }
                    })
            }
            "get_default_client_priority" => self.priority.to_string(),
            "set_default_client_priority" => match leading_int(rest) {
                Some(p @ (0 | 1)) => {
                    self.priority = p;
                    String::new()
                }
                Some(_) => "Invalid priority value - must be 0 or 1!".to_owned(),
                None => String::new(),
            },
            "get_server_status" => leading_int(rest).map_or_else(
                || "A server PID is required".to_owned(),
                |pid| format!("Server {pid} not found"),
            ),
            "get_client_list" => format!("Server {} not found", leading_int(rest).unwrap_or(0)),
            "ps" if rest.trim().is_empty() => "Server not found".to_owned(),
            _ => format!("Unknown command \"{name}\""),
        };
        Reply::Answer(answer)
    }

    fn slot(&mut self, ordinal: i64) -> Option<&mut Option<u64>> {
        usize::try_from(ordinal)
            .ok()
            .and_then(|i| self.pinned.get_mut(i))
    }
}

fn valid_percentage(p: f64) -> bool {
    p > 0.0 && p <= 100.0
}

/// `sscanf(rest, "%d%s")`: the ordinal (0 when there is no number; an int,
/// so wider numbers wrap) and the word after it.
fn ordinal_and_value(rest: &str) -> (i64, &str) {
    let (negative, digits, after) = split_number(rest.trim_start());
    if digits.is_empty() {
        return (0, "");
    }
    let magnitude = digits.parse::<i64>().unwrap_or(i64::MAX);
    let ordinal = i64::from(wrap_i32(if negative { -magnitude } else { magnitude }));
    (ordinal, after.split_whitespace().next().unwrap_or(""))
}

/// A limit: `strtol` of `value`, GiB when `G`/`g` follows the digits, MiB
/// otherwise; bytes as the daemon's unsigned 64-bit count (a negative
/// number wraps).
fn limit_bytes(value: &str) -> u64 {
    let (negative, digits, after) = split_number(value.trim_start());
    let magnitude = digits.parse::<u64>().unwrap_or(0);
    let unit = if after.starts_with(['G', 'g']) {
        GIB
    } else {
        MIB
    };
    let bytes = magnitude.wrapping_mul(unit);
    if negative {
        bytes.wrapping_neg()
    } else {
        bytes
    }
}

/// The leading integer of `rest`, as `sscanf("%d")` reads it.
fn leading_int(rest: &str) -> Option<i64> {
    let (negative, digits, _) = split_number(rest.trim_start());
    let magnitude: i64 = digits.parse().ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

/// An optional sign, the decimal digits after it, and what follows them.
fn split_number(text: &str) -> (bool, &str, &str) {
    let negative = text.starts_with('-');
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let end = unsigned
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(unsigned.len());
    (negative, &unsigned[..end], &unsigned[end..])
}

fn wrap_i32(n: i64) -> i32 {
    // The low 32 bits, as C's conversion to int keeps them.
    i32::from_ne_bytes(n.to_ne_bytes()[..4].try_into().unwrap_or([0; 4]))
}

/// C's `strtod` on the start of `text`: decimal or hexadecimal, `inf`,
/// `nan`; 0 when no number starts it.
fn strtod(text: &str) -> f64 {
    let text = text.trim_start();
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let lower = body.to_ascii_lowercase();
    let value = if lower.starts_with("inf") {
        f64::INFINITY
    } else if lower.starts_with("nan") {
        f64::NAN
    } else if let Some(hex) = lower
        .strip_prefix("0x")
        .filter(|h| h.starts_with(|c: char| c.is_ascii_hexdigit()))
    {
        hex_prefix(hex)
    } else {
        decimal_prefix(body)
    };
    if negative { -value } else { value }
}

/// The longest decimal float at the start of `body`, parsed.
fn decimal_prefix(body: &str) -> f64 {
    let bytes = body.as_bytes();
    let digits = |from: usize| {
        bytes[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let int = digits(0);
    let mut end = int;
    let mut mantissa_digits = int;
    if bytes.get(end) == Some(&b'.') {
        let frac = digits(end + 1);
        mantissa_digits += frac;
        end += 1 + frac;
    }
    if mantissa_digits == 0 {
        return 0.0;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(end + 1), Some(b'+' | b'-')));
        let exp = digits(end + 1 + sign);
        if exp > 0 {
            end += 1 + sign + exp;
        }
    }
    body[..end].parse().unwrap_or(0.0)
}

/// The hexadecimal digits (integer part only) at the start of `hex`.
fn hex_prefix(hex: &str) -> f64 {
    hex.chars()
        .map_while(|c| c.to_digit(16))
        .fold(0.0, |acc, d| acc * 16.0 + f64::from(d))
}

#[cfg(test)]
mod tests;
