//! Input the scheduler would never hand the allocator is refused by the tool
//! (exit 2) with a reason that says what to fix, rather than answered.

use serde_json::json;

use crate::objects::{allocated, claim, class, exactly, result};
use crate::tool::{RealAllocator, ToolError, available};
use crate::upstream::whole_gpus;

fn refusal(outcome: Result<crate::tool::Outcome, ToolError>) -> String {
    match outcome {
        Err(ToolError::Exit {
            code: Some(2),
            stderr,
            ..
        }) => stderr,
        other => panic!("expected the tool to refuse the input (exit 2), got {other:?}"),
    }
}

fn refused(allocator: &RealAllocator, input: &crate::tool::Input) -> String {
    refusal(allocator.allocate(input))
}

#[test]
fn input_the_scheduler_never_builds_is_refused_saying_what_to_fix() {
    let Some(allocator) =
        available("input_the_scheduler_never_builds_is_refused_saying_what_to_fix")
    else {
        return;
    };
    let one = || claim("one", json!([exactly("r", "gpu", Some(1))]), json!([]));

    let mut nameless = whole_gpus();
    nameless.node.metadata.name = None;
    assert!(refused(allocator, &nameless).contains("node.metadata.name is empty"));

    let mut done = whole_gpus();
    let mut already = allocated("one", json!([result("r", "gpu-0")]));
    already.spec = one().spec;
    done.claims = vec![already];
    assert!(refused(allocator, &done).contains("put allocated claims into \"allocated\""));

    let mut pending = whole_gpus();
    pending.allocated = vec![one()];
    assert!(
        refused(allocator, &pending).contains("allocated[0] is null or has no status.allocation")
    );

    let mut twice = whole_gpus();
    twice.classes.push(class("gpu", "false"));
    assert!(refused(allocator, &twice).contains("a second class named \"gpu\""));

    // A field the allocator would not read (a typo, or one newer than the
    // vendored API) is an error, not a silent drop.
    let mut typo = serde_json::to_value(whole_gpus()).expect("serialize");
    typo["slices"][0]["spec"]["devicez"] = json!([]);
    let stderr = refusal(allocator.allocate_json(typo.to_string().as_bytes()));
    assert!(stderr.contains("unknown field \"devicez\""), "{stderr}");
    let stderr = refusal(allocator.allocate_json(
        br#"{"node": {"metadata": {"name": "n"}}, "features": {"Partitionable": true}}"#,
    ));
    assert!(
        stderr.contains("unknown field \"Partitionable\""),
        "{stderr}"
    );
}
