//! Reading a process's environment (`/proc/<pid>/environ`, NUL-separated)
//! back into the claims its markers name. Nothing in an environment makes a
//! process gpuslice's own: any process can set any variable (the daemons
//! gpusliced keeps are known by pid, [`crate::claims::NodeReads`]). The
//! marker itself, `GPUSLICE_CLAIM_<uid, '-' as '_'>=<uid>`, is named in
//! [`crate::cdi_build::marker`], which puts it into every container of a
//! claim.
//!
//! Pure. A variable counts only when its name and value agree (the value is
//! the uid the name spells), so a user's `GPUSLICE_CLAIM_X=y` names nothing.

use std::collections::BTreeSet;

use crate::cdi_build::marker::CLAIM_PREFIX;
#[cfg(test)]
use crate::cdi_build::marker::{claim_env, claim_var_name};

/// What a process's environment says about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvironMarks {
    /// The claim uids its markers name, sorted.
    pub claims: BTreeSet<String>,
}

/// Reads a NUL-separated environment block. Entries that are not UTF-8, not
/// `NAME=VALUE`, or markers whose name and value disagree are ignored.
pub fn parse_environ(block: &[u8]) -> EnvironMarks {
    let mut marks = EnvironMarks::default();
    for entry in block.split(|b| *b == 0) {
        let Ok(entry) = std::str::from_utf8(entry) else {
            continue;
        };
        let Some((name, value)) = entry.split_once('=') else {
            continue;
        };
        if let Some(uid) = claim_of(name, value) {
            marks.claims.insert(uid.to_owned());
        }
    }
    marks
}

/// The uid a marker names, when `name` is the marker of `value`.
fn claim_of<'a>(name: &str, value: &'a str) -> Option<&'a str> {
    let spelled = name.strip_prefix(CLAIM_PREFIX)?;
    let agrees = !value.is_empty()
        && spelled.len() == value.len()
        && spelled
            .bytes()
            .zip(value.bytes())
            .all(|(n, v)| n == if v == b'-' { b'_' } else { v });
    agrees.then_some(value)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const UID: &str = "0d5f2a1c-3b4e-4f60-8a9b-1c2d3e4f5a6b";

    fn block(vars: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for var in vars {
            out.extend_from_slice(var.as_bytes());
            out.push(0);
        }
        out
    }

    #[test]
    fn an_environment_names_its_claims_and_nothing_else() {
        let other = "11111111-2222-4333-8444-555555555555";
        let marks = parse_environ(&block(&[
            "PATH=/usr/bin",
            &claim_env(UID),
            &claim_env(other),
            "GPUSLICE_CLAIM_x=y",
            "GPUSLICE_CLAIM_11111111_2222_4333_8444_555555555556=11111111-2222-4333-8444-555555555555",
            "GPUSLICE_CLAIM_=",
            "NOEQUALS",
        ]));
        let want: BTreeSet<String> = [UID, other].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(marks.claims, want);
    }

    #[test]
    fn a_daemon_marker_a_tenant_sets_names_nothing() {
        // What gpusliced sets in its MPS daemons' environment: a process of
        // a container may set it too, so it makes nothing gpuslice's own.
        let marks = parse_environ(&block(&["GPUSLICE_MPS_DAEMON=/run/gpuslice/mps/ab"]));
        assert_eq!(marks, EnvironMarks::default());
    }

    #[test]
    fn a_block_without_a_trailing_nul_or_with_bad_bytes_still_parses() {
        let mut raw = block(&["A=\u{1}"]);
        raw.extend_from_slice(&[0xff, 0xfe, 0]);
        raw.extend_from_slice(claim_env(UID).as_bytes());
        assert!(parse_environ(&raw).claims.contains(UID));
        assert_eq!(parse_environ(b""), EnvironMarks::default());
    }

    proptest! {
        /// Whatever surrounds it, a claim's own marker is read back as
        /// that claim, and a value that differs from the name never is.
        #[test]
        fn a_marker_round_trips_among_any_variables(
            uid in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            noise in proptest::collection::vec("[A-Za-z_]{1,12}=[ -~]{0,20}", 0..8),
            at in 0usize..8,
            wrong in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        ) {
            let mut vars: Vec<String> = noise
                .into_iter()
                .filter(|v| !v.starts_with(CLAIM_PREFIX))
                .collect();
            let at = at.min(vars.len());
            vars.insert(at, claim_env(&uid));
            vars.push(format!("{}={wrong}", claim_var_name(&uid)));
            let refs: Vec<&str> = vars.iter().map(String::as_str).collect();
            let marks = parse_environ(&block(&refs));
            let mut want = BTreeSet::from([uid.clone()]);
            if wrong == uid {
                want.insert(wrong);
            }
            prop_assert_eq!(marks.claims, want);
        }
    }
}
