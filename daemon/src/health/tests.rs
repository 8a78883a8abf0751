//! Health module tests: classification, the fault table, its file, and the
//! watcher over the simulated backend.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::watch::{Stop, Watcher};
use super::{
    Cause, Classifier, DEFAULT_IGNORED_XIDS, DeviceHealth, Fault, HealthStore, HealthTable,
    Monitor, Scope, Target, Verdict,
};
use crate::gpu::sim::{InjectedEvent, SimBackend, SimModel};
use crate::gpu::{GpuBackend, HealthEvent, HealthEventKind, HealthReads, Placement};

const UUID: &str = "GPU-00000000-0000-4000-8000-000000000000";

fn event(kind: HealthEventKind, gpu_instance: Option<u32>) -> HealthEvent {
    HealthEvent {
        gpu_index: 0,
        gpu_uuid: UUID.into(),
        gpu_instance,
        compute_instance: gpu_instance.map(|_| 0),
        kind,
        message: "test".into(),
    }
}

fn fault(cause: Cause, since: i64) -> Fault {
    Fault {
        cause,
        detail: String::new(),
        since,
    }
}

fn place(start: u32, size: u32) -> Placement {
    Placement { start, size }
}

/// GPU instance `gpu_instance` on memory slices `start..start + size`.
fn instance(gpu_instance: u32, start: u32, size: u32) -> Target {
    Target::Instance {
        gpu_instance,
        placement: place(start, size),
    }
}

#[test]
fn every_default_ignored_xid_is_ignored_and_nothing_else() {
    let rules = Classifier::default();
    assert_eq!(DEFAULT_IGNORED_XIDS, [13, 31, 43, 45, 68, 109]);
    for xid in DEFAULT_IGNORED_XIDS {
        let verdict = rules.classify(&event(HealthEventKind::Xid(xid), None));
        assert!(
            matches!(&verdict, Verdict::Ignore { why } if why.contains("default ignore list")),
            "XID {xid}: {verdict:?}"
        );
    }
    for xid in [48, 63, 64, 74, 79, 92, 94, 95, 119, 120, 999, 12345] {
        assert_eq!(
            rules.classify(&event(HealthEventKind::Xid(xid), None)),
            Verdict::Fault {
                scope: Scope::Gpu,
                cause: Cause::Xid(xid)
            },
            "XID {xid}"
        );
    }
}

#[test]
fn configured_xids_are_ignored_on_top_of_the_defaults() {
    let rules = Classifier::new(&[94, 13]);
    assert_eq!(rules.ignored_xids(), vec![13, 31, 43, 45, 68, 94, 109]);
    let verdict = rules.classify(&event(HealthEventKind::Xid(94), Some(2)));
    assert!(
        matches!(&verdict, Verdict::Ignore { why } if why.contains("[health] ignore_xids")),
        "{verdict:?}"
    );
    assert!(matches!(
        rules.classify(&event(HealthEventKind::Xid(95), None)),
        Verdict::Fault { .. }
    ));
}

#[test]
fn ecc_lost_and_recovered_events_follow_their_rules() {
    let rules = Classifier::default();
    assert!(matches!(
        rules.classify(&event(HealthEventKind::SingleBitEcc, None)),
        Verdict::Ignore { .. }
    ));
    assert_eq!(
        rules.classify(&event(HealthEventKind::DoubleBitEcc, Some(5))),
        Verdict::Fault {
            scope: Scope::Instance { gpu_instance: 5 },
            cause: Cause::DoubleBitEcc
        }
    );
    // A lost GPU is lost as a whole, whatever instance the event names.
    assert_eq!(
        rules.classify(&event(HealthEventKind::GpuLost, Some(5))),
        Verdict::Fault {
            scope: Scope::Gpu,
            cause: Cause::GpuLost
        }
    );
    assert_eq!(
        rules.classify(&event(HealthEventKind::Recovered, Some(5))),
        Verdict::Recover {
            scope: Scope::Instance { gpu_instance: 5 }
        }
    );
    assert_eq!(
        rules.classify(&event(HealthEventKind::Xid(79), Some(3))),
        Verdict::Fault {
            scope: Scope::Instance { gpu_instance: 3 },
            cause: Cause::Xid(79)
        }
    );
}

#[test]
fn causes_read_with_the_catalog_meaning() {
    assert_eq!(
        Cause::Xid(79).to_string(),
        "XID 79 (GPU has fallen off the bus)"
    );
    assert_eq!(Cause::Xid(4242).to_string(), "XID 4242");
}

#[test]
fn a_gpu_fault_covers_the_gpu_and_every_slice() {
    let mut table = HealthTable::default();
    assert!(table.record(UUID, 0, Target::Gpu, fault(Cause::Xid(79), 10)));
    assert!(!table.record(UUID, 0, Target::Gpu, fault(Cause::Xid(48), 20)));
    let kept = table.covering(UUID, None).unwrap().fault().clone();
    assert_eq!(kept, fault(Cause::Xid(79), 10), "the first fault is kept");
    for slice in [place(0, 1), place(4, 4), place(0, 8)] {
        assert!(table.covering(UUID, Some(slice)).is_some(), "{slice:?}");
    }
    assert!(table.covering("GPU-other", None).is_none());
}

#[test]
fn an_instance_fault_covers_overlapping_slices_and_the_gpu_only() {
    let mut table = HealthTable::default();
    let target = instance(2, 4, 4);
    assert!(table.record(UUID, 0, target, fault(Cause::Xid(94), 10)));
    assert!(table.covering(UUID, Some(place(4, 4))).is_some());
    assert!(
        table.covering(UUID, Some(place(6, 1))).is_some(),
        "overlaps"
    );
    assert!(
        table.covering(UUID, Some(place(0, 4))).is_none(),
        "disjoint"
    );
    assert!(
        table.covering(UUID, Some(place(3, 1))).is_none(),
        "disjoint"
    );
    assert!(
        table.covering(UUID, None).is_some(),
        "the whole GPU holds it"
    );
}

#[test]
fn recovery_clears_its_scope() {
    let mut table = HealthTable::default();
    let slice = |gpu_instance, start| instance(gpu_instance, start, 1);
    table.record(UUID, 0, slice(9, 0), fault(Cause::Xid(94), 1));
    table.record(UUID, 0, slice(10, 1), fault(Cause::Xid(94), 1));
    assert!(table.recover(UUID, Some(9)));
    assert!(!table.recover(UUID, Some(9)), "already healthy");
    assert!(table.covering(UUID, Some(place(0, 1))).is_none());
    assert!(table.covering(UUID, Some(place(1, 1))).is_some());
    table.record(UUID, 0, Target::Gpu, fault(Cause::GpuLost, 2));
    assert!(
        table.recover(UUID, None),
        "a GPU recovery clears every fault of it"
    );
    assert!(table.is_empty());
    assert!(!table.recover(UUID, None));
}

#[test]
fn an_operator_clear_of_a_slice_leaves_the_gpu_fault() {
    let mut table = HealthTable::default();
    let target = instance(1, 0, 4);
    table.record(UUID, 0, target, fault(Cause::Xid(94), 1));
    table.record(UUID, 0, Target::Gpu, fault(Cause::Xid(79), 2));
    assert_eq!(table.clear(UUID, Some(place(2, 2))), 1);
    assert!(
        table.covering(UUID, Some(place(2, 2))).is_some(),
        "GPU fault stays"
    );
    assert_eq!(table.clear(UUID, None), 1);
    assert!(table.is_empty());
    assert_eq!(table.clear(UUID, None), 0);
}

#[test]
fn faults_survive_a_restart_but_not_a_reboot_and_lost_gpus_are_seen_again() {
    let dir = tempfile::tempdir().unwrap();
    let mut table = HealthTable::default();
    table.record(UUID, 0, Target::Gpu, fault(Cause::Xid(79), 10));
    table.record("GPU-lost", 1, Target::Gpu, fault(Cause::GpuLost, 11));
    let store = HealthStore::new(dir.path(), "boot-1");
    store.save(&table).unwrap();
    let back = store.load().unwrap();
    assert!(back.covering(UUID, None).is_some());
    assert!(back.covering("GPU-lost", None).is_none());
    assert!(
        HealthStore::new(dir.path(), "boot-2")
            .load()
            .unwrap()
            .is_empty()
    );
    gpuslice_cdi::atomic::write_atomic(dir.path(), super::FILE_NAME, b"{not json", 0o644).unwrap();
    let err = store.load().unwrap_err().to_string();
    assert!(
        err.contains("health.json") && err.contains("delete the file"),
        "{err}"
    );
}

#[test]
fn device_health_persists_every_change_and_words_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let health = DeviceHealth::default();
    assert_eq!(
        health.restore(HealthStore::new(dir.path(), "b")).unwrap(),
        0
    );
    let since = 1_748_779_200; // 2025-06-01T12:00:00Z
    let target = instance(2, 4, 4);
    assert!(health.record(UUID, 0, target, fault(Cause::Xid(94), since)));
    let on_gpu = health.fault_of(UUID, None).unwrap();
    assert_eq!(
        on_gpu.reason,
        "GPU instance 2 (memory slices 4-7): XID 94 (contained ECC error) since 2025-06-01T12:00:00Z"
    );
    let on_slice = health.fault_of(UUID, Some(place(4, 4))).unwrap();
    assert_eq!(
        on_slice.reason,
        "XID 94 (contained ECC error) since 2025-06-01T12:00:00Z"
    );
    assert!(health.record(UUID, 0, Target::Gpu, fault(Cause::Xid(79), since)));
    let on_slice = health.fault_of(UUID, Some(place(0, 1))).unwrap();
    assert!(
        on_slice.reason.starts_with("its GPU: XID 79"),
        "{}",
        on_slice.reason
    );
    let again = DeviceHealth::default();
    assert_eq!(again.restore(HealthStore::new(dir.path(), "b")).unwrap(), 1);
    assert_eq!(again.table(), health.table());
    assert_eq!(health.clear(UUID, None), 2);
    let again = DeviceHealth::default();
    assert_eq!(again.restore(HealthStore::new(dir.path(), "b")).unwrap(), 0);
}

fn sim(gpus: usize) -> Arc<SimBackend> {
    Arc::new(SimBackend::new(vec![SimModel::H100_80GB; gpus], "test"))
}

fn injected(gpu: u32, gpu_instance: Option<u32>, kind: HealthEventKind) -> InjectedEvent {
    InjectedEvent {
        gpu,
        gpu_instance,
        compute_instance: None,
        kind,
    }
}

#[test]
fn the_watcher_pins_a_mig_fault_to_its_instance_and_a_vanished_one_to_the_gpu() {
    let backend = sim(1);
    backend
        .set_mig_mode(0, crate::gpu::MigMode::Enabled)
        .unwrap();
    let profile = backend
        .mig_profiles(0)
        .unwrap()
        .into_iter()
        .find(|p| p.name == "3g.40gb")
        .unwrap();
    let gi = backend
        .create_gpu_instance(0, profile.id, place(4, 4))
        .unwrap();
    let health = DeviceHealth::default();
    let changes = AtomicUsize::new(0);
    let on_change = || {
        changes.fetch_add(1, Ordering::SeqCst);
    };
    let watcher = Watcher {
        backend: HealthReads::new(backend.as_ref()),
        health: &health,
        on_change: &on_change,
    };
    let uuid = backend.device_info(0).unwrap().uuid;
    let at = |kind, gpu_instance| HealthEvent {
        gpu_uuid: uuid.clone(),
        ..event(kind, gpu_instance)
    };
    assert!(!watcher.handle(&at(HealthEventKind::Xid(43), Some(gi.id)), 1));
    assert!(watcher.handle(&at(HealthEventKind::Xid(94), Some(gi.id)), 1));
    assert!(health.fault_of(&uuid, Some(place(0, 4))).is_none());
    assert!(health.fault_of(&uuid, Some(place(4, 4))).is_some());
    assert!(watcher.handle(&at(HealthEventKind::Recovered, Some(gi.id)), 2));
    assert!(health.table().is_empty());
    assert!(watcher.handle(&at(HealthEventKind::Xid(94), Some(99)), 3));
    assert!(
        health.fault_of(&uuid, Some(place(0, 1))).is_some(),
        "an instance that is gone marks the whole GPU"
    );
    assert_eq!(changes.load(Ordering::SeqCst), 3);
}

#[test]
fn the_watcher_loop_registers_reports_injected_events_and_stops() {
    let backend = sim(2);
    let health = Arc::new(DeviceHealth::default());
    let stop = Arc::new(Stop::default());
    let (changed_tx, changed_rx) = std::sync::mpsc::channel();
    let (registered_tx, registered_rx) = std::sync::mpsc::channel();
    let task = {
        let (backend, health, stop) = (backend.clone(), health.clone(), stop.clone());
        std::thread::spawn(move || {
            let on_change = move || changed_tx.send(()).unwrap();
            let watcher = Watcher {
                backend: HealthReads::new(backend.as_ref()),
                health: &health,
                on_change: &on_change,
            };
            watcher.run(&stop, |m| registered_tx.send(m.clone()).unwrap());
        })
    };
    let bound = std::time::Duration::from_secs(30);
    let monitor = registered_rx.recv_timeout(bound).unwrap();
    assert_eq!(
        monitor,
        Monitor::Watching {
            unmonitored: vec![]
        }
    );
    backend
        .inject_health(injected(1, None, HealthEventKind::Xid(79)))
        .unwrap();
    changed_rx.recv_timeout(bound).unwrap();
    let uuid = backend.device_info(1).unwrap().uuid;
    assert_eq!(health.fault_of(&uuid, None).unwrap().cause, Cause::Xid(79));
    backend
        .inject_health(injected(1, None, HealthEventKind::Recovered))
        .unwrap();
    changed_rx.recv_timeout(bound).unwrap();
    assert!(health.fault_of(&uuid, None).is_none());
    stop.stop();
    task.join().unwrap();
}

#[test]
fn a_backend_that_cannot_watch_is_reported_and_retried() {
    let backend = sim(1);
    backend.faults().fail_next(
        crate::gpu::sim::op::WATCH_HEALTH,
        crate::gpu::GpuError::NotSupported {
            what: "events".into(),
        },
    );
    let health = DeviceHealth::default();
    let stop = Stop::default();
    let on_change = || {};
    let watcher = Watcher {
        backend: HealthReads::new(backend.as_ref()),
        health: &health,
        on_change: &on_change,
    };
    let mut first = None;
    watcher.run(&stop, |m| {
        first = Some(m.clone());
        stop.stop();
    });
    let Some(Monitor::Failed { reason }) = first else {
        panic!("{first:?}");
    };
    assert!(reason.contains("not supported"), "{reason}");
    let problems = health.watch_problems();
    assert!(problems[0].contains("not watched"), "{problems:?}");
}
