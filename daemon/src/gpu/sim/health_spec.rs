//! The text form of injected health events, one event a line, so a test or an
//! operator can inject them into a running simulated daemon by appending to
//! its health events file (`[backend.sim] health_events`, see `health`).
//!
//! Syntax: space-separated words, `#` starts a comment, blank lines are skipped.
//!
//! * `gpu=N` (required): the GPU's index;
//! * `gi=N`, then optionally `ci=N`: confine the event to that MIG GPU
//!   instance (and compute instance), as NVML attributes MIG errors;
//! * exactly one of `xid=N` (a critical XID), `ecc=double` or `ecc=single`
//!   (an ECC error), `lost` (the GPU fell off the bus) or `recovered` (it
//!   works again).
//!
//! Examples: `gpu=0 xid=79`, `gpu=1 gi=3 ci=0 xid=94`, `gpu=2 lost`,
//! `gpu=0 recovered`. Pure parsing; delivering goes through `health`.

use crate::gpu::HealthEventKind;

/// One parsed line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedEvent {
    /// The GPU's index.
    pub gpu: u32,
    /// The GPU instance, for a MIG-scoped event.
    pub gpu_instance: Option<u32>,
    /// The compute instance within it.
    pub compute_instance: Option<u32>,
    /// What happened.
    pub kind: HealthEventKind,
}

/// A line that cannot be understood, naming it and what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("injected health event {line:?}: {problem}")]
pub struct HealthSpecError {
    /// The offending line.
    pub line: String,
    /// What is wrong, and the accepted forms.
    pub problem: String,
}

/// Parses one line; `Ok(None)` for a blank or comment line.
pub fn parse_line(line: &str) -> Result<Option<InjectedEvent>, HealthSpecError> {
    let text = line.split('#').next().unwrap_or_default().trim();
    if text.is_empty() {
        return Ok(None);
    }
    let bad = |problem: String| HealthSpecError {
        line: line.trim().to_owned(),
        problem,
    };
    let (mut gpu, mut gi, mut ci, mut kind) = (None, None, None, None);
    for word in text.split_whitespace() {
        let number = |value: &str| -> Result<u64, HealthSpecError> {
            value
                .parse::<u64>()
                .map_err(|_| bad(format!("{value:?} in {word:?} is not a whole number")))
        };
        let small = |value: &str| -> Result<u32, HealthSpecError> {
            u32::try_from(number(value)?).map_err(|_| bad(format!("{word:?} is out of range")))
        };
        let event = match word.split_once('=') {
            Some(("gpu", v)) => {
                gpu = Some(small(v)?);
                None
            }
            Some(("gi", v)) => {
                gi = Some(small(v)?);
                None
            }
            Some(("ci", v)) => {
                ci = Some(small(v)?);
                None
            }
            Some(("xid", v)) => Some(HealthEventKind::Xid(number(v)?)),
            Some(("ecc", "double")) => Some(HealthEventKind::DoubleBitEcc),
            Some(("ecc", "single")) => Some(HealthEventKind::SingleBitEcc),
            None if word == "lost" => Some(HealthEventKind::GpuLost),
            None if word == "recovered" => Some(HealthEventKind::Recovered),
            _ => {
                return Err(bad(format!(
                    "unknown word {word:?}; use gpu=N, gi=N, ci=N and one of xid=N, \
                     ecc=double, ecc=single, lost, recovered"
                )));
            }
        };
        if let Some(event) = event
            && kind.replace(event).is_some()
        {
            return Err(bad("more than one event; write one event a line".into()));
        }
    }
    let gpu = gpu.ok_or_else(|| bad("gpu=N is missing".into()))?;
    let kind = kind.ok_or_else(|| {
        bad("no event; add one of xid=N, ecc=double, ecc=single, lost, recovered".into())
    })?;
    if ci.is_some() && gi.is_none() {
        return Err(bad("ci=N needs gi=N".into()));
    }
    Ok(Some(InjectedEvent {
        gpu,
        gpu_instance: gi,
        compute_instance: ci,
        kind,
    }))
}

#[cfg(test)]
mod tests {
    use super::{InjectedEvent, parse_line};
    use crate::gpu::HealthEventKind;

    fn event(gpu: u32, gi: Option<u32>, ci: Option<u32>, kind: HealthEventKind) -> InjectedEvent {
        InjectedEvent {
            gpu,
            gpu_instance: gi,
            compute_instance: ci,
            kind,
        }
    }

    #[test]
    fn parses_every_kind_and_scope() {
        let cases = [
            (
                "gpu=0 xid=79",
                event(0, None, None, HealthEventKind::Xid(79)),
            ),
            (
                "  xid=94 gpu=1 gi=3 ci=0  # a contained ECC error",
                event(1, Some(3), Some(0), HealthEventKind::Xid(94)),
            ),
            (
                "gpu=2 gi=7 ecc=double",
                event(2, Some(7), None, HealthEventKind::DoubleBitEcc),
            ),
            (
                "gpu=2 ecc=single",
                event(2, None, None, HealthEventKind::SingleBitEcc),
            ),
            ("gpu=3 lost", event(3, None, None, HealthEventKind::GpuLost)),
            (
                "gpu=0 recovered",
                event(0, None, None, HealthEventKind::Recovered),
            ),
        ];
        for (line, wanted) in cases {
            assert_eq!(parse_line(line), Ok(Some(wanted)), "{line}");
        }
        assert_eq!(parse_line(""), Ok(None));
        assert_eq!(parse_line("   # only a comment"), Ok(None));
    }

    #[test]
    fn refuses_with_the_line_and_the_fix() {
        let cases = [
            ("xid=79", "gpu=N is missing"),
            ("gpu=0", "no event"),
            ("gpu=0 xid=79 lost", "more than one event"),
            ("gpu=0 ci=1 xid=79", "ci=N needs gi=N"),
            ("gpu=x xid=79", "\"x\" in \"gpu=x\" is not a whole number"),
            ("gpu=99999999999 lost", "out of range"),
            ("gpu=0 ecc=triple", "unknown word \"ecc=triple\""),
            ("gpu=0 melted", "unknown word"),
        ];
        for (line, wanted) in cases {
            let err = parse_line(line).unwrap_err();
            assert_eq!(err.line, line);
            let msg = err.to_string();
            assert!(msg.contains(wanted), "{line}: {msg}");
        }
    }
}
