//! The reading of every answer: which codes are verdicts and on what, and
//! which decide nothing; a finding from an answer.

use kube::error::Status;

use super::answer::{first_line, refusal, verdict};
use super::{Finding, Refusal, Verdict};

fn api_error(code: u16, message: &str) -> kube::Error {
    kube::Error::Api(
        Status {
            code,
            message: message.to_owned(),
            ..Status::default()
        }
        .boxed(),
    )
}

const UID_CONFLICT: &str = "Operation cannot be fulfilled on resourceclaims.resource.k8s.io \
     \"a\": Precondition failed: UID in precondition: 9, UID in object meta: 1";

#[test]
fn only_invalid_forbidden_and_gone_are_verdicts() {
    for (code, want) in [
        (400, Some(Verdict::Invalid)),
        (422, Some(Verdict::Invalid)),
        (401, Some(Verdict::Forbidden)),
        (403, Some(Verdict::Forbidden)),
        (404, Some(Verdict::Gone)),
        // A name generateName drew that is taken, a stale resourceVersion:
        // the next try may pass.
        (409, None),
        (408, None),
        (429, None),
        (500, None),
        (502, None),
        (503, None),
        (504, None),
        // Anything not in the table decides nothing either.
        (405, None),
        (410, None),
        (413, None),
    ] {
        assert_eq!(verdict(code, "already exists"), want, "{code}");
        let read = refusal(&api_error(code, "m"));
        assert_eq!(read.as_ref().map(|r| r.verdict), want, "{code}");
        if let Some(r) = read {
            assert_eq!((r.code, r.message.as_str()), (code, "m"));
        }
    }
}

#[test]
fn a_409_from_a_uid_precondition_says_the_object_is_another_one() {
    assert_eq!(verdict(409, UID_CONFLICT), Some(Verdict::Gone));
    // The same code without that message stays undecided.
    assert_eq!(
        verdict(
            409,
            "the object has been modified; please apply your changes to the latest version"
        ),
        None
    );
    assert_eq!(
        verdict(
            409,
            "resourceslices \"node-1-gpu.nvidia.com-x\" already exists"
        ),
        None
    );
}

#[test]
fn an_error_without_an_answer_decides_nothing() {
    let transport = kube::Error::Service("connection refused".into());
    assert_eq!(refusal(&transport), None);
    let undecided = Finding::of::<()>(Err(transport), |()| true);
    assert!(
        matches!(undecided, Err(kube::Error::Service(_))),
        "{undecided:?}"
    );
}

#[test]
fn a_finding_is_kept_dropped_refused_or_no_finding() {
    let kept = |n: &u32| *n > 0;
    assert_eq!(Finding::of(Ok(1), kept).ok(), Some(Finding::Kept));
    assert_eq!(Finding::of(Ok(0), kept).ok(), Some(Finding::Dropped));
    assert_eq!(
        Finding::of(Err(api_error(422, "spec.sharedCounters: Forbidden")), kept).ok(),
        Some(Finding::Refused(Refusal {
            verdict: Verdict::Invalid,
            code: 422,
            message: "spec.sharedCounters: Forbidden".to_owned(),
        }))
    );
    for code in [408, 409, 429, 500, 503] {
        let found = Finding::of(Err(api_error(code, "transient")), kept);
        assert!(
            matches!(&found, Err(kube::Error::Api(s)) if s.code == code),
            "{code}: {found:?}"
        );
    }
}

#[test]
fn a_message_is_cut_to_its_first_line() {
    assert_eq!(first_line("one\ntwo", 200), "one");
    assert_eq!(first_line("abcdef", 3), "abc");
    assert_eq!(first_line("", 3), "");
}
