//! SetClaimStatusState through the service on a simulated node: GetStatus
//! has no `claim_status` before any plugin said one, then the last one said;
//! bad requests are refused with what to fix and change nothing.

use std::sync::Arc;

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_server::GpuSlice;
use tokio::sync::watch;
use tonic::{Code, Request};

use super::MAX_REASON;
use crate::api::Service;
use crate::claims::mig_offering::OfferingSwitch;
use crate::config::MigConfig;
use crate::testkit::{SimNode, SimNodeBuilder};

fn service() -> (SimNode, Service, watch::Sender<bool>) {
    let node = SimNodeBuilder::h100s(1).hardware_in_memory().start();
    let (stop, stopping) = watch::channel(false);
    let offerings = Arc::new(OfferingSwitch::new(MigConfig::default()));
    let service = Service::new(
        crate::node::Node::new(Arc::clone(node.engine()), offerings),
        stopping,
    );
    (node, service, stop)
}

fn asked(access: pb::ClaimStatusAccess, reason: &str) -> pb::ClaimStatusState {
    pb::ClaimStatusState {
        access: access.into(),
        reason: reason.to_owned(),
    }
}

async fn shown(service: &Service) -> Option<pb::ClaimStatusState> {
    let reply = service
        .get_status(Request::new(pb::GetStatusRequest {}))
        .await
        .expect("GetStatus");
    reply.into_inner().claim_status
}

async fn set(
    service: &Service,
    state: pb::ClaimStatusState,
) -> Result<pb::ClaimStatusState, tonic::Status> {
    let reply = service.set_claim_status_state(Request::new(state)).await?;
    Ok(reply.into_inner())
}

#[tokio::test]
async fn get_status_shows_the_last_state_a_plugin_said_and_none_before() {
    let (_node, service, _stop) = service();
    assert_eq!(shown(&service).await, None, "nothing said yet");

    let off = asked(
        pb::ClaimStatusAccess::Off,
        "  [claim_status] mode = \"off\" ",
    );
    let answer = set(&service, off).await.expect("OFF with a reason");
    let kept = asked(pb::ClaimStatusAccess::Off, "[claim_status] mode = \"off\"");
    assert_eq!(answer, kept, "answers what it keeps (trimmed)");
    assert_eq!(shown(&service).await, Some(kept));

    for access in [
        pb::ClaimStatusAccess::Written,
        pb::ClaimStatusAccess::Unknown,
    ] {
        let answer = set(&service, asked(access, "ignored"))
            .await
            .expect("taken");
        assert_eq!(answer, asked(access, ""), "the reason is dropped");
        assert_eq!(shown(&service).await, Some(asked(access, "")));
    }
}

#[tokio::test]
async fn a_bad_state_is_refused_with_what_to_fix_and_the_last_one_stays() {
    let (_node, service, _stop) = service();
    let written = asked(pb::ClaimStatusAccess::Written, "");
    set(&service, written.clone()).await.expect("WRITTEN");

    let long = "x".repeat(MAX_REASON + 1);
    let bad = [
        (
            asked(pb::ClaimStatusAccess::Unspecified, "why"),
            "access: 0 is none of",
        ),
        (
            pb::ClaimStatusState {
                access: 99,
                reason: String::new(),
            },
            "access: 99 is none of",
        ),
        (
            asked(pb::ClaimStatusAccess::Off, " "),
            "say why claim status is off",
        ),
        (asked(pb::ClaimStatusAccess::Off, &long), "at most 1024"),
        (asked(pb::ClaimStatusAccess::Off, "a\nb"), "one line"),
    ];
    for (state, says) in bad {
        let refused = set(&service, state.clone()).await.expect_err("refused");
        assert_eq!(refused.code(), Code::InvalidArgument, "{state:?}");
        assert!(refused.message().contains(says), "{state:?}: {refused:?}");
        assert_eq!(shown(&service).await, Some(written.clone()), "{state:?}");
    }
    let longest = "x".repeat(MAX_REASON);
    let at_the_limit = asked(pb::ClaimStatusAccess::Off, &longest);
    let answer = set(&service, at_the_limit.clone()).await;
    assert_eq!(answer.expect("a reason at the limit"), at_the_limit);
}
