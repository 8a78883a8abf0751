//! packaging/monitoring/ against a real Prometheus: Debian's Prometheus 3.5
//! and node_exporter 1.11 (`prometheus` stage of `.ci/run`), the shipped
//! scrape job (`prometheus-scrape.yml`, only its API server and interval
//! changed: [`prometheus::config`]), the shipped alerts loaded as rules, and
//! a simulated node as the scrape finds one in a cluster:
//!
//! - **node-1**: the real gpusliced (simulated H100s, gpu-1 in MIG, sampling
//!   every second) writing its `[metrics] textfile` into the folder a real
//!   node_exporter's textfile collector serves at node-1's InternalIP:9100;
//!   a claim of every kind (a whole GPU, a MIG slice, MPS with a 4 GiB share,
//!   time-slicing), fake GPU processes (`gpuslicectl sim exec`), the MPS
//!   claim over its share, the time-sliced claim idle (no process), a
//!   process of no claim, one Prepare refused, one GPU made unhealthy (an injected XID);
//! - **node-2**: a Node whose address nothing answers (gpusliced's node not
//!   scraped);
//! - **node-3**: a node_exporter serving a gpuslice textfile an hour old (a
//!   gpusliced that stopped);
//! - the Nodes come from a fake API server, and kube-state-metrics'
//!   `kube_pod_resourceclaim_info` of the Pods using the claims from a fake
//!   kube-state-metrics ([`cluster`]).
//!
//! Then every query of the dashboard and of the alerts must return the
//! series it is meant to show: each dashboard query returns data (a stat's
//! `or vector(0)` left off), the join names each claim's pod, the alerts the
//! scenario causes are active in Prometheus (pending for their `for:`) and
//! their expressions return data, and the one it does not cause (a
//! `[limits]` action that failed: gpusliced as root may end any process, so
//! only a unit without CAP_KILL meets it; its firing is unit-tested by
//! `promtool test rules`) stays quiet while the series it watches exist at 0.

mod cluster;
mod prometheus;
mod queries;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::activity::processes::Processes;
use crate::activity::{ctl_ok, eventually};
use crate::common::ctl::run_ctl;
use crate::harness::Daemon;
use crate::stand_ins::{SharedDaemon, daemon_of, memory, mps, timeslicing};
use crate::tools::skip;
use prometheus::{Prometheus, Tools};

/// (uid, namespace, claim, pod) of the claim of each kind.
const WHOLE: [&str; 4] = [
    "e1e1e1e1-3232-4000-8000-00000000000e",
    "research",
    "train-0-gpu-x7k2p",
    "train-0",
];
const SLICE: [&str; 4] = [
    "f2f2f2f2-3232-4000-8000-00000000000f",
    "research",
    "eval-0-gpu-q9d4s",
    "eval-0",
];
const SHARED: [&str; 4] = [
    "a3a3a3a3-3232-4000-8000-00000000000a",
    "serving",
    "infer-0-gpu-b3m8r",
    "infer-0",
];
const SLICED_TIME: [&str; 4] = [
    "b4b4b4b4-3232-4000-8000-00000000000b",
    "serving",
    "notebook-0-gpu-z1c6v",
    "notebook-0",
];

/// The alert the scenario does not cause, with the series it watches.
const QUIET: [(&str, &str); 1] = [(
    "GpusliceLimitActionFailed",
    r#"gpuslice_limit_actions_total{node="node-1",outcome=~"failed|not-permitted"}"#,
)];

/// Three loopback addresses of their own for node-1..3 (node_exporter
/// must listen on port 9100, as the scrape job asks).
fn node_ips() -> [String; 3] {
    let pid = std::process::id();
    let (a, b) = (100 + pid % 100, (pid / 100) % 250);
    [1, 2, 3].map(|host| format!("127.{a}.{b}.{host}"))
}

fn config(textfile: &Path) -> String {
    format!(
        "[activity]\ninterval_s = 1\n[advice]\nmin_observed_s = 3\n\
         [metrics]\ntextfile = \"{}\"\ntextfile_interval_seconds = 1\npool_name = \"node-1\"\n\
         [mig]\nadvertise = \"layout\"\n[[mig.gpu]]\nindex = 1\n\
         layout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]\n",
        textfile.display()
    )
}

/// A gpuslice textfile last written an hour ago, as a gpusliced that
/// stopped leaves it.
fn stale_textfile(dir: &Path) {
    let path = dir.join("gpuslice.prom");
    let file = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&path)
        .and_then(|mut f| {
            f.write_all(b"# HELP gpuslice_gpus Whole GPUs in the inventory\n# TYPE gpuslice_gpus gauge\ngpuslice_gpus 8\n")?;
            Ok(f)
        })
        .expect("write the stale textfile");
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    file.set_modified(hour_ago).expect("date it an hour back");
}

fn prepare(node: &Daemon, claim: [&str; 4], device: &str, configs: &[String]) {
    let mut args = vec![
        "prepare",
        "--uid",
        claim[0],
        "--namespace",
        claim[1],
        "--name",
        claim[2],
        "--device",
        device,
    ];
    for config in configs {
        args.extend(["--config", config]);
    }
    ctl_ok(node, &args);
}

/// The first 1g.10gb slice gpu-1's layout offers.
fn slice_device(node: &Daemon) -> String {
    ctl_ok(node, &["inventory"])
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .find(|d| d.starts_with("gpu-1-mig-1g10gb-"))
        .expect("a 1g.10gb slice in the inventory")
        .to_owned()
}

/// The MIG capability files of the shipped simulated driver root
/// (examples/sim-root) in the node's root (`dir`/root), so a slice can be
/// given out.
fn mig_capabilities(dir: &Path) {
    let shipped = crate::tools::repo_root().join("examples/sim-root");
    let root = dir.join("root");
    for (from, to) in [("proc", "proc"), ("dev/nvidia-caps", "dev/nvidia-caps")] {
        std::os::unix::fs::symlink(shipped.join(from), root.join(to)).expect("link into root");
    }
}

/// A claim of every kind, processes in three of them, and a process of no
/// claim on gpu-0.
fn claims_of_every_kind(node: &Daemon, procs: &mut Processes) {
    prepare(node, WHOLE, "gpu-0", &[]);
    prepare(node, SLICE, &slice_device(node), &[]);
    prepare(node, SHARED, "gpu-2", &[mps(50), memory("4Gi")]);
    prepare(node, SLICED_TIME, "gpu-3", &[timeslicing("Long")]);
    procs.exec(node, WHOLE[0], &["--memory", "4Gi", "--sm", "5"]);
    procs.exec(node, SLICE[0], &["--memory", "2Gi", "--sm", "20"]);
    procs.exec(node, SHARED[0], &["--memory", "5Gi", "--sm", "10"]);
    procs.exec_no_claim(node, "gpu-0");
}

/// A Prepare gpusliced refuses (a device it does not have).
fn refused_prepare(node: &Daemon) {
    let args = ["prepare", "--uid", "c5c5c5c5-3232-4000-8000-00000000000c"];
    let place = [
        "--namespace",
        "serving",
        "--name",
        "typo",
        "--device",
        "gpu-9",
    ];
    run_ctl(&node.socket, &[&args[..], &place].concat()).refused();
}

/// The shared claim's MPS control daemon dies and cannot start again, as
/// with a broken MPS install: the stand-in is told to exit before binding
/// its socket from now on, and the running daemon is killed (only it: its
/// clients, the claim's processes, live on). gpusliced's supervisor tries
/// to restart it and marks it failed.
async fn mps_daemon_fails(node: &SharedDaemon) {
    let wrapper = node.path().join("mps-control");
    let text = std::fs::read_to_string(&wrapper).expect("read the wrapper");
    let failing = text.replacen(
        "FAKE_MPS_RECORD=",
        "FAKE_MPS_FAIL_START=1 FAKE_MPS_RECORD=",
        1,
    );
    assert_ne!(failing, text, "{text}");
    std::fs::OpenOptions::new()
        .truncate(true)
        .write(true)
        .open(&wrapper)
        .and_then(|mut f| f.write_all(failing.as_bytes()))
        .expect("rewrite the wrapper");
    let daemon = daemon_of(&node.sharing().await, "gpu-2")
        .cloned()
        .expect("gpu-2's MPS daemon");
    let pid = i32::try_from(daemon.pid).expect("a pid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the MPS daemon");
}

/// Appends an XID event for gpu-3 to the simulator's health events file.
fn unhealthy_gpu(node: &Daemon) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(node.dir.path().join("sim-health-events"))
        .and_then(|mut f| f.write_all(b"gpu=3 xid=79\n"))
        .expect("append an event");
}

fn label<'a>(series: &'a Value, name: &str) -> &'a str {
    series["metric"][name].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sim_node_scraped_by_a_real_prometheus_answers_every_dashboard_and_alert_query() {
    let test = "sim_node_scraped_by_a_real_prometheus_answers_every_dashboard_and_alert_query";
    let tools = match Tools::find() {
        Ok(tools) => tools,
        Err(why) => return skip(test, &why),
    };
    let files = tempfile::tempdir().expect("temp dir");
    let (live, stale, server) = (
        files.path().join("node-1"),
        files.path().join("node-3"),
        files.path().join("prometheus"),
    );
    for dir in [&live, &stale, &server] {
        std::fs::create_dir(dir).expect("create a folder");
    }
    stale_textfile(&stale);
    let extra = config(&live.join("gpuslice.prom"));
    let Some(node) = SharedDaemon::start_with(test, 4, &extra, mig_capabilities) else {
        return;
    };
    let ips = node_ips();
    let _live_exporter =
        prometheus::node_exporter(&tools, &ips[0], &live, files.path().join("ne-1.log")).await;
    let _stale_exporter =
        prometheus::node_exporter(&tools, &ips[2], &stale, files.path().join("ne-3.log")).await;
    let mut procs = Processes::default();
    claims_of_every_kind(&node, &mut procs);
    let pods: Vec<Value> = [WHOLE, SLICE, SHARED, SLICED_TIME]
        .iter()
        .map(|c| cluster::pod(c[1], c[3], "gpu", &format!("{}-gpu", c[3]), c[2]))
        .collect();
    let nodes = ["node-1", "node-2", "node-3"]
        .iter()
        .zip(&ips)
        .map(|(name, ip)| cluster::node(name, ip))
        .collect();
    let api = cluster::serve(nodes, cluster::resourceclaim_info(&pods)).await;
    let config = prometheus::config(&format!("http://{api}"), &api);
    let prom = Prometheus::start(&tools, &server, &config, &queries::rule_file()).await;
    scraped_as_a_cluster_would(&prom).await;
    prepare_error_counted(&node, &prom).await;
    unhealthy_gpu(&node);
    mps_daemon_fails(&node).await;
    eventually(&node, "gpu-3 unhealthy in Prometheus", || {
        (!prom.query("gpuslice_device_unhealthy").is_empty()).then_some(())
    })
    .await;
    every_dashboard_query_returns_data(&prom).await;
    the_join_names_each_claims_pod(&prom);
    alerts_active_or_quiet(&prom).await;
    drop(procs);
}

/// node-1's series come through the shipped job, labelled with the Node;
/// node-2 is a target that is down; the four claims are there with their
/// processes' memory.
async fn scraped_as_a_cluster_would(prom: &Prometheus) {
    let up = prom
        .until("node-1 and node-3 up, node-2 down", || {
            let all = prom.query(r#"up{job="gpusliced"}"#);
            let state: BTreeSet<(String, String)> = all
                .iter()
                .map(|s| {
                    let value = s["value"][1].as_str().unwrap_or_default();
                    (label(s, "node").to_owned(), value.to_owned())
                })
                .collect();
            (state.len() == 3).then_some(state)
        })
        .await;
    let expected = [("node-1", "1"), ("node-2", "0"), ("node-3", "1")]
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .into();
    assert_eq!(up, expected);
    let used = prom
        .until("the processes' memory of three claims", || {
            let all = prom.query(r#"gpuslice_claim_memory_used_bytes{node="node-1"} > 0"#);
            (all.len() == 3).then_some(all)
        })
        .await;
    for (claim, gib) in [(WHOLE, 4), (SLICE, 2), (SHARED, 5)] {
        let series = used
            .iter()
            .find(|s| label(s, "dra_claim_name") == claim[2])
            .unwrap_or_else(|| panic!("{}: {used:#?}", claim[2]));
        assert_eq!(label(series, "dra_claim_namespace"), claim[1]);
        assert_eq!(label(series, "dra_pool_name"), "node-1");
        assert_eq!(label(series, "dra_driver_name"), "gpu.nvidia.com");
        assert_eq!(series["value"][1], format!("{}", gib * (1u64 << 30)));
    }
    let kinds: BTreeSet<String> = prom
        .query(r#"gpuslice_claims{node="node-1"} > 0"#)
        .iter()
        .map(|s| label(s, "kind").to_owned())
        .collect();
    assert_eq!(
        kinds,
        ["exclusive", "mig", "mps", "timeslicing"]
            .map(str::to_owned)
            .into(),
        "a claim of every kind"
    );
}

/// The error outcome's series is scraped at 0 first, so the refused
/// Prepare is an increase the alert sees.
async fn prepare_error_counted(node: &Daemon, prom: &Prometheus) {
    let errors = r#"gpuslice_prepare_duration_seconds_count{node="node-1",outcome="error"}"#;
    prom.until("the error count scraped at 0", || {
        (prom.query(&format!("{errors} == 0")).len() == 1).then_some(())
    })
    .await;
    refused_prepare(node);
    prom.until("the refused Prepare counted", || {
        (prom.query(&format!("{errors} == 1")).len() == 1).then_some(())
    })
    .await;
}

/// Each query of the dashboard returns at least one series.
async fn every_dashboard_query_returns_data(prom: &Prometheus) {
    let all = queries::dashboard_queries();
    assert!(all.len() > 20, "{all:#?}");
    for query in &all {
        prom.until(&format!("{}: {}", query.source, query.expr), || {
            (!prom.query(&query.expr).is_empty()).then_some(())
        })
        .await;
    }
    let over =
        prom.query("count(gpuslice_claim_memory_used_bytes > gpuslice_claim_memory_share_bytes)");
    assert_eq!(
        over[0]["value"][1], "1",
        "one claim over its share: {over:#?}"
    );
    let idle = prom.query(
        "count(sum by (dra_claim_namespace, dra_claim_name, dra_pool_name) \
         (gpuslice_claim_processes) == 0)",
    );
    assert_eq!(
        idle[0]["value"][1], "1",
        "one claim without a process: {idle:#?}"
    );
}

/// docs/monitoring.md's kube-state-metrics join (the dashboard's "Pods of
/// the claim") puts each claim's pod beside its memory use.
fn the_join_names_each_claims_pod(prom: &Prometheus) {
    let examples = queries::doc_examples();
    let join = examples
        .iter()
        .find(|q| q.expr.contains("kube_pod_resourceclaim_info"))
        .expect("docs/monitoring.md's kube-state-metrics join");
    let joined = prom.query(&join.expr);
    let pods: BTreeSet<(&str, &str)> = joined
        .iter()
        .map(|s| (label(s, "dra_claim_name"), label(s, "pod")))
        .collect();
    let expected: BTreeSet<(&str, &str)> = [WHOLE, SLICE, SHARED, SLICED_TIME]
        .iter()
        .map(|c| (c[2], c[3]))
        .collect();
    assert_eq!(pods, expected, "{joined:#?}");
}

/// Every alert the scenario causes is active and its expression returns
/// data; the one it does not cause is quiet, over series that exist.
async fn alerts_active_or_quiet(prom: &Prometheus) {
    let alerts = queries::alerts();
    assert_eq!(alerts.len(), 9, "{alerts:#?}");
    for alert in &alerts {
        if let Some((_, watched)) = QUIET.iter().find(|(name, _)| *name == alert.source) {
            assert!(prom.query(&alert.expr).is_empty(), "{} fires", alert.source);
            let series = prom.query(watched);
            assert!(
                !series.is_empty() && series.iter().all(|s| s["value"][1] == "0"),
                "{}: {watched} must exist at 0: {series:#?}",
                alert.source
            );
            continue;
        }
        prom.until(&format!("{} active", alert.source), || {
            let active = prom.alerts().into_iter().any(|a| {
                a["labels"]["alertname"] == alert.source.as_str()
                    && (a["state"] == "pending" || a["state"] == "firing")
            });
            (active && !prom.query(&alert.expr).is_empty()).then_some(())
        })
        .await;
    }
    let active: BTreeSet<String> = prom
        .alerts()
        .iter()
        .map(|a| {
            a["labels"]["alertname"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    for (name, _) in QUIET {
        assert!(!active.contains(name), "{name} active: {active:?}");
    }
}
