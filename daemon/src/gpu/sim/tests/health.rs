//! The simulator's health events: in process and through the events file,
//! reported only to watches made before them, whole lines only.

use std::time::Duration;

use super::append;
use crate::gpu::sim::{InjectedEvent, SimBackend, SimModel, op};
use crate::gpu::{GpuBackend, GpuError, HealthEvent, HealthEventKind};

/// Long enough for a poll of the file; an upper bound, never a sleep.
const WAIT: Duration = Duration::from_secs(5);

fn node() -> SimBackend {
    SimBackend::new(vec![SimModel::H100_80GB, SimModel::A100_40GB], "test")
}

fn xid(gpu: u32, n: u64) -> InjectedEvent {
    InjectedEvent {
        gpu,
        gpu_instance: None,
        compute_instance: None,
        kind: HealthEventKind::Xid(n),
    }
}

fn kinds(events: &[HealthEvent]) -> Vec<(u32, HealthEventKind)> {
    events.iter().map(|e| (e.gpu_index, e.kind)).collect()
}

#[test]
fn sim_injected_events_reach_watches_made_before_them_only() {
    let sim = node();
    sim.inject_health(xid(0, 48)).unwrap();
    let mut watch = sim.watch_health().unwrap();
    assert!(watch.unmonitored().is_empty());
    assert_eq!(
        watch.wait(Duration::ZERO).unwrap(),
        vec![],
        "earlier events are not seen"
    );
    sim.inject_health(xid(1, 79)).unwrap();
    let events = watch.wait(WAIT).unwrap();
    assert_eq!(kinds(&events), vec![(1, HealthEventKind::Xid(79))]);
    assert_eq!(events[0].gpu_uuid, sim.device_info(1).unwrap().uuid);
    assert_eq!(events[0].message, "injected");
    assert_eq!(watch.wait(Duration::ZERO).unwrap(), vec![], "reported once");
    assert_eq!(
        sim.inject_health(xid(2, 79)),
        Err(GpuError::NoSuchGpu { index: 2 })
    );
}

#[test]
fn sim_events_file_delivers_whole_lines_appended_after_the_watch() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sim-health-events");
    append(&path, "gpu=0 xid=48\n");
    let sim = node().with_health_events(&path);
    assert_eq!(sim.health_events_path(), Some(path.as_path()));
    let mut watch = sim.watch_health().unwrap();
    assert_eq!(
        watch.wait(Duration::ZERO).unwrap(),
        vec![],
        "lines before the watch"
    );
    append(&path, "gpu=1 gi=3 ci=0 xid=94\ngpu=0 lo");
    let events = watch.wait(WAIT).unwrap();
    assert_eq!(kinds(&events), vec![(1, HealthEventKind::Xid(94))]);
    assert_eq!(
        (events[0].gpu_instance, events[0].compute_instance),
        (Some(3), Some(0))
    );
    assert!(
        events[0].message.contains("sim-health-events"),
        "{:?}",
        events[0]
    );
    append(
        &path,
        "st\n# a comment\ngpu=9 lost\ngpu=0 melted\ngpu=0 recovered\n",
    );
    let events = watch.wait(WAIT).unwrap();
    assert_eq!(
        kinds(&events),
        vec![
            (0, HealthEventKind::GpuLost),
            (0, HealthEventKind::Recovered)
        ],
        "the half line completed; bad lines skipped"
    );
}

#[test]
fn sim_events_file_replaced_is_read_from_the_top() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events");
    let sim = node().with_health_events(&path);
    let mut watch = sim.watch_health().unwrap();
    append(&path, "gpu=0 xid=79\ngpu=0 xid=79\n");
    assert_eq!(watch.wait(WAIT).unwrap().len(), 2);
    // Replaced by a longer file while the watch did not look: read from the top.
    let new = dir.path().join("events.new");
    append(&new, "gpu=1 ecc=double\ngpu=1 xid=79\ngpu=1 xid=63\n");
    std::fs::rename(&new, &path).unwrap();
    let events = watch.wait(WAIT).unwrap();
    assert_eq!(kinds(&events)[0], (1, HealthEventKind::DoubleBitEcc));
    assert_eq!(events.len(), 3);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(watch.wait(Duration::ZERO).unwrap(), vec![]);
    append(&path, "gpu=0 recovered\n");
    let events = watch.wait(WAIT).unwrap();
    assert_eq!(kinds(&events), vec![(0, HealthEventKind::Recovered)]);
}

#[test]
fn sim_watch_registration_can_be_made_to_fail() {
    let sim = node();
    sim.faults().fail_next(
        op::WATCH_HEALTH,
        GpuError::Injected {
            call: op::WATCH_HEALTH,
        },
    );
    assert!(matches!(sim.watch_health(), Err(GpuError::Injected { .. })));
    sim.watch_health().unwrap();
}
