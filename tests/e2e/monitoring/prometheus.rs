//! The real Prometheus and node_exporter of the monitoring test: Debian
//! sid's `prometheus` and `prometheus-node-exporter`, unpacked by `.ci/run`'s
//! `prometheus` stage under `$GPUSLICE_PROMETHEUS` (default
//! /var/cache/gpuslice-test/prometheus). Finding them, running them as
//! children that die with the test, the Prometheus config made from the
//! shipped scrape snippet, and Prometheus' HTTP query API.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};

use crate::tools::repo_root;

/// Upper bound for Prometheus to start or answer; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(60);

/// The binaries, or why they are missing.
pub struct Tools {
    pub prometheus: PathBuf,
    pub node_exporter: PathBuf,
}

impl Tools {
    /// Both binaries under `$GPUSLICE_PROMETHEUS/root/usr/bin`, or why not.
    pub fn find() -> Result<Self, String> {
        let dir = std::env::var_os("GPUSLICE_PROMETHEUS").map_or_else(
            || PathBuf::from("/var/cache/gpuslice-test/prometheus"),
            PathBuf::from,
        );
        let bin = dir.join("root/usr/bin");
        let tools = Self {
            prometheus: bin.join("prometheus"),
            node_exporter: bin.join("prometheus-node-exporter"),
        };
        for tool in [&tools.prometheus, &tools.node_exporter] {
            if !tool.is_file() {
                return Err(format!(
                    "no {} (.ci/run's prometheus stage unpacks Debian's prometheus and \
                     prometheus-node-exporter there; GPUSLICE_PROMETHEUS names another folder)",
                    tool.display()
                ));
            }
        }
        Ok(tools)
    }
}

/// A child process killed and reaped when dropped; its stderr goes to `log`.
pub struct Child {
    child: std::process::Child,
    log: PathBuf,
}

impl Child {
    fn spawn(command: &mut Command, log: PathBuf) -> Self {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&log)
            .expect("create a log file");
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log file"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
        Self { child, log }
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        drop(self.child.kill());
        drop(self.child.wait());
    }
}

/// node_exporter on `ip`:9100 (the port the shipped scrape config asks
/// for), with only the textfile collector, reading `textfiles`.
pub async fn node_exporter(tools: &Tools, ip: &str, textfiles: &Path, log: PathBuf) -> Child {
    let mut command = Command::new(&tools.node_exporter);
    command
        .arg(format!("--web.listen-address={ip}:9100"))
        .arg("--collector.disable-defaults")
        .arg("--collector.textfile")
        .arg(format!(
            "--collector.textfile.directory={}",
            textfiles.display()
        ));
    let child = Child::spawn(&mut command, log);
    let began = Instant::now();
    while !child.log().contains("msg=\"Listening on\"") {
        assert!(
            began.elapsed() < BOUND,
            "node_exporter on {ip}:9100 did not start (is something else on that port?):\n{}",
            child.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    child
}

/// The shipped `scrape_configs` job (packaging/monitoring/
/// prometheus-scrape.yml) as a Prometheus in the cluster would run it, with
/// only what a test must change: its Kubernetes service discovery asks the
/// fake API server at `api_server` (in a cluster it finds the API server
/// itself), and it scrapes every second (the snippet says 30 s). A second
/// job scrapes the fake kube-state-metrics at `ksm`; the alerts of
/// prometheusrule.yaml are loaded as `rules.yml`.
pub fn config(api_server: &str, ksm: &str) -> Value {
    let snippet = repo_root().join("packaging/monitoring/prometheus-scrape.yml");
    let text = std::fs::read_to_string(&snippet).expect("read the scrape snippet");
    let shipped: Value = serde_norway::from_str(&text).expect("the snippet is YAML");
    let mut jobs = shipped["scrape_configs"]
        .as_array()
        .cloned()
        .expect("scrape_configs");
    assert_eq!(jobs.len(), 1, "one job: {shipped}");
    let job = &mut jobs[0];
    assert_eq!(job["job_name"], "gpusliced", "{job}");
    job["scrape_interval"] = json!("1s");
    let discovery = &mut job["kubernetes_sd_configs"][0];
    assert_eq!(discovery["role"], "node", "{discovery}");
    discovery["api_server"] = json!(api_server);
    jobs.push(json!({
        "job_name": "kube-state-metrics",
        "scrape_interval": "1s",
        "static_configs": [{"targets": [ksm]}],
    }));
    json!({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": ["rules.yml"],
        "scrape_configs": jobs,
    })
}

/// A running Prometheus and its HTTP address.
pub struct Prometheus {
    child: Child,
    addr: String,
}

impl Prometheus {
    /// Prometheus on `config` and `rules` (a rule file's YAML) in `dir`, on a
    /// port of its choosing (read back from its log), once it is ready.
    pub async fn start(tools: &Tools, dir: &Path, config: &Value, rules: &Value) -> Self {
        for (name, doc) in [("prometheus.yml", config), ("rules.yml", rules)] {
            let text = serde_norway::to_string(doc).expect("YAML");
            gpuslice_cdi::atomic::write_atomic(dir, name, text.as_bytes(), 0o644)
                .expect("write a Prometheus file");
        }
        let mut command = Command::new(&tools.prometheus);
        command
            .current_dir(dir)
            .arg("--config.file=prometheus.yml")
            .arg("--storage.tsdb.path=data")
            .arg("--web.listen-address=127.0.0.1:0");
        let child = Child::spawn(&mut command, dir.join("prometheus.log"));
        let began = Instant::now();
        let addr = loop {
            let log = child.log();
            let listening = log
                .lines()
                .find(|l| l.contains("msg=\"Listening on\""))
                .and_then(|l| l.split("address=").nth(1))
                .map(|a| a.split_whitespace().next().unwrap_or_default().to_owned());
            if let Some(addr) = listening {
                break addr;
            }
            assert!(began.elapsed() < BOUND, "Prometheus did not start:\n{log}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        let prometheus = Self { child, addr };
        prometheus
            .until("Prometheus ready", || {
                prometheus
                    .get("/-/ready")
                    .is_some_and(|(status, _)| status == 200)
                    .then_some(())
            })
            .await;
        prometheus
    }

    /// What Prometheus has logged.
    pub fn log(&self) -> String {
        self.child.log()
    }

    /// GET `path` over HTTP/1.0 (so the body is whole, never chunked):
    /// (status, body), or `None` when Prometheus cannot be reached.
    fn get(&self, path: &str) -> Option<(u16, String)> {
        let mut stream = TcpStream::connect(&self.addr).ok()?;
        let request = format!("GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", self.addr);
        stream.write_all(request.as_bytes()).ok()?;
        let mut raw = String::new();
        stream.read_to_string(&mut raw).ok()?;
        let (head, body) = raw.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, body.to_owned()))
    }

    /// The result of the instant query `promql` now; panics, with
    /// Prometheus' error, on a query it refuses.
    pub fn query(&self, promql: &str) -> Vec<Value> {
        let encoded = utf8_percent_encode(promql, NON_ALPHANUMERIC);
        let (status, body) = self
            .get(&format!("/api/v1/query?query={encoded}"))
            .unwrap_or_else(|| panic!("Prometheus at {} cannot be reached", self.addr));
        let doc: Value = serde_json::from_str(&body).expect("Prometheus answers JSON");
        assert!(
            status == 200 && doc["status"] == "success",
            "Prometheus refused {promql}: {body}"
        );
        doc["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The alerts pending or firing now (`/api/v1/alerts`).
    pub fn alerts(&self) -> Vec<Value> {
        let (_, body) = self
            .get("/api/v1/alerts")
            .unwrap_or_else(|| panic!("Prometheus at {} cannot be reached", self.addr));
        let doc: Value = serde_json::from_str(&body).expect("Prometheus answers JSON");
        doc["data"]["alerts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Polls `check` until it answers, for at most [`BOUND`].
    pub async fn until<T>(&self, what: &str, check: impl FnMut() -> Option<T>) -> T {
        let every = Duration::from_millis(200);
        crate::harness::poll_until(what, (BOUND, every), check, || {
            format!("Prometheus' log:\n{}", self.log())
        })
        .await
    }
}
