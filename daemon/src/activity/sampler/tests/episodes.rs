//! Warning episodes across samples that miss a GPU and across a restart.

use super::*;

/// Two GPUs, and a process of no claim using 1 GiB of gpu-1.
fn stray_on_gpu_1() -> (Node, Sleeper) {
    let node = Node::new(2);
    let stray = Sleeper::new(&[]);
    node.run(&stray, 1, GIB, 0, false);
    (node, stray)
}

#[test]
fn sim_a_sample_that_cannot_list_a_gpu_keeps_its_warnings_open() {
    let (node, _stray) = stray_on_gpu_1();
    let mut sampler = node.sampler();
    let first = sampler.sample_once();
    assert_eq!(first.warnings.len(), 1, "the unclaimed process");
    node.fail_listing(1);
    let unread = sampler.sample_once();
    assert_eq!(
        unread.warnings, first.warnings,
        "GPU 1 not read: its episode neither ends nor starts again"
    );
    node.heal_listing(1);
    let again = sampler.sample_once();
    assert_eq!(again.warnings, first.warnings);
    assert_eq!(again.episodes.unclaimed, 1, "one episode, one warning");
}

#[test]
fn sim_an_episode_open_across_a_restart_is_not_warned_of_again() {
    let (node, stray) = stray_on_gpu_1();
    let mut before = node.sampler();
    let first = before.sample_once();
    assert_eq!(first.episodes.unclaimed, 1);
    before.flush();
    drop(before);
    let mut after = node.sampler();
    let again = after.sample_once();
    assert_eq!(
        again.warnings, first.warnings,
        "still open, from when it began"
    );
    assert_eq!(again.episodes.unclaimed, 0, "no new episode, no warning");
    assert!(node.backend.stop_process(stray.pid()));
    let ended = after.sample_once();
    assert!(ended.warnings.is_empty());
    assert!(
        crate::activity::persist::load(&node.state_dir())
            .episodes
            .is_empty(),
        "its end was saved too"
    );
}
