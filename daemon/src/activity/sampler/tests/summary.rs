//! Usage summaries through the sampler, on its virtual clock
//! ([`Sampler::sample_at`]): idle from when idleness began, the window's
//! figures, no SM figures on a MIG slice, the conditions generation.

use super::*;

/// A sampler calling a claim idle after a minute, over a 30 s window.
fn sampler(node: &Node) -> Sampler {
    Sampler::new(
        node.engine.clone(),
        SamplerSettings {
            interval: Duration::from_secs(5),
            max_claim_series: 1024,
            proc_root: "/".into(),
            state_dir: None,
            idle_after: Duration::from_secs(60),
            summary_window: Duration::from_secs(30),
        },
    )
}

fn at(t: u64) -> Duration {
    T0 + Duration::from_secs(t)
}

fn t0() -> i64 {
    i64::try_from(T0.as_secs()).unwrap()
}

#[test]
fn sim_a_claim_stopped_is_idle_after_idle_after_since_its_last_active_sample() {
    let node = Node::held_by_a();
    let a = Sleeper::in_claim(A);
    node.run(&a, 0, 3 * GIB, 20, false);
    let mut sampler = sampler(&node);
    let busy = sampler.sample_at(at(0));
    let s = busy.claims[0].devices[0].summary.expect("summarised");
    assert_eq!(
        (
            s.window_s,
            s.memory_peak,
            s.sm_mean,
            s.sm_peak,
            s.process_count
        ),
        (30, 3 * GIB, Some(20), Some(20), 1)
    );
    assert_eq!((s.idle_since, busy.conditions_generation), (None, 0));
    assert!(node.backend.stop_process(a.pid()));
    let almost = sampler.sample_at(at(59));
    let s = almost.claims[0].devices[0].summary.unwrap();
    assert_eq!((s.idle_since, s.process_count), (None, 0));
    assert_eq!(almost.conditions_generation, 0);
    let idle = sampler.sample_at(at(60));
    let s = idle.claims[0].devices[0].summary.unwrap();
    assert_eq!(s.idle_since, Some(t0()), "when idleness began");
    assert_eq!(
        (s.memory_peak, s.sm_mean, s.sm_peak),
        (0, Some(0), Some(0)),
        "the busy sample fell out of the 30 s window"
    );
    assert_eq!(idle.conditions_generation, 1);
    node.run(&a, 0, GIB, 20, false);
    let again = sampler.sample_at(at(65));
    assert_eq!(again.claims[0].devices[0].summary.unwrap().idle_since, None);
    assert_eq!(again.conditions_generation, 2, "idle cleared");
}

#[test]
fn sim_a_slice_claim_has_memory_figures_and_no_sm_figures() {
    let node = Node::partitionable();
    let slice = node.engine.inventory().mig[0].name.clone();
    let (prepared, mig_uuid) = node.prepare_slice(A, &slice);
    let a = Sleeper::in_claim(A);
    node.run_on_slice(&a, &mig_uuid, 2 * GIB);
    let snapshot = sampler(&node).sample_at(at(0));
    let d = &snapshot.claims[0].devices[0];
    let s = d.summary.expect("summarised");
    assert_eq!(
        (s.memory_peak, s.sm_mean, s.sm_peak, s.process_count),
        (2 * GIB, None, None, 1)
    );
    assert_eq!(d.pool, prepared.record().devices[0].pool);
}

#[test]
fn sim_a_time_sliced_claim_over_its_share_is_dated_by_its_episode() {
    let node = Node::new(1);
    node.time_slice_gpu_0_between_a_and_b();
    let a = Sleeper::in_claim(A);
    let total = node.engine.inventory().gpus[0].info.memory_bytes;
    node.run(&a, 0, total / 2 + GIB, 10, false);
    let mut sampler = sampler(&node);
    let over = sampler.sample_at(at(0));
    let s = over.claims[0].devices[0].summary.unwrap();
    assert_eq!(s.overshare_since, Some(t0()));
    assert_eq!(over.conditions_generation, 1);
    assert!(node.backend.stop_process(a.pid()));
    let back = sampler.sample_at(at(5));
    assert_eq!(
        back.claims[0].devices[0].summary.unwrap().overshare_since,
        None
    );
    assert_eq!(back.conditions_generation, 2);
}
