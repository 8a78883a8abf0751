//! The last `[limits]` actions across a restart: what the hook reported is
//! saved, shown again by the next process until it acts on the same claim
//! and device itself, and dropped with its claim.

use super::*;
use crate::activity::hook::{SampleHook, Sampled};
use crate::activity::{LimitAction, LimitsReport};

/// A hook that reports fixed actions and decides nothing.
#[derive(Debug)]
struct Reports(LimitsReport);

impl SampleHook for Reports {
    fn after_sample(&mut self, _: &Sampled<'_>) {}

    fn report(&self) -> LimitsReport {
        self.0.clone()
    }
}

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

fn reporting(actions: &[LimitAction]) -> Option<Box<dyn SampleHook>> {
    let last = actions
        .iter()
        .map(|a| ((a.claim_uid.clone(), a.device.clone()), a.clone()))
        .collect();
    Some(Box::new(Reports(LimitsReport {
        last,
        ..LimitsReport::default()
    })))
}

#[test]
fn sim_a_claims_last_action_survives_a_restart_until_acted_on_again_or_unprepared() {
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    let ended_a = action(A, "gpu-0", 100, "terminated");
    let ended_b = action(B, "gpu-1", 200, "not-permitted");
    let unclaimed = action("", "gpu-1", 300, "terminated");
    let mut before =
        node.sampler()
            .with_hook(reporting(&[ended_a.clone(), ended_b.clone(), unclaimed]));
    before.sample_once();
    drop(before);

    let mut after = node.sampler();
    let shown = after.sample_once().limits.last;
    let keys: Vec<_> = shown.keys().cloned().collect();
    assert_eq!(
        keys,
        [
            (A.to_owned(), "gpu-0".to_owned()),
            (B.to_owned(), "gpu-1".to_owned())
        ],
        "the claims' actions, not the unclaimed process's"
    );
    assert_eq!(shown[&(A.to_owned(), "gpu-0".to_owned())], ended_a);
    drop(after);

    let again = action(A, "gpu-0", 101, "killed");
    let mut acting = node
        .sampler()
        .with_hook(reporting(std::slice::from_ref(&again)));
    let shown = acting.sample_once().limits.last;
    assert_eq!(
        shown[&(A.to_owned(), "gpu-0".to_owned())],
        again,
        "this process's own wins"
    );
    assert_eq!(shown[&(B.to_owned(), "gpu-1".to_owned())], ended_b);
    node.engine.unprepare(B).unwrap();
    let shown = acting.sample_once().limits.last;
    assert!(
        !shown.contains_key(&(B.to_owned(), "gpu-1".to_owned())),
        "gone with its claim"
    );
    drop(acting);
    let saved = crate::activity::persist::load(&node.state_dir()).actions;
    assert_eq!(saved.len(), 1, "{saved:?}");
}
