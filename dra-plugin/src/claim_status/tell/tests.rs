//! The access state to what gpusliced takes: every state, and reasons made
//! one line within gpusliced's bound.

use gpuslice_proto::gpuslice::v1 as pb;

use super::{MAX_REASON, MODE_OFF, mode_off, state_of};
use crate::claim_status::access::{FIELD_DROPPED, State};

fn parts(
    state: &pb::ClaimStatusState,
) -> (Result<pb::ClaimStatusAccess, prost::UnknownEnumValue>, &str) {
    (
        pb::ClaimStatusAccess::try_from(state.access),
        state.reason.as_str(),
    )
}

#[test]
fn each_access_state_maps_to_written_off_or_unknown() {
    let refused = "the API server refused the write as system:node:n1 (forbidden)";
    assert_eq!(
        parts(&state_of(&State::Unknown)),
        (Ok(pb::ClaimStatusAccess::Unknown), "")
    );
    assert_eq!(
        parts(&state_of(&State::Enabled)),
        (Ok(pb::ClaimStatusAccess::Written), "")
    );
    let forbidden = state_of(&State::Forbidden(refused.to_owned()));
    assert_eq!(parts(&forbidden), (Ok(pb::ClaimStatusAccess::Off), refused));
    let dropped = state_of(&State::FieldDropped);
    assert_eq!(
        parts(&dropped),
        (Ok(pb::ClaimStatusAccess::Off), FIELD_DROPPED)
    );
    assert_eq!(
        parts(&mode_off()),
        (Ok(pb::ClaimStatusAccess::Off), MODE_OFF)
    );
    assert_eq!(MODE_OFF, "[claim_status] mode = \"off\"");
}

#[test]
fn a_reason_becomes_one_line_within_the_bound_cut_at_a_character() {
    let two_lines = state_of(&State::Forbidden("refused\r\nas someone".to_owned()));
    assert_eq!(two_lines.reason, "refused  as someone");
    for reason in [
        "é".repeat(MAX_REASON),
        "x".repeat(MAX_REASON + 1),
        "é€".repeat(700),
    ] {
        let cut = state_of(&State::Forbidden(reason.clone())).reason;
        assert!(cut.len() <= MAX_REASON, "{} bytes", cut.len());
        assert!(cut.ends_with("..."), "{cut}");
        assert!(reason.starts_with(cut.trim_end_matches("...")));
    }
    let fits = "x".repeat(MAX_REASON);
    assert_eq!(state_of(&State::Forbidden(fits.clone())).reason, fits);
}
