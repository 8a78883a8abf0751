//! `[mig] advertise = "auto"` end to end: the real plugin probes the fake API
//! server, tells the real gpusliced, and publishes the form the API server
//! keeps. With DRAPartitionableDevices on: shared counters and every
//! (profile, placement); off (the fake drops the fields on create, dry run
//! included, as the real strategy does): the layout, no counters. Switched
//! off under a running plugin: the next write's answer lacks its counters,
//! the plugin probes again and republishes the layout. Each time the
//! plugin logs why and `gpuslicectl status` shows it.

use serde_json::Value;

use crate::fake_apiserver::{FakeApiServer, State};
use crate::gpusliced::Daemon;
use crate::peers::Shim;
use crate::{BOUND, NODE, NODE_UID};

/// gpu-0 in MIG mode with a two-slice layout, gpu-1 whole; advertise left
/// at its default.
const MIG: &str = "[mig]\n[[mig.gpu]]\nindex = 0\nlayout = [\"3g.40gb\", \"1g.10gb\"]\n";
const KEPT: &str = "auto: the API server keeps sharedCounters and consumesCounters";
const DROPPED: &str =
    "auto: the API server drops sharedCounters and consumesCounters (DRAPartitionableDevices off)";

fn devices(state: &State) -> Vec<Value> {
    (state.slices.values())
        .flat_map(|s| s["spec"]["devices"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn counter_sets(state: &State) -> usize {
    (state.slices.values())
        .filter_map(|s| s["spec"]["sharedCounters"].as_array())
        .map(Vec::len)
        .sum()
}

/// The layout: gpu-1 whole and gpu-0's two slices (a MIG-managed GPU is not
/// offered whole in layout mode), no counters anywhere.
fn layout_published(state: &State) -> bool {
    let devices = devices(state);
    devices.len() == 3
        && counter_sets(state) == 0
        && devices.iter().all(|d| d["consumesCounters"].is_null())
}

/// Partitionable: gpu-0's counter set and far more slices, each drawing
/// from it.
fn partitionable_published(state: &State) -> bool {
    let devices = devices(state);
    let slices = devices
        .iter()
        .filter(|d| d["name"].as_str().is_some_and(|n| n.contains("-mig-")));
    counter_sets(state) == 1
        && devices.len() > 4
        && slices.clone().count() + 2 == devices.len()
        && slices.into_iter().all(|d| !d["consumesCounters"].is_null())
}

struct Node {
    api: FakeApiServer,
    daemon: Daemon,
    shim: Shim,
    _dir: tempfile::TempDir,
}

fn node(gate: bool) -> Node {
    node_with_faults(gate, &[])
}

/// [`node`], its API server answering the first writes with `script`
/// ([`crate::fake_faults`]; None: served).
fn node_with_faults(gate: bool, script: &[Option<u16>]) -> Node {
    let dir = tempfile::tempdir().expect("temp dir");
    let api = FakeApiServer::start_with_gate(NODE, NODE_UID, gate);
    api.mutate(|s| s.faults.script = script.iter().copied().collect());
    let daemon_dir = dir.path().join("daemon");
    let daemon = Daemon::start_with(&daemon_dir, 2, MIG);
    let shim_dir = dir.path().join("shim");
    let shim = Shim::start(&shim_dir, &api.url, &daemon.socket);
    Node {
        api,
        daemon,
        shim,
        _dir: dir,
    }
}

impl Node {
    fn wait(&self, what: &str, done: impl Fn(&State) -> bool) {
        if self
            .api
            .wait_for(BOUND, |s| done(s) && s.violations.is_empty())
        {
            return;
        }
        // One look at the state: `state()` holds its lock, so a second call in
        // the same expression would wait on this one for ever.
        let (violations, names) = {
            let state = self.api.state();
            let names: Vec<Value> = devices(&state).iter().map(|d| d["name"].clone()).collect();
            (format!("{:?}", state.violations), names)
        };
        panic!(
            "{what}: not within {BOUND:?}; violations {violations}; devices {names:?}; shim log:\n{}\ngpusliced log:\n{}",
            self.shim.log(),
            self.daemon.log()
        );
    }

    /// The shim's log and gpuslicectl both say the MIG form is `form`, for
    /// `reason`.
    fn advertises(&self, form: &str, reason: &str) {
        self.logged(&format!("MIG advertise: {form} ({reason})"));
        self.status_says(form, reason);
    }

    /// gpuslicectl shows `form (reason)`, in the table and in JSON.
    fn status_says(&self, form: &str, reason: &str) {
        let text = self.daemon.status_text();
        assert!(
            text.lines()
                .any(|l| l.starts_with("mig advertise")
                    && l.ends_with(&format!("{form} ({reason})"))),
            "{text}"
        );
        let json = self.daemon.status_json();
        assert_eq!(json["mig_advertise"]["form"], form, "{json}");
        assert_eq!(json["mig_advertise"]["configured"], "auto", "{json}");
        assert_eq!(json["mig_advertise"]["reason"], reason, "{json}");
    }

    fn logged(&self, line: &str) {
        let log = self.shim.log();
        assert!(log.contains(line), "{line:?} not in the shim log:\n{log}");
    }
}

#[test]
fn with_the_gate_on_the_plugin_publishes_partitionable_devices() {
    let node = node(true);
    node.wait("partitionable devices", partitionable_published);
    node.advertises("partitionable", KEPT);
    let probes = node.api.state().dry_runs.clone();
    assert_eq!(
        probes.len(),
        2,
        "one counter slice, one device slice: {probes:?}"
    );
    assert!(probes.iter().all(|p| p["nodeName"] == NODE), "{probes:?}");
}

#[test]
fn with_the_gate_off_the_plugin_publishes_the_layout_and_says_why() {
    let node = node(false);
    node.wait("the layout", layout_published);
    node.advertises("layout", DROPPED);
    let names: Vec<String> = devices(&node.api.state())
        .iter()
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect();
    assert!(names.iter().any(|n| n == "gpu-0-mig-3g40gb-4"), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("gpu-0-mig-1g10gb-")),
        "{names:?}"
    );
}

#[test]
fn a_gate_switched_off_under_the_plugin_is_noticed_at_the_next_write() {
    let node = node(true);
    node.wait("partitionable devices", partitionable_published);
    // The API server restarts with the gate off; the kubelet's restart
    // deletes our slices, so the plugin creates them again.
    node.api.mutate(|s| {
        s.partitionable = false;
        s.delete_all_slices();
    });
    node.wait("the layout after the gate went off", layout_published);
    node.logged("dropped");
    node.advertises("layout", DROPPED);
}

#[test]
fn transient_errors_decide_nothing_and_the_verdict_is_kept_across_retries() {
    // The first dry run fails (409: the name generateName drew is taken),
    // then the second (500); once the verdict is in, the first slice
    // writes fail too (409, 500, 409). No kube-level retry hides these.
    let script = [
        Some(409),
        None,
        Some(500),
        None,
        Some(409),
        Some(500),
        Some(409),
    ];
    let node = node_with_faults(true, &script);
    node.wait("partitionable devices", partitionable_published);
    node.logged(&format!("MIG advertise: partitionable ({KEPT})"));
    let log = node.shim.log();
    assert!(!log.contains("MIG advertise: layout"), "{log}");
    node.status_says("partitionable", KEPT);
    let state = node.api.state();
    assert_eq!(state.faults.failed.len(), 5, "{:?}", state.faults.failed);
    let failed_dry_runs = (state.faults.failed.iter())
        .filter(|f| f.contains("dryRun=All"))
        .count();
    // Two dry runs failed, two answered: none sent again after the verdict,
    // whatever the writes met.
    assert_eq!(
        (failed_dry_runs, state.dry_runs.len()),
        (2, 2),
        "{:?}",
        state.faults.failed
    );
}
