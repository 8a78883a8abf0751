//! The sampler hands each sample to its subscribers: `[limits]`'s last
//! actions across a restart, through its board and its file. What this
//! process did is saved, shown again by the next process until it acts on
//! the same claim and device itself, and dropped with its claim.

use super::*;
use crate::config::LimitsConfig;
use crate::limits::{LimitAction, LimitsBoard, LimitsSubscriber, Pidfds};

fn action(uid: &str, device: &str, pid: u32, outcome: &'static str) -> LimitAction {
    LimitAction {
        kind: WarningKind::OverShare,
        mode: "end",
        outcome,
        claim_uid: uid.to_owned(),
        device: device.to_owned(),
        pid,
        comm: "python".to_owned(),
        memory_used: 12 * GIB,
        over_for_s: 3,
        at_ms: 1_000_000,
    }
}

impl Node {
    /// A sampler with `[limits]` (warning only) publishing on the board
    /// loaded from the node's state dir, as `run` wires it.
    fn sampler_with_limits(&self) -> (Sampler, LimitsBoard) {
        let dir = self.state_dir();
        let board = LimitsBoard::load(Some(&dir));
        let limits = LimitsSubscriber::start(
            &LimitsConfig::default(),
            Pidfds::new("/"),
            board.clone(),
            Some(&dir),
        );
        (self.sampler().with_subscriber(Box::new(limits)), board)
    }
}

fn key(uid: &str, device: &str) -> (String, String) {
    (uid.to_owned(), device.to_owned())
}

#[test]
fn sim_a_claims_last_action_survives_a_restart_until_acted_on_again_or_unprepared() {
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    let ended_a = action(A, "gpu-0", 100, "terminated");
    let ended_b = action(B, "gpu-1", 200, "not-permitted");
    let (mut before, board) = node.sampler_with_limits();
    for done in [&ended_a, &ended_b, &action("", "gpu-1", 300, "terminated")] {
        board.ledger().note(done.clone());
    }
    before.sample_once();
    drop(before);

    let (mut after, board) = node.sampler_with_limits();
    after.sample_once();
    let shown = board.report().last;
    let keys: Vec<_> = shown.keys().cloned().collect();
    assert_eq!(
        keys,
        [key(A, "gpu-0"), key(B, "gpu-1")],
        "the claims' actions, not the unclaimed process's"
    );
    assert_eq!(shown[&key(A, "gpu-0")], ended_a);
    assert!(board.report().counts.is_empty(), "counts restart at zero");

    let again = action(A, "gpu-0", 101, "killed");
    board.ledger().note(again.clone());
    after.sample_once();
    let shown = board.report().last;
    assert_eq!(shown[&key(A, "gpu-0")], again, "this process's own wins");
    assert_eq!(shown[&key(B, "gpu-1")], ended_b);
    node.engine.unprepare(B).unwrap();
    after.sample_once();
    assert!(
        !board.report().last.contains_key(&key(B, "gpu-1")),
        "gone with its claim"
    );
    drop(after);
    assert_eq!(crate::limits::saved::load(&node.state_dir()), [again]);
}
