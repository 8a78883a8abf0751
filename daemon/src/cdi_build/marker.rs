//! The claim marker: the variable a claim's CDI spec puts into every
//! container of the claim, `GPUSLICE_CLAIM_<uid, '-' as '_'>=<uid>`, so a
//! process can be traced back to its claim (`activity::marker` reads it
//! back).
//!
//! Pure. A name per claim, not one `GPUSLICE_CLAIM=<uid>`: a container given
//! two claims gets both, where one name would keep only the last.

/// The prefix of every claim marker's name.
pub const CLAIM_PREFIX: &str = "GPUSLICE_CLAIM_";

/// The marker's name for claim `uid`: `GPUSLICE_CLAIM_<uid, '-' → '_'>`.
pub fn claim_var_name(uid: &str) -> String {
    format!("{CLAIM_PREFIX}{}", uid.replace('-', "_"))
}

/// The marker of claim `uid` as a CDI env entry, `NAME=uid`.
pub fn claim_env(uid: &str) -> String {
    format!("{}={uid}", claim_var_name(uid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_spells_the_uid_with_underscores() {
        assert_eq!(
            claim_env("0d5f2a1c-3b4e-4f60-8a9b-1c2d3e4f5a6b"),
            "GPUSLICE_CLAIM_0d5f2a1c_3b4e_4f60_8a9b_1c2d3e4f5a6b=0d5f2a1c-3b4e-4f60-8a9b-1c2d3e4f5a6b"
        );
    }
}
