//! Samples of claims with no process, or processes the simulator holds in
//! memory: listing, series cap, shares, restarts, sampling off, the task.

use crate::state::AccessKind;
use std::collections::BTreeMap;

use super::*;
use crate::activity::persist::{Persister, Saved, load};

#[test]
fn sim_every_claim_is_listed_with_its_devices_and_idle_until_it_runs() {
    let node = Node::new(3);
    node.engine
        .prepare(&request(B, &["gpu-1", "gpu-2"]))
        .unwrap();
    node.engine.prepare(&request(A, &["gpu-0"])).unwrap();
    let snapshot = node.sampler().sample_at(T0);
    assert!(snapshot.enabled);
    assert_eq!(snapshot.interval_ms, 5_000);
    assert_eq!(snapshot.sampled_at_ms, 1_700_000_000_000);
    let uids: Vec<&str> = snapshot.claims.iter().map(|c| c.uid.as_str()).collect();
    assert_eq!(uids, vec![A, B]);
    let b = &snapshot.claims[1];
    let devices: Vec<&str> = b.devices.iter().map(|d| d.device.as_str()).collect();
    assert_eq!(devices, vec!["gpu-1", "gpu-2"]);
    let gpu1 = &node.engine.inventory().gpus[1];
    assert_eq!(b.devices[0].uuid, gpu1.info.uuid);
    assert_eq!(b.devices[0].memory_total, gpu1.info.memory_bytes);
    assert_eq!(b.devices[0].sharing, AccessKind::Exclusive);
    assert!(
        b.devices[0].device_memory_used.is_some(),
        "read for held devices"
    );
    assert_eq!(b.last_active, None);
    assert_eq!(
        b.idle_for(b.prepared_at + 100),
        100,
        "idle since the prepare"
    );
    assert!(snapshot.unclaimed.is_empty() && snapshot.warnings.is_empty());
    assert_eq!(snapshot.series_dropped, 0);
}

#[test]
fn sim_series_past_the_cap_are_counted() {
    let node = Node::new(3);
    node.engine
        .prepare(&request(A, &["gpu-0", "gpu-1", "gpu-2"]))
        .unwrap();
    let mut sampler = Sampler::new(
        node.engine.clone(),
        SamplerSettings {
            interval: Duration::from_secs(5),
            max_claim_series: 1,
            proc_root: "/".into(),
            state_dir: None,
            idle_after: Duration::from_secs(1800),
            summary_window: Duration::from_secs(300),
        },
    );
    assert_eq!(sampler.sample_at(T0).series_dropped, 2);
}

#[test]
fn sim_a_time_sliced_claim_gets_an_even_share() {
    let node = Node::new(1);
    node.time_slice_gpu_0_between_a_and_b();
    let snapshot = node.sampler().sample_at(T0);
    let total = node.engine.inventory().gpus[0].info.memory_bytes;
    for claim in &snapshot.claims {
        assert_eq!(claim.devices[0].sharing, AccessKind::TimeSlicing);
        assert_eq!(claim.devices[0].memory_share, Some(total / 2));
    }
}

#[test]
fn sim_last_active_times_come_back_after_a_restart_and_gone_claims_are_dropped() {
    let node = Node::held_by_a();
    let before: BTreeMap<String, i64> =
        BTreeMap::from([(A.to_owned(), 1_234), ("gone".to_owned(), 99)]);
    Persister::new(&node.state_dir(), Saved::default())
        .save(0, &before, &[], true)
        .unwrap();
    let mut sampler = node.sampler();
    let snapshot = sampler.sample_at(T0);
    assert_eq!(snapshot.claims[0].last_active, Some(1_234));
    assert_eq!(
        load(&node.state_dir()).last_active,
        BTreeMap::from([(A.to_owned(), 1_234)]),
        "the claim set changed: written at once, without the gone claim"
    );
}

#[test]
fn sim_sampling_off_publishes_one_disabled_snapshot_and_runs_nothing() {
    let node = Node::new(1);
    let (handle, task) = node.start_sampling(0);
    assert!(task.is_none());
    let latest = handle.latest();
    assert!(!latest.enabled);
    assert_eq!(latest.sampled_at_ms, 0);
}

#[test]
fn sim_the_task_samples_at_once_and_stops_when_told() {
    let node = Node::held_by_a();
    let (handle, task) = node.start_sampling(3600);
    // The loop publishes a first sample before it looks for the stop.
    task.unwrap().stop();
    let latest = handle.latest();
    assert!(latest.enabled);
    assert!(latest.sampled_at_ms > 0);
    assert_eq!(latest.interval_ms, 3_600_000);
    assert_eq!(latest.claims.len(), 1);
}
