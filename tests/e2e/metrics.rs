//! Prometheus metrics end to end: the real gpusliced with `[metrics]`, claims
//! prepared and unprepared over its socket, then the loopback listener
//! scraped with a plain HTTP client, and the textfile read back after
//! shutdown; both checked with the Go parser node_exporter uses
//! (`promcheck`) where it is installed, and always with the checks here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::Code;

use crate::common::claims::Claims;
use crate::common::files::write_gpuslice_toml;
use crate::harness::{Daemon, prepare_request, run_to_exit};
use crate::promcheck;
use crate::stand_ins::{SharedDaemon, mps, shared_request, timeslicing};

const A: &str = "a1a1a1a1-0000-4000-8000-00000000000a";
const B: &str = "b2b2b2b2-0000-4000-8000-00000000000b";
const C: &str = "c3c3c3c3-0000-4000-8000-00000000000c";
const D: &str = "d4d4d4d4-0000-4000-8000-00000000000d";
const SLICE: &str = "gpu-1-mig-3g40gb-4";

/// Two simulated H100s, gpu-1 in MIG mode, plus `metrics` (a `[metrics]` body).
fn write_config(dir: &Path, metrics: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/sim-root");
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"{}\"\n[backend]\nkind = \"sim\"\n\
         [backend.sim]\ngpus = [\"H100-80GB\", \"H100-80GB\"]\n\
         [[mig.gpu]]\nindex = 1\nlayout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]\n\
         [metrics]\n{metrics}\n",
        root.display()
    );
    write_gpuslice_toml(dir, &text);
}

/// `host:port` from the READY status ("...; metrics on http://ADDR/metrics").
fn metrics_addr(daemon: &Daemon) -> String {
    daemon
        .ready_status
        .split("metrics on http://")
        .nth(1)
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address in {:?}", daemon.ready_status))
        .to_owned()
}

/// GET /metrics over a plain TCP connection; returns (status line, headers, body).
async fn scrape(addr: &str, accept: &str) -> (String, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (
        status.to_owned(),
        headers.to_ascii_lowercase(),
        body.to_owned(),
    )
}

/// Sample lines as "name{labels}" → value; label order as written.
fn samples(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(series, v)| (series.to_owned(), v.parse().expect("numeric value")))
        .collect()
}

/// Prepares and unprepares so that every outcome and two error codes occur.
async fn drive(daemon: &Daemon) {
    let mut client = daemon.client().await;
    client.prepare_whole(A, &["gpu-0"]).await;
    let again = client.prepare_whole(A, &["gpu-0"]).await;
    assert!(again.already_prepared);
    let held = client
        .prepare(prepare_request(B, &["gpu-0"]))
        .await
        .expect_err("gpu-0 is held by A");
    assert_eq!(held.code(), Code::FailedPrecondition);
    let bad = client
        .prepare(prepare_request("not-a-uid", &["gpu-0"]))
        .await
        .expect_err("not a uid");
    assert_eq!(bad.code(), Code::InvalidArgument);
    client.prepare_whole(C, &[SLICE]).await;
    let partitioned = client
        .prepare(prepare_request(D, &["gpu-1"]))
        .await
        .expect_err("C holds a slice of gpu-1");
    assert_eq!(partitioned.code(), Code::FailedPrecondition);
    client.unprepare_claim(B).await;
    client.unprepare_claim(C).await;
    client.prepare_whole(C, &[SLICE]).await;
}

/// What [`drive`] leaves, as the 0.0.4 text shows it.
fn assert_counts(all: &BTreeMap<String, f64>, text: &str) {
    let get = |series: &str| {
        all.get(series)
            .copied()
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    assert_eq!(get("gpuslice_claims{kind=\"exclusive\"}"), 1.0);
    assert_eq!(get("gpuslice_claims{kind=\"mig\"}"), 1.0);
    assert_eq!(get("gpuslice_claims{kind=\"mps\"}"), 0.0);
    assert_eq!(get("gpuslice_gpus"), 2.0);
    let slices = |profile: &str, state: &str| {
        get(&format!(
            "gpuslice_mig_slices{{gpu=\"gpu-1\",profile=\"{profile}\",state=\"{state}\"}}"
        ))
    };
    assert_eq!(slices("3g.40gb", "held"), 1.0);
    assert_eq!(slices("3g.40gb", "free"), 0.0);
    assert_eq!(slices("1g.10gb", "free"), 2.0);
    assert_eq!(slices("2g.20gb", "free"), 1.0);
    let prepares = |outcome: &str| {
        get(&format!(
            "gpuslice_prepare_duration_seconds_count{{outcome=\"{outcome}\"}}"
        ))
    };
    assert_eq!(prepares("prepared"), 3.0, "A, C, C again");
    assert_eq!(prepares("already_prepared"), 1.0);
    assert_eq!(prepares("error"), 3.0, "B held, bad uid, gpu-1 partitioned");
    let unprepares = |outcome: &str| {
        get(&format!(
            "gpuslice_unprepare_duration_seconds_count{{outcome=\"{outcome}\"}}"
        ))
    };
    assert_eq!(unprepares("unprepared"), 1.0);
    assert_eq!(unprepares("not_prepared"), 1.0);
    assert_eq!(unprepares("error"), 0.0);
    let errors = |code: &str| {
        get(&format!(
            "gpuslice_errors_total{{rpc=\"Prepare\",code=\"{code}\"}}"
        ))
    };
    assert_eq!(
        errors("FAILED_PRECONDITION"),
        2.0,
        "B held, gpu-1 partitioned"
    );
    assert_eq!(errors("INVALID_ARGUMENT"), 1.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_metrics_listener_counts_claims_calls_and_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_config(dir.path(), "listen = \"127.0.0.1:0\"");
    let daemon = Daemon::start_in(dir);
    let addr = metrics_addr(&daemon);
    drive(&daemon).await;

    let (status, headers, text) = scrape(&addr, "*/*").await;
    assert_eq!(status, "HTTP/1.1 200 OK", "{text}");
    assert!(
        headers.contains("content-type: text/plain; version=0.0.4"),
        "{headers}"
    );
    assert_counts(&samples(&text), &text);
    if let Some(go) =
        promcheck::check_text("sim_metrics_listener_counts_claims_calls_and_errors", &text)
    {
        let prepared = promcheck::value(
            &go,
            "gpuslice_prepare_duration_seconds",
            &[("outcome", "prepared")],
        );
        assert_eq!(prepared, Some(3.0));
        let errors = promcheck::value(
            &go,
            "gpuslice_errors_total",
            &[("rpc", "Prepare"), ("code", "INVALID_ARGUMENT")],
        );
        assert_eq!(
            errors,
            Some(1.0),
            "a typed counter, as the Go parser reads it"
        );
    }

    let prometheus = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
    let (status, headers, text) = scrape(&addr, prometheus).await;
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(headers.contains("content-type: application/openmetrics-text; version=1.0.0"));
    assert!(text.ends_with("\n# EOF\n"), "{text}");
    assert!(text.contains("# TYPE gpuslice_errors counter\n"), "{text}");

    let (status, _dir) = daemon.stop();
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(
        tokio::net::TcpStream::connect(&addr).await.is_err(),
        "the listener is closed at shutdown"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_metrics_textfile_is_written_at_start_and_at_shutdown() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("prom")).expect("textfile dir");
    // An hour between writes: only start-up and shutdown write during the test.
    write_config(
        dir.path(),
        "textfile = \"prom/gpuslice.prom\"\ntextfile_interval_seconds = 3600",
    );
    let path: PathBuf = dir.path().join("prom/gpuslice.prom");
    let daemon = Daemon::start_in(dir);
    let first = std::fs::read_to_string(&path).expect("written before READY=1");
    assert_eq!(
        samples(&first).get("gpuslice_claims{kind=\"exclusive\"}"),
        Some(&0.0)
    );
    drive(&daemon).await;
    assert_eq!(
        std::fs::read_to_string(&path).expect("textfile"),
        first,
        "not rewritten yet"
    );

    let (status, dir) = daemon.stop();
    assert_eq!(status.code(), Some(0), "{status}");
    let last = std::fs::read_to_string(&path).expect("textfile after shutdown");
    assert!(!last.contains("# EOF"), "{last}");
    assert_counts(&samples(&last), &last);
    if let Some(go) = promcheck::check_text(
        "sim_metrics_textfile_is_written_at_start_and_at_shutdown",
        &last,
    ) {
        let held = promcheck::value(
            &go,
            "gpuslice_mig_slices",
            &[("gpu", "gpu-1"), ("profile", "3g.40gb"), ("state", "held")],
        );
        assert_eq!(held, Some(1.0));
    }
    let names = crate::harness::list(&dir.path().join("prom"));
    assert_eq!(
        names,
        vec!["gpuslice.prom"],
        "no temp file left for node_exporter to see"
    );
}

#[test]
fn sim_metrics_listen_refuses_a_taken_port_and_a_remote_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let dir = tempfile::tempdir().expect("temp dir");
    write_config(dir.path(), &format!("listen = \"{addr}\""));
    let (status, stderr) = run_to_exit(&dir.path().join("gpuslice.toml"));
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("metrics.listen") && stderr.contains(&addr),
        "{stderr}"
    );
    // Said once, with its cause once: not as a log line and again as a
    // last line, nor the OS error twice in one line.
    assert_eq!(stderr.matches("metrics.listen").count(), 1, "{stderr}");
    let in_use = std::io::Error::from_raw_os_error(libc::EADDRINUSE).to_string();
    assert_eq!(stderr.matches(&in_use).count(), 1, "{in_use}: {stderr}");
    assert!(
        !dir.path().join("gpusliced.sock").exists(),
        "no socket left behind"
    );

    write_config(dir.path(), "listen = \"0.0.0.0:9464\"");
    let (status, stderr) = run_to_exit(&dir.path().join("gpuslice.toml"));
    assert_eq!(status.code(), Some(2), "a config error: {stderr}");
    assert!(
        stderr.contains("metrics.listen") && stderr.contains("loopback"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_metrics_count_shared_claims_and_mps_daemons() {
    let test = "sim_metrics_count_shared_claims_and_mps_daemons";
    let Some(daemon) = SharedDaemon::start(test, 3, "[metrics]\nlisten = \"127.0.0.1:0\"\n") else {
        return;
    };
    let addr = metrics_addr(&daemon);
    let mut client = daemon.client().await;
    for (uid, gpu, config) in [
        (A, "gpu-0", mps(50)),
        (B, "gpu-0", mps(50)),
        (C, "gpu-1", timeslicing("Long")),
    ] {
        client
            .prepare(shared_request(uid, &[gpu], &[config]))
            .await
            .unwrap_or_else(|e| panic!("prepare {uid}: {e}"));
    }
    let (status, _, text) = scrape(&addr, "*/*").await;
    assert_eq!(status, "HTTP/1.1 200 OK", "{text}");
    let all = samples(&text);
    let get = |series: &str| {
        all.get(series)
            .copied()
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
    };
    assert_eq!(
        get("gpuslice_claims{kind=\"mps\"}"),
        2.0,
        "two claims on one daemon"
    );
    assert_eq!(get("gpuslice_claims{kind=\"timeslicing\"}"), 1.0);
    assert_eq!(get("gpuslice_claims{kind=\"exclusive\"}"), 0.0);
    assert_eq!(get("gpuslice_mps_daemons{state=\"running\"}"), 1.0);
    assert_eq!(get("gpuslice_mps_daemons{state=\"failed\"}"), 0.0);
}
