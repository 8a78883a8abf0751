//! The view as of now: a claim prepared after the last sample is listed at
//! once, not sampled yet; a fresh sample asked through the handle is taken
//! by the sampler's thread at once, published, and answered.

use std::sync::Arc;

use super::*;
use crate::activity::current;

#[test]
fn sim_a_claim_prepared_after_the_last_sample_is_listed_at_once() {
    let node = Node::new(2);
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    let sample = node.sampler().sample_once();
    node.engine.prepare(&request(B, &["gpu-1"])).unwrap();
    let now = current(&sample, node.engine.as_ref());
    let uids: Vec<&str> = now.claims.iter().map(|c| c.uid.as_str()).collect();
    assert_eq!(uids, [A, B], "B was prepared after the sample");
    let b = &now.claims[1];
    assert!(now.claims[0].sampled && !b.sampled);
    assert_eq!(b.devices[0].device, "gpu-1");
    assert_eq!(b.last_active, None);
    node.engine.unprepare(A).unwrap();
    let now = current(&sample, node.engine.as_ref());
    let uids: Vec<&str> = now.claims.iter().map(|c| c.uid.as_str()).collect();
    assert_eq!(uids, [B], "A is gone from the table");
}

#[tokio::test]
async fn sim_a_fresh_sample_is_taken_at_once_published_and_answered() {
    let node = Node::new(1);
    let (handle, task) = node.start_sampling(3600);
    let before = handle.fresh().await;
    assert!(before.enabled && before.claims.is_empty());
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    let process = Sleeper::in_claim(A);
    node.run(&process, 0, 2 * GIB, 30, false);
    let fresh = handle.fresh().await;
    assert!(Arc::ptr_eq(&fresh, &handle.latest()), "published");
    assert!(fresh.sampled_at_ms >= before.sampled_at_ms);
    let a = &fresh.claims[0];
    assert!(a.sampled);
    assert_eq!(a.devices[0].processes[0].pid, process.pid());
    assert_eq!(a.devices[0].sm_percent, Some(30));
    assert_eq!(a.last_active, Some(fresh.sampled_at_ms / 1000));
    task.unwrap().stop();
    let after_stop = handle.fresh().await;
    assert!(
        Arc::ptr_eq(&after_stop, &handle.latest()),
        "no sampler: the latest, without waiting"
    );
}

#[tokio::test]
async fn sim_with_sampling_off_a_fresh_ask_answers_the_disabled_snapshot() {
    let node = Node::held_by_a();
    let (handle, task) = node.start_sampling(0);
    assert!(task.is_none());
    let answer = handle.fresh().await;
    assert!(!answer.enabled);
    assert_eq!(answer.sampled_at_ms, 0, "nothing sampled");
    assert!(current(&answer, node.engine.as_ref()).claims.is_empty());
}
