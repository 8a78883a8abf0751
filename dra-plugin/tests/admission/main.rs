//! The ComputeDomain identity's admission policies
//! (packaging/rbac/compute-domains-admission.yaml) evaluated as the API
//! server evaluates them: by Kubernetes' own ValidatingAdmissionPolicy code
//! (the Go tool `tests/tools/admission`, k8s.io/apiserver 0.36 from Debian
//! sid), with the user info the API server makes of each node's Node-bound
//! token.
//!
//! * [`runner`]: the evaluator any test can include (build, start once,
//!   ask per request; skip or fail when the tool cannot be had).
//! * [`objects`]: the domain, Nodes, Leases and template of the cases.
//! * [`status`]: the status writes (policies 1 and 2).
//! * [`others`]: Leases, templates, callers without a node name, other
//!   identities, and what the tool refuses to evaluate.
//!
//! Without the sid packages (`tests/tools/admission/fetch.sh`) every test
//! prints why it skips; `GPUSLICE_REQUIRE_TOOLS=1` makes that a failure.

mod objects;
mod others;
mod runner;
mod status;

use runner::{Admission, Verdict, available};

/// The verdict, or a panic naming the case.
fn ask(admission: &Admission, case: &str, request: &runner::Request) -> Verdict {
    admission
        .ask(request)
        .unwrap_or_else(|e| panic!("{case}: {e}"))
}

/// Asserts the request is admitted.
pub fn allowed(admission: &Admission, case: &str, request: &runner::Request) {
    let verdict = ask(admission, case, request);
    assert!(verdict.allowed(), "{case}: {verdict:?}");
}

/// Asserts the request is refused with `code` by `policy`, its message
/// holding `says`; returns the message.
pub fn refused(
    admission: &Admission,
    case: &str,
    request: &runner::Request,
    code: u16,
    policy: &str,
    says: &str,
) -> String {
    match ask(admission, case, request) {
        Verdict::Refused {
            code: got,
            reason,
            message,
        } => {
            eprintln!("{case}: {got} {reason}: {message}");
            assert_eq!(got, code, "{case}: {message}");
            assert!(
                message.contains(&format!("ValidatingAdmissionPolicy '{policy}'")),
                "{case}: refused by another policy: {message}"
            );
            assert!(message.contains(says), "{case}: {message:?} lacks {says:?}");
            message
        }
        Verdict::Allowed => panic!("{case}: admitted, expected a refusal by {policy}"),
    }
}

pub const STATUS: &str = "gpuslice-compute-domain-status";
pub const GONE: &str = "gpuslice-compute-domain-gone-nodes";

#[test]
fn the_tool_reads_the_four_packaged_policies() {
    let Some(admission) = available("the_tool_reads_the_four_packaged_policies") else {
        return;
    };
    let ready = admission.ready();
    assert!(ready.ready);
    eprintln!(
        "admission tool: k8s.io/apiserver {} built with {}",
        ready.apiserver, ready.go
    );
    let want = [
        STATUS,
        GONE,
        "gpuslice-compute-domain-leases",
        "gpuslice-compute-domain-templates",
    ];
    assert_eq!(ready.policies, want);
    assert_eq!(ready.bindings, want, "one binding per policy, named for it");
}
