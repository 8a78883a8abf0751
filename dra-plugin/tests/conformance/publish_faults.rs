//! How long the real plugin takes to complete its publication against an
//! API server that fails most writes with transient errors (issue 30). A
//! measurement, not a check of speed: `#[ignore]`d and run by hand,
//! `cargo test -p gpuslice-dra-plugin --test conformance publish_faults -- --ignored --nocapture`
//! (bench/README.md, "publication under transient API errors", has its
//! figures).
//!
//! The real chain: gpusliced (simulated, [`GPUS`] H100s, every one under
//! `[mig]` with a layout and `advertise` left at `"auto"`) and
//! gpuslice-dra-plugin (its default retry backoff, `resync_seconds = 3600`)
//! against the fake API server with DRAPartitionableDevices on, so the right
//! form is partitionable. First a reference run without faults gives the
//! complete pool (its device names and slice count); then, for each seed of
//! [`SEEDS`], a fresh node whose API server fails [`PERCENT`]% of writes
//! (dry runs included) with 409, 429, 500 or 503 ([`crate::fake_faults`]).
//! The time is from the plugin's start until the API server holds the
//! complete partitionable pool: every slice written at one generation,
//! every device of the reference once, the GPUs' counter sets (so
//! gpusliced was told the partitionable form). A run that has not got
//! there after [`LIMIT`] is stopped and printed as such, with the form
//! `gpuslicectl status` shows in force. Printed per seed: the seconds (or
//! the form it stopped at), the writes sent and failed, the dry runs sent,
//! and how often the plugin logged a layout decision on the way (a
//! transient error taken for a verdict). The only assertion is exact: no
//! write broke a rule.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fake_apiserver::{FakeApiServer, State};
use crate::fake_faults::{Faults, TRANSIENT};
use crate::gpusliced::Daemon;
use crate::peers::Shim;
use crate::{NODE, NODE_UID};

/// Simulated H100s, each under `[mig]`.
const GPUS: usize = 4;
/// Share of writes failed.
const PERCENT: u32 = 80;
/// One node per seed.
const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];
/// The longest a run is waited for.
const LIMIT: Duration = Duration::from_secs(300);

/// gpusliced's `[mig]`: every GPU with a two-slice layout (what `auto`
/// falls back to), advertise left at `auto`.
fn mig_config() -> String {
    let mut text = "[mig]\n".to_owned();
    for index in 0..GPUS {
        text.push_str(&format!(
            "[[mig.gpu]]\nindex = {index}\nlayout = [\"3g.40gb\", \"1g.10gb\"]\n"
        ));
    }
    text
}

/// The published pool as it stands: (device names, slices, counter sets),
/// or None while it is not one whole generation.
fn pool(state: &State) -> Option<(BTreeSet<String>, usize, usize)> {
    let generations: BTreeSet<Option<i64>> = (state.slices.values())
        .map(|s| s["spec"]["pool"]["generation"].as_i64())
        .collect();
    let count = Value::from(state.slices.len());
    if generations.len() != 1
        || generations.contains(&None)
        || (state.slices.values()).any(|s| s["spec"]["pool"]["resourceSliceCount"] != count)
    {
        return None;
    }
    let devices: Vec<&Value> = (state.slices.values())
        .flat_map(|s| s["spec"]["devices"].as_array().into_iter().flatten())
        .collect();
    let names: BTreeSet<String> = (devices.iter())
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect();
    if names.len() != devices.len() {
        return None;
    }
    let sets = (state.slices.values())
        .filter_map(|s| s["spec"]["sharedCounters"].as_array())
        .map(Vec::len)
        .sum();
    Some((names, state.slices.len(), sets))
}

/// One node: its API server (faults as given), gpusliced and the plugin.
struct Run {
    api: FakeApiServer,
    daemon: Daemon,
    shim: Shim,
    started: Instant,
    _dir: tempfile::TempDir,
}

impl Run {
    fn start(faults: Faults) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let api = FakeApiServer::start_with_gate(NODE, NODE_UID, true);
        api.mutate(|state| state.faults = faults);
        let daemon_dir = dir.path().join("daemon");
        let daemon = Daemon::start_with(&daemon_dir, GPUS, &mig_config());
        let shim_dir = dir.path().join("shim");
        let started = Instant::now();
        let shim = Shim::start(&shim_dir, &api.url, &daemon.socket);
        Self {
            api,
            daemon,
            shim,
            started,
            _dir: dir,
        }
    }

    /// Waits until `done` holds for the pool: the time since the start,
    /// or None after [`LIMIT`].
    fn until(&self, done: impl Fn(&State) -> bool) -> Option<Duration> {
        let complete = self
            .api
            .wait_for(LIMIT, |s| !s.violations.is_empty() || done(s));
        let took = self.started.elapsed();
        let violations = self.api.state().violations.clone();
        assert!(violations.is_empty(), "{violations:?}");
        complete.then_some(took)
    }

    /// The form `gpuslicectl status` shows in force, and why.
    fn form_in_force(&self) -> String {
        let status = self.daemon.status_json();
        let advertise = &status["mig_advertise"];
        format!(
            "{} ({})",
            advertise["form"].as_str().unwrap_or("?"),
            advertise["reason"].as_str().unwrap_or("?")
        )
    }
}

/// What one run with faults did.
struct Figures {
    seed: u64,
    /// None: not complete after [`LIMIT`].
    seconds: Option<f64>,
    /// The form in force when it was stopped incomplete.
    stuck_at: Option<String>,
    writes: usize,
    failed: usize,
    dry_runs: usize,
    layout_decisions: usize,
}

fn run_with_faults(seed: u64, reference: &(BTreeSet<String>, usize, usize)) -> Figures {
    let run = Run::start(Faults::seeded(seed, PERCENT, &TRANSIENT));
    let took = run.until(|s| pool(s).as_ref() == Some(reference));
    let stuck_at = took.is_none().then(|| run.form_in_force());
    let state = run.api.state();
    let failed = state.faults.failed.len();
    let dry_runs_failed = (state.faults.failed.iter())
        .filter(|f| f.contains("dryRun=All"))
        .count();
    Figures {
        seed,
        seconds: took.map(|t| t.as_secs_f64()),
        stuck_at,
        writes: state.faults.writes,
        failed,
        dry_runs: dry_runs_failed + state.dry_runs.len(),
        layout_decisions: run.shim.log().matches("MIG advertise: layout").count(),
    }
}

#[test]
#[ignore = "a measurement of several minutes: run by hand with --ignored --nocapture"]
fn time_to_a_complete_publication_with_80_percent_of_writes_failing() {
    let reference = {
        let run = Run::start(Faults::default());
        let took = run
            .until(|s| pool(s).is_some_and(|(_, _, sets)| sets == GPUS))
            .expect("the reference pool, without faults");
        let pool = pool(&run.api.state()).expect("the reference pool");
        println!(
            "reference, no faults: {} devices in {} slices, {} counter sets, in {:.1} s",
            pool.0.len(),
            pool.1,
            pool.2,
            took.as_secs_f64()
        );
        pool
    };
    println!(
        "{GPUS} simulated H100s under [mig] (advertise auto, gate on); {PERCENT}% of writes \
         (dry runs included) failed with {TRANSIENT:?}"
    );
    println!("seed  seconds  writes  failed  dry-runs  layout-decisions");
    let mut seconds = Vec::new();
    for seed in SEEDS {
        let f = run_with_faults(seed, &reference);
        let time = f
            .seconds
            .map_or_else(|| format!(">{}", LIMIT.as_secs()), |s| format!("{s:.1}"));
        println!(
            "{:>4} {time:>8} {:>7} {:>7} {:>9} {:>17}",
            f.seed, f.writes, f.failed, f.dry_runs, f.layout_decisions
        );
        if let Some(form) = f.stuck_at {
            println!("      not complete after {LIMIT:?}; in force: {form}");
        }
        seconds.extend(f.seconds);
    }
    seconds.sort_by(f64::total_cmp);
    match (seconds.first(), seconds.last()) {
        (Some(min), Some(max)) => println!(
            "{} of {} runs complete: median {:.1} s, min {min:.1} s, max {max:.1} s",
            seconds.len(),
            SEEDS.len(),
            seconds[seconds.len() / 2]
        ),
        _ => println!("no run complete within {LIMIT:?}"),
    }
}
