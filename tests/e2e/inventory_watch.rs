//! WatchInventory end to end: the current generation at once, a new one after
//! each change (over the API and through `gpuslicectl inventory --watch`),
//! the stream ended cleanly (OK) when gpusliced stops, without holding the
//! shutdown up, and the peer policy applied like on every RPC.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;
use serde_json::Value;

use crate::common::claims::Claims;
use crate::common::ctl::assert_nobody_is_refused;
use crate::common::queries::Queries;
use crate::harness::Daemon;

const A: &str = "aaaaaaaa-0000-4000-8000-0000000000f1";
/// A bound on what the daemon does by itself, not a sleep.
const BOUND: Duration = Duration::from_secs(30);

/// The lines a child prints, handed over by a thread.
fn lines(stdout: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

fn holders_of(doc: &Value, device: &str) -> Value {
    let devices = doc["devices"].as_array().cloned().unwrap_or_default();
    let found = devices.into_iter().find(|d| d["name"] == device);
    found.map(|d| d["holders"].clone()).unwrap_or_default()
}

/// The next generation the watch sends (None: it ended with OK).
async fn next(watch: &mut tonic::Streaming<pb::InventoryChanged>) -> Option<u64> {
    tokio::time::timeout(BOUND, watch.message())
        .await
        .expect("a message or the end within the bound")
        .expect("no error")
        .map(|m| m.generation)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_watch_inventory_sends_each_generation_and_ends_cleanly_at_shutdown() {
    let daemon = Daemon::start(2);
    let mut client = daemon.client().await;
    let mut watch = client
        .watch_inventory(pb::WatchInventoryRequest {})
        .await
        .expect("watch")
        .into_inner();
    let first = next(&mut watch).await.expect("the current generation");
    assert_eq!(client.inventory().await.generation, first);

    client.prepare_whole(A, &["gpu-0"]).await;
    let prepared = next(&mut watch).await.expect("a new generation");
    assert!(prepared > first, "{prepared} after {first}");
    let after = client.inventory().await;
    assert_eq!(after.generation, prepared);
    assert_eq!(after.devices[0].holders, vec![A.to_owned()]);

    // gpuslicectl follows the same stream.
    let mut cli = Command::new(crate::binaries::gpuslicectl())
        .arg("--socket")
        .arg(&daemon.socket)
        .args(["--output", "json", "inventory", "--watch"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gpuslicectl inventory --watch");
    let printed = lines(cli.stdout.take().expect("stdout"));
    let doc = |line: String| -> Value { serde_json::from_str(&line).expect("one JSON per line") };
    let now = doc(printed.recv_timeout(BOUND).expect("the inventory now"));
    assert_eq!(now["generation"], prepared);
    assert_eq!(holders_of(&now, "gpu-0"), serde_json::json!([A]));
    client.unprepare_claim(A).await;
    let freed = next(&mut watch).await.expect("a new generation");
    let shown = doc(printed.recv_timeout(BOUND).expect("the inventory again"));
    assert_eq!(shown["generation"], freed);
    assert_eq!(holders_of(&shown, "gpu-0"), serde_json::json!([]));

    // Shutdown ends both watches with OK, and is not held up by them.
    let (status, dir) = daemon.stop();
    assert!(status.success(), "{status:?}");
    assert_eq!(next(&mut watch).await, None, "the stream ended cleanly");
    let log = std::fs::read_to_string(dir.path().join("daemon.log")).unwrap_or_default();
    assert!(!log.contains("kept connections open"), "{log}");
    let exited = cli.wait().expect("gpuslicectl exits");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut cli.stderr.take().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert!(exited.success(), "{stderr}");
    assert!(stderr.contains("gpusliced ended the watch"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_watch_inventory_refuses_other_users() {
    let daemon = Daemon::start(1);
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var_os("GPUSLICE_REQUIRE_TOOLS").is_none(),
            "GPUSLICE_REQUIRE_TOOLS is set: this test needs root"
        );
        eprintln!("skipped: needs root to run a client as nobody");
        return;
    }
    assert_nobody_is_refused(&daemon, &["inventory", "--watch"]);
}
