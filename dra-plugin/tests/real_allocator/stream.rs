//! One tool process answering many questions (`allocator -stream`, the
//! runner's [`Session`](crate::tool::Session)): the same answers as one
//! process per question, in order, and a refused question ends the stream
//! with the reason, after the answers before it.

use serde_json::json;

use crate::objects::{allocated, one_request_claim, result};
use crate::tool::{ToolError, available};
use crate::upstream::{devices, names, whole_gpus};

#[test]
fn a_session_answers_each_question_as_a_process_of_its_own_would() {
    let Some(allocator) =
        available("a_session_answers_each_question_as_a_process_of_its_own_would")
    else {
        return;
    };
    let mut first = whole_gpus();
    first.claims = vec![one_request_claim("one", "gpu", Some(1))];
    let mut second = first.clone();
    second.allocated = vec![allocated("holder", json!([result("r", "gpu-0")]))];
    let mut third = first.clone();
    third.claims = vec![one_request_claim("four", "gpu", Some(4))];
    let mut session = allocator.session().expect("the tool starts");
    for (input, want) in [
        (&first, Ok(names(&["gpu-0"]))),
        (&second, Ok(names(&["gpu-1"]))),
        (&third, Err(())),
        (&first, Ok(names(&["gpu-0"]))),
    ] {
        let streamed = session.allocate(input).expect("an answer");
        let alone = allocator.allocate(input).expect("an answer");
        assert_eq!(devices(&streamed).map_err(|_| ()), want);
        assert_eq!(format!("{streamed:?}"), format!("{alone:?}"));
    }

    // A question the tool refuses ends the stream with its reason.
    let mut nameless = first.clone();
    nameless.node.metadata.name = None;
    assert_eq!(
        devices(&session.allocate(&first).expect("an answer")),
        Ok(names(&["gpu-0"]))
    );
    match session.allocate(&nameless) {
        Err(ToolError::Exit {
            code: Some(2),
            stderr,
            ..
        }) => assert!(
            stderr.contains("input object 6: node.metadata.name is empty"),
            "{stderr}"
        ),
        other => panic!("expected exit 2 naming the object, got {other:?}"),
    }
    assert!(
        matches!(session.allocate(&first), Err(ToolError::Exit { .. })),
        "a session that ended answers nothing more"
    );
}
