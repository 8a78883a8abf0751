//! The settling wait, on tokio's paused clock (deterministic: time moves
//! only when every task waits): a burst of changes is one sync, a steady
//! stream cannot put it off past `SETTLE_MAX`, echoes of our own writes do
//! not make the API server be asked, anyone else's change does.

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::{Echoes, SETTLE, SETTLE_MAX, Settled, SliceEvent, Triggers, settle};

struct Harness {
    triggers: Triggers,
    inventory: watch::Sender<u64>,
    slices: mpsc::Sender<SliceEvent>,
    shutdown: watch::Sender<bool>,
}

fn harness() -> Harness {
    let (inventory, inventory_rx) = watch::channel(0);
    let (slices, slices_rx) = mpsc::channel(8);
    let (shutdown, shutdown_rx) = watch::channel(false);
    Harness {
        triggers: Triggers {
            inventory: inventory_rx,
            slices: slices_rx,
            shutdown: shutdown_rx,
        },
        inventory,
        slices,
        shutdown,
    }
}

fn applied(rv: &str) -> SliceEvent {
    SliceEvent::Applied {
        name: "node-1-gpu.nvidia.com-1".into(),
        resource_version: rv.into(),
    }
}

#[tokio::test(start_paused = true)]
async fn a_quiet_moment_ends_the_wait() {
    let mut h = harness();
    let started = Instant::now();
    let settled = settle(&mut h.triggers, &mut Echoes::default()).await;
    assert_eq!(settled, Settled::Ready { foreign: false });
    assert_eq!(started.elapsed(), SETTLE);
}

#[tokio::test(start_paused = true)]
async fn a_burst_is_taken_in_and_a_steady_stream_is_capped() {
    let mut h = harness();
    let inventory = h.inventory.clone();
    tokio::spawn(async move {
        // A change every SETTLE / 2 for twice SETTLE_MAX.
        for _ in 0..(4 * SETTLE_MAX.as_millis() / SETTLE.as_millis()) {
            tokio::time::sleep(SETTLE / 2).await;
            inventory.send_modify(|n| *n += 1);
        }
    });
    let started = Instant::now();
    let settled = settle(&mut h.triggers, &mut Echoes::default()).await;
    assert_eq!(settled, Settled::Ready { foreign: false });
    assert_eq!(started.elapsed(), SETTLE_MAX);
    drop(h.shutdown);
}

#[tokio::test(start_paused = true)]
async fn echoes_do_not_dirty_and_foreign_changes_do() {
    let mut h = harness();
    let mut echoes = Echoes::default();
    echoes.wrote("node-1-gpu.nvidia.com-1", "7");
    h.slices.send(applied("7")).await.unwrap();
    let settled = settle(&mut h.triggers, &mut echoes).await;
    assert_eq!(settled, Settled::Ready { foreign: false });
    h.slices.send(applied("8")).await.unwrap();
    let settled = settle(&mut h.triggers, &mut echoes).await;
    assert_eq!(settled, Settled::Ready { foreign: true });
    h.slices.send(SliceEvent::Relisted).await.unwrap();
    let settled = settle(&mut h.triggers, &mut echoes).await;
    assert_eq!(settled, Settled::Ready { foreign: true });
}

#[tokio::test(start_paused = true)]
async fn shutdown_ends_the_wait() {
    let mut h = harness();
    h.shutdown.send_replace(true);
    let settled = settle(&mut h.triggers, &mut Echoes::default()).await;
    assert_eq!(settled, Settled::Stop);
}
