//! The claim status writer's real API writes per minute at 64 claims, beside
//! the rate model's prediction (`benches/claim_status/model.rs`) for the
//! same settings. A measurement, not a check of speed: `#[ignore]`d (it
//! runs for about twelve minutes) and run by hand,
//! `cargo test -p gpuslice-dra-plugin --test conformance status_rate -- --ignored --nocapture`
//! (bench/README.md, "claim status", has its figures).
//!
//! The real chain: gpusliced (simulated, 64 whole H100s, sampling every
//! second, idle after 2 s), gpuslice-dra-plugin with its status identity,
//! `[claim_status] refresh_s = 10` and the default 60 writes a minute, the
//! Python kubelet preparing 64 claims (one GPU each) in one call, and the
//! fake API server counting every accepted status apply. Scenario (a): the
//! claims stay idle; (b): then 8 of them run a fake process
//! (`gpuslicectl sim exec`), (c): then all 64; this test moves each
//! process's memory and SM use every second, by rewriting its process file,
//! beyond the status' resolution. The figures are printed; the only
//! assertions are exact: every claim shows Idle, then a whole minute passes
//! without a write (a quiet node writes nothing); the claims with a process
//! show Idle False, the others Idle; no write was refused.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};

#[expect(
    dead_code,
    reason = "the real measurement runs two of the model's four scenarios"
)]
#[path = "../../benches/claim_status/model.rs"]
mod model;

use crate::fake_apiserver::{FakeApiServer, State};
use crate::gpusliced::Daemon;
use crate::peers::{self, Kubelet, Shim};
use crate::status_chain::{bound_server, start_status_shim};
use crate::{BOUND, claim, kubelet_claim, uid};

const DRIVER: &str = "gpu.nvidia.com";
const CLAIMS: usize = 64;
/// How many claims scenario (b) makes active.
const FEW: usize = 8;
const REFRESH_S: u64 = 10;
const MAX_WRITES_PER_MINUTE: u32 = 60;
const IDLE_AFTER_S: u64 = 2;
const MINUTE: Duration = Duration::from_secs(60);

fn name(i: usize) -> String {
    format!("job-{i}")
}

fn claim_uid(i: usize) -> String {
    uid(0x100 + u32::try_from(i).unwrap_or(0))
}

/// Accepted status applies so far, dry runs aside.
fn applies(state: &State) -> usize {
    (state.claim_status_log.applies.iter())
        .filter(|a| !a.starts_with("dry-run "))
        .count()
}

/// The status of our entry's Idle condition on claim ml/`name`.
fn idle_status(state: &State, name: &str) -> Option<String> {
    let claim = state.claims.get(&("ml".to_owned(), name.to_owned()))?;
    let entry = (claim["status"]["devices"].as_array()?.iter()).find(|e| e["driver"] == DRIVER)?;
    let idle = (entry["conditions"].as_array()?.iter()).find(|c| c["type"] == "Idle")?;
    idle["status"].as_str().map(str::to_owned)
}

/// Every claim of `claims` shows Idle `status`.
fn idle_shows(state: &State, claims: Range<usize>, status: &str) -> bool {
    claims
        .into_iter()
        .all(|i| idle_status(state, &name(i)).as_deref() == Some(status))
}

/// Sleeps until `until`: the measurement counts writes over wall-clock
/// minutes (nothing here waits for an event).
#[expect(
    clippy::disallowed_methods,
    reason = "a rate is counted over wall-clock minutes; no assertion waits on it"
)]
fn sleep_until(until: Instant) {
    std::thread::sleep(until.saturating_duration_since(Instant::now()));
}

/// Accepted applies in each of `minutes` minutes from `start`.
fn count_minutes(api: &FakeApiServer, start: Instant, minutes: u32) -> Vec<usize> {
    let mut before = applies(&api.state());
    let mut out = Vec::new();
    for minute in 1..=minutes {
        sleep_until(start + MINUTE * minute);
        let now = applies(&api.state());
        out.push(now - before);
        before = now;
    }
    out
}

fn model_settings(claims: usize, minutes: u64, idle_after_s: u64) -> model::Settings {
    model::Settings {
        claims,
        minutes,
        sample_ms: 1000,
        refresh_s: REFRESH_S,
        max_writes_per_minute: MAX_WRITES_PER_MINUTE,
        idle_after_ms: idle_after_s * 1000,
    }
}

fn print_table(scenario: &str, real: &[usize], model: &[usize]) {
    println!("{scenario}: minute  real  model");
    for (i, r) in real.iter().enumerate() {
        let m = model.get(i).map_or("-".to_owned(), usize::to_string);
        println!("{scenario}: {:>6} {r:>5} {m:>6}", i + 1);
    }
    println!(
        "{scenario}: total  {:>5} {:>6}",
        real.iter().sum::<usize>(),
        model.iter().sum::<usize>()
    );
}

/// The fake GPU processes, one `gpuslicectl sim exec` per claim, each sent
/// SIGTERM (it passes it on and removes its file) however the test ends.
#[derive(Default)]
struct FakeProcesses(Vec<Child>);

impl FakeProcesses {
    /// Starts one in each claim of `claims`.
    fn start(&mut self, daemon: &Daemon, claims: Range<usize>) {
        let ctl = crate::binaries::gpuslicectl();
        let children = claims.map(|i| {
            Command::new(&ctl)
                .arg("--socket")
                .arg(&daemon.socket)
                .args(["sim", "exec", "--claim", &claim_uid(i)])
                .args(["--memory", "4Gi", "--sm", "40", "--", "sleep", "3600"])
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("run gpuslicectl sim exec")
        });
        self.0.extend(children);
    }
}

impl Drop for FakeProcesses {
    fn drop(&mut self) {
        for child in &self.0 {
            let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        for child in &mut self.0 {
            let _ = child.wait();
        }
    }
}

/// Moves every fake process's memory (4 GiB + up to 512 MiB) and SM use
/// (10-89%) once a second, as the model's `AllActive` does every sample,
/// until dropped. Each file is replaced whole (temp file and rename), as
/// `sim exec` writes it.
struct Jitter {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Jitter {
    fn start(dir: PathBuf) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut rng = fastrand::Rng::with_seed(24);
            while !stopped.load(Ordering::Relaxed) {
                jitter_once(&dir, &mut rng);
                sleep_until(Instant::now() + Duration::from_secs(1));
            }
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Jitter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn jitter_once(dir: &Path, rng: &mut fastrand::Rng) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let Ok(mut file) = std::fs::read(&path).map(|b| serde_json::from_slice::<Value>(&b)) else {
            continue;
        };
        let Ok(file) = file.as_mut() else { continue };
        file["memory_bytes"] = json!((4u64 << 30) + rng.u64(0..512) * (1 << 20));
        file["sm_percent"] = json!(rng.u32(10..90));
        let temp = dir.join(format!(".{}.jitter", entry.file_name().to_string_lossy()));
        peers::write(&temp, &file.to_string());
        let _ = std::fs::rename(&temp, &path);
    }
}

/// The chain under measurement, every part held until dropped.
struct Node {
    api: FakeApiServer,
    shim: Shim,
    daemon: Daemon,
    kubelet: Kubelet,
    processes_dir: PathBuf,
    _dir: tempfile::TempDir,
}

impl Node {
    /// gpusliced, the plugin and the fake API server holding 64 allocated
    /// claims; `None` where the Python kubelet cannot be generated.
    fn start() -> Option<Self> {
        let (dir, kubelet) = crate::kubelet_in_temp_dir()?;
        let api = bound_server();
        let daemon_dir = dir.path().join("daemon");
        let processes_dir = daemon_dir.join("sim-processes");
        // `extra` lands in [backend.sim] first.
        let daemon = Daemon::start_with(
            &daemon_dir,
            CLAIMS,
            &format!(
                "processes = \"{}\"\n[activity]\ninterval_s = 1\nidle_after_s = {IDLE_AFTER_S}\n",
                processes_dir.display()
            ),
        );
        let shim = start_status_shim(
            dir.path(),
            &api,
            &daemon,
            &format!("refresh_s = {REFRESH_S}\nmax_writes_per_minute = {MAX_WRITES_PER_MINUTE}\n"),
        );
        kubelet.call(
            &shim.registration_socket(),
            "notify",
            &json!({"registered": true}),
        );
        for i in 0..CLAIMS {
            let device = format!("gpu-{i}");
            api.put_claim(claim(&name(i), &claim_uid(i), &[&device], &json!([])));
        }
        Some(Self {
            api,
            shim,
            daemon,
            kubelet,
            processes_dir,
            _dir: dir,
        })
    }

    /// Prepares every claim in one call.
    fn prepare_all(&self) {
        let claims: Vec<Value> = (0..CLAIMS)
            .map(|i| kubelet_claim(&name(i), &claim_uid(i)))
            .collect();
        let prepared = self.kubelet.call(
            &self.shim.dra_socket(),
            "prepare-v1",
            &json!({"claims": claims}),
        );
        for i in 0..CLAIMS {
            assert_eq!(prepared["claims"][&claim_uid(i)]["error"], "", "{prepared}");
        }
    }
}

/// (a) All idle and steady, from the prepare on: writes per minute for 4
/// minutes, then the writes in the minute after every claim shows Idle.
fn all_idle(node: &Node) -> (Vec<usize>, usize) {
    let start = Instant::now();
    node.prepare_all();
    let per_minute = count_minutes(&node.api, start, 4);
    assert!(
        node.api
            .wait_for(BOUND * 5, |s| idle_shows(s, 0..CLAIMS, "True")),
        "not every claim shows Idle; shim log:\n{}",
        node.shim.log()
    );
    let quiet_from = applies(&node.api.state());
    sleep_until(Instant::now() + MINUTE);
    (per_minute, applies(&node.api.state()) - quiet_from)
}

/// (b), (c): a fake process in each claim of `claims` (the others keep
/// theirs, or stay idle), figures moving every second: writes per minute
/// for 3 minutes from the processes' start.
fn active(node: &Node, fakes: &mut FakeProcesses, claims: Range<usize>) -> Vec<usize> {
    let start = Instant::now();
    fakes.start(&node.daemon, claims);
    let per_minute = count_minutes(&node.api, start, 3);
    let active = fakes.0.len();
    assert!(
        node.api
            .wait_for(BOUND, |s| idle_shows(s, 0..active, "False")
                && idle_shows(s, active..CLAIMS, "True")),
        "not every claim with a process shows Idle False, or not every other Idle; shim log:\n{}",
        node.shim.log()
    );
    per_minute
}

/// Runs the scenarios: (a) idle, (b) 8 claims active (the limit does not
/// bind: each claim's refresh_s does), (c) all 64 active (the limit binds).
fn measure(node: &Node) -> (Vec<usize>, usize, Vec<usize>, Vec<usize>) {
    let (idle, quiet) = all_idle(node);
    let mut fakes = FakeProcesses::default();
    let jitter = Jitter::start(node.processes_dir.clone());
    // Built (or found fresh) before any minute is counted.
    crate::binaries::gpuslicectl();
    let few = active(node, &mut fakes, 0..FEW);
    let all = active(node, &mut fakes, FEW..CLAIMS);
    drop(jitter);
    drop(fakes);
    (idle, quiet, few, all)
}

#[test]
#[ignore = "a measurement of about twelve minutes: run by hand with --ignored --nocapture"]
fn status_rate_of_64_claims_real_plugin_and_gpusliced_beside_the_model() {
    let Some(node) = Node::start() else {
        return;
    };
    let (idle_real, quiet, few_real, all_real) = measure(&node);
    let idle_model = model::run(
        model::Scenario::AllIdle,
        &model_settings(CLAIMS, 4, IDLE_AFTER_S),
    );
    let few_model = model::run(model::Scenario::AllActive, &model_settings(FEW, 3, 0));
    let all_model = model::run(model::Scenario::AllActive, &model_settings(CLAIMS, 3, 0));
    println!(
        "claim status writes per minute: real gpuslice-dra-plugin and gpusliced (sim), \
         {CLAIMS} claims, refresh_s {REFRESH_S}, interval_s 1, idle_after_s {IDLE_AFTER_S}, \
         max_writes_per_minute {MAX_WRITES_PER_MINUTE}; model: benches/claim_status/model.rs, same settings"
    );
    print_table("AllIdle", &idle_real, &idle_model);
    println!("AllIdle: writes in the minute after every claim showed Idle: {quiet}");
    print_table("8 active", &few_real, &few_model);
    print_table("AllActive", &all_real, &all_model);
    let state = node.api.state();
    let dry_runs = (state.claim_status_log.applies.iter())
        .filter(|a| a.starts_with("dry-run "))
        .count();
    println!("dry-run probes: {dry_runs}");
    assert!(
        state.claim_status_log.refusals.is_empty(),
        "{:?}",
        state.claim_status_log.refusals
    );
    assert_eq!(
        quiet,
        0,
        "a quiet node wrote; shim log:\n{}",
        node.shim.log()
    );
}
