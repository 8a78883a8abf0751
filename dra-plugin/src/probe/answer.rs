//! How an API server's error answer reads, whatever the request: a refusal
//! it will give again to the same request (a verdict), or nothing decided.
//! The only reading of HTTP codes in the plugin: the MIG-form probe, the
//! claim-status probe and writes, and the publisher's writes all call
//! [`refusal`].
//!
//! | code | reading | why |
//! | --- | --- | --- |
//! | 400, 422 | [`Verdict::Invalid`] | what was sent: a field invalid, or refused by validation or admission; the same body gets the same answer |
//! | 403 | [`Verdict::Forbidden`] | who sent it: authorization or admission refuses that identity |
//! | 401 | [`Verdict::Forbidden`] | the credentials are not taken. kube renews what rotates (a token file read again, an exec plugin run again) before it sends, so a 401 is about credentials the API server will not take, and the remedy is a 403's (another kubeconfig or token); whoever checks a 403 again checks a 401 again |
//! | 404 | [`Verdict::Gone`] | what the request names: the object, or the resource in that group version; a built-in resource is served or not by the API server's flags, which change only with a restart of it (seen by the plugin as a relist of its watch) |
//! | 409 with the uid precondition message | [`Verdict::Gone`] | the object named is another one of that name now |
//! | any other 409, 408, 429, 5xx, other codes, no answer | none | may pass: a name `generateName` drew that is taken, a stale resourceVersion, a timeout, a rate limit, a server error; retried with backoff |
//!
//! A verdict says something about the request, never about the API server
//! at large: which verdicts matter to a question is the asker's call (the
//! MIG-form probe takes each as the layout, the claim-status access only
//! a [`Verdict::Forbidden`]).

/// What a lasting refusal is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// 400, 422: the body (a field invalid or refused).
    Invalid,
    /// 401, 403: the identity.
    Forbidden,
    /// 404, or 409 from a uid precondition: the object named.
    Gone,
}

/// A refusal the API server will repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What it is about.
    pub verdict: Verdict,
    /// The HTTP code.
    pub code: u16,
    /// The API server's message.
    pub message: String,
}

/// The API server's message when a uid precondition fails (storage's
/// `Preconditions.Check`, answered as a 409 Conflict).
const UID_PRECONDITION: &str = "Precondition failed: UID in precondition";

/// The refusal an error answer carries; None when it decides nothing.
pub fn refusal(error: &kube::Error) -> Option<Refusal> {
    let kube::Error::Api(status) = error else {
        return None;
    };
    let verdict = verdict(status.code, &status.message)?;
    Some(Refusal {
        verdict,
        code: status.code,
        message: status.message.clone(),
    })
}

/// The verdict of an HTTP code and message (the table above).
pub fn verdict(code: u16, message: &str) -> Option<Verdict> {
    match code {
        400 | 422 => Some(Verdict::Invalid),
        401 | 403 => Some(Verdict::Forbidden),
        404 => Some(Verdict::Gone),
        409 if message.contains(UID_PRECONDITION) => Some(Verdict::Gone),
        _ => None,
    }
}

/// The first line of an API message, at most `chars` characters.
pub fn first_line(message: &str, chars: usize) -> String {
    let line = message.lines().next().unwrap_or_default();
    line.chars().take(chars).collect()
}
