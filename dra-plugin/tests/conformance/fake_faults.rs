//! The fake API server's fault mode: writes (every POST, PUT, PATCH and
//! DELETE, dry runs included; never a GET, so lists, discovery and watches
//! are served) answered with a transient error instead of being served.
//! Two sources, in this order:
//! - [`Faults::script`]: the answers for the next writes, one each (a code,
//!   or None: served), for a test that needs exact failures at exact
//!   places;
//! - [`Faults::percent`]: that share of the remaining writes, each failed
//!   with one of [`Faults::codes`], both drawn from a generator seeded by
//!   [`Faults::seeded`], so a run fails the same writes of the same
//!   sequence (which writes a plugin sends still depends on its timing).
//!
//! Each answer is a `Status` with the reason the real API server gives for
//! the code (409 `AlreadyExists` for a create, `Conflict` otherwise; 429
//! `TooManyRequests`, without a Retry-After header; 500 `InternalError`;
//! 503 `ServiceUnavailable`; and the refusals a script may ask for: 400,
//! 401, 403, 404, 408, 422). Every failed write is logged in
//! [`Faults::failed`].

use std::collections::VecDeque;

use serde_json::{Value, json};

/// The transient errors of the measurement: a name clash or a stale
/// version, a rate limit, a server error, an unavailable server.
pub const TRANSIENT: [u16; 4] = [409, 429, 500, 503];

/// The fault mode's settings and what it did.
#[derive(Debug)]
pub struct Faults {
    /// The next writes' codes in order (None: served), before the share
    /// applies.
    pub script: VecDeque<Option<u16>>,
    /// Percent of the other writes failed (0: none).
    pub percent: u32,
    /// The codes a failed write is answered with, one drawn per write.
    pub codes: Vec<u16>,
    rng: fastrand::Rng,
    /// Writes seen, failed or not.
    pub writes: usize,
    /// "METHOD target code" of every write failed (the target with its
    /// query: `dryRun=All` marks a dry run).
    pub failed: Vec<String>,
}

impl Default for Faults {
    fn default() -> Self {
        Self::seeded(0, 0, &TRANSIENT)
    }
}

impl Faults {
    /// Fails `percent` of writes with `codes`, drawn from a generator
    /// seeded with `seed`.
    pub fn seeded(seed: u64, percent: u32, codes: &[u16]) -> Self {
        Self {
            script: VecDeque::new(),
            percent,
            codes: codes.to_vec(),
            rng: fastrand::Rng::with_seed(seed),
            writes: 0,
            failed: Vec::new(),
        }
    }

    /// The answer to a request, when the fault mode fails it.
    pub fn answer(&mut self, method: &str, target: &str) -> Option<(u16, Value)> {
        if method == "GET" {
            return None;
        }
        self.writes += 1;
        let code = match self.script.pop_front() {
            Some(Some(code)) => code,
            Some(None) => return None,
            None if self.percent > 0 && self.rng.u32(0..100) < self.percent => {
                *self.codes.get(self.rng.usize(0..self.codes.len().max(1)))?
            }
            None => return None,
        };
        self.failed.push(format!("{method} {target} {code}"));
        Some((code, status(method, code)))
    }
}

/// The Status the real API server answers with for `code`.
fn status(method: &str, code: u16) -> Value {
    let (reason, message) = match code {
        409 if method == "POST" => ("AlreadyExists", "object already exists (injected)"),
        409 => (
            "Conflict",
            "the object has been modified; please apply your changes to the latest version and try again (injected)",
        ),
        400 => ("BadRequest", "bad request (injected)"),
        401 => ("Unauthorized", "Unauthorized (injected)"),
        403 => ("Forbidden", "forbidden (injected)"),
        404 => ("NotFound", "not found (injected)"),
        408 => ("Timeout", "request timed out (injected)"),
        422 => ("Invalid", "invalid (injected)"),
        429 => ("TooManyRequests", "too many requests (injected)"),
        503 => ("ServiceUnavailable", "service unavailable (injected)"),
        _ => ("InternalError", "internal error (injected)"),
    };
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
           "reason": reason, "code": code, "message": message})
}
