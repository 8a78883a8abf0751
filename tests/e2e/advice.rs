//! Right-sizing advice end to end, as the demo runs it: the real
//! gpusliced on the simulated backend (gpu-0 running MIG under a `[mig]`
//! layout, so the node offers H100 slices), sampling every second, advice
//! after 3 s observed; a claim holding gpu-3 whole, a fake process in it at
//! 4 GiB and 5% SM (`gpuslicectl sim exec`). Then: the advice leaves
//! abstain, `advise` shows `mig 1g.10gb` and a what-if that frees gpu-3, `advise --output yaml` piped into
//! `match -f -` is accepted, and after a restart the observed time goes on
//! from where it was (the history is kept in `usage-history.json`). Every
//! wait polls GetAdvice for the state it expects, with a generous bound.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::activity::processes::Processes;
use crate::harness::Daemon;

const UID: &str = "c3c3c3c3-2424-4000-8000-00000000000c";

/// Upper bound for the daemon to see a change; only a bug reaches it.
const BOUND: Duration = Duration::from_secs(60);

const CONFIG: &str = "[activity]\ninterval_s = 1\n[advice]\nmin_observed_s = 3\n\
    [mig]\nadvertise = \"layout\"\n[[mig.gpu]]\nindex = 0\n\
    layout = [\"3g.40gb\", \"2g.20gb\", \"1g.10gb\", \"1g.10gb\"]\n";

/// gpuslicectl against `daemon`: (exit code, stdout, stderr).
fn ctl(daemon: &Daemon, args: &[&str], stdin: Option<&str>) -> (Option<i32>, String, String) {
    let mut child = Command::new(crate::binaries::gpuslicectl())
        .arg("--socket")
        .arg(&daemon.socket)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run gpuslicectl");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait for gpuslicectl");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ctl_ok(daemon: &Daemon, args: &[&str]) -> String {
    let (code, stdout, stderr) = ctl(daemon, args, None);
    assert_eq!(code, Some(0), "gpuslicectl {args:?}: {stderr}{stdout}");
    stdout
}

/// The advice of the claim's one device (`advise --output json`).
fn advice(daemon: &Daemon) -> Option<Value> {
    let doc: Value =
        serde_json::from_str(&ctl_ok(daemon, &["advise", "--output", "json"])).expect("JSON");
    doc["claims"]
        .as_array()?
        .iter()
        .find(|c| c["uid"] == UID)
        .map(|c| c["devices"][0]["advice"].clone())
}

/// Polls the claim's advice until `wanted` holds, for at most [`BOUND`].
async fn advice_until(daemon: &Daemon, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    let began = Instant::now();
    loop {
        if let Some(found) = advice(daemon).filter(|a| wanted(a)) {
            return found;
        }
        assert!(
            began.elapsed() < BOUND,
            "not within {BOUND:?}: {what}; advice {:?}; log:\n{}",
            advice(daemon),
            daemon.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sim_a_whole_h100_using_4_gib_is_advised_a_1g_10gb_slice_that_match_accepts() {
    let daemon = Daemon::start_with(4, CONFIG);
    let prepare = [
        "prepare",
        "--uid",
        UID,
        "--namespace",
        "ml",
        "--name",
        "notebook",
        "--device",
        "gpu-3",
    ];
    ctl_ok(&daemon, &prepare);
    let mut procs = Processes::default();
    procs.exec(&daemon, UID, &["--memory", "4Gi", "--sm", "5"]);
    let first = advice(&daemon).expect("the claim is listed");
    assert_eq!(first["form"], "abstain", "{first}");
    let advised = advice_until(&daemon, "advice of a MIG slice", |a| a["form"] == "mig").await;
    assert_eq!(advised["mig_profile"], "1g.10gb", "{advised}");
    assert_eq!(advised["memory_peak_bytes"], 4u64 << 30, "{advised}");
    assert_eq!(advised["device_class"], "mig.nvidia.com", "{advised}");
    let table = ctl_ok(&daemon, &["advise"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("ml/notebook"))
        .unwrap_or_else(|| panic!("no row for the claim: {table}"));
    assert!(row.contains("gpu-3") && row.contains("whole"), "{row}");
    assert!(row.contains("mig 1g.10gb"), "{row}");
    assert!(
        table.contains("\nwhat if: accepting every advice frees 1 of 1 held GPU (gpu-3)\n"),
        "{table}"
    );
    let (code, yaml, stderr) = ctl(&daemon, &["advise", "--output", "yaml"], None);
    assert_eq!(code, Some(0), "{stderr}{yaml}");
    assert!(yaml.contains("name: \"notebook-rightsized\""), "{yaml}");
    let (code, verdict, stderr) = ctl(&daemon, &["match", "-f", "-"], Some(&yaml));
    assert_eq!(code, Some(0), "match -f - refused it: {stderr}{verdict}");
    history_survives_a_restart(daemon).await;
    drop(procs);
}

/// Stops and starts gpusliced: the observed time goes on from the history.
async fn history_survives_a_restart(daemon: Daemon) {
    let before = advice(&daemon).expect("the claim")["observed_seconds"]
        .as_u64()
        .expect("observed_seconds");
    let (status, dir) = daemon.stop();
    assert_eq!(status.code(), Some(0), "{status}");
    assert!(
        dir.path().join("state/usage-history.json").is_file(),
        "saved at shutdown"
    );
    let daemon = Daemon::start_in(dir);
    let after = advice(&daemon).expect("the claim after the restart");
    let observed = after["observed_seconds"]
        .as_u64()
        .expect("observed_seconds");
    assert!(
        observed >= before,
        "observed {observed}s after the restart, {before}s before"
    );
    assert_eq!(after["form"], "mig", "no need to observe again: {after}");
}
