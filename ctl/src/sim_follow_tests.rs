//! `sim exec --pid`: the file lives exactly as long as the process, a pid
//! that runs nothing is refused with nothing written, and the options that
//! cannot go together are refused.

use std::process::{Command, Stdio};

use clap::Parser;
use gpuslice_sim_files::{SimProcessFile, proc_start_time, read_live};

use super::{Ended, follow};
use crate::sim_exec::SimExecArgs;

fn file_of(pid: u32) -> SimProcessFile {
    SimProcessFile {
        pid,
        start_time: proc_start_time(pid),
        device: "GPU-sim-0".to_owned(),
        memory_bytes: 1 << 30,
        sm_percent: 30,
        mps_client: false,
    }
}

#[tokio::test]
async fn the_file_lives_as_long_as_the_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The process reads its stdin to the end: closing it ends the process.
    let mut child = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start cat");
    let pid = child.id();
    let file = file_of(pid);
    let following = tokio::spawn({
        let dir = dir.path().to_owned();
        let file = file.clone();
        async move { follow(&dir, file, "sim exec: registered").await }
    });
    // Registered before the wait starts; the simulator sees it as live.
    let path = dir.path().join(format!("{pid}.json"));
    while !path.exists() {
        tokio::task::yield_now().await;
    }
    assert_eq!(read_live(dir.path()).expect("read"), [file]);
    drop(child.stdin.take());
    child.wait().expect("cat ends");
    let code = following.await.expect("join").expect("follow");
    assert_eq!(code, 0);
    assert!(!path.exists(), "the file outlived its process");
}

#[tokio::test]
async fn a_pid_that_runs_nothing_is_refused_and_nothing_written() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new("true").spawn().expect("start true");
    let pid = child.id();
    child.wait().expect("true ends");
    let err = follow(dir.path(), file_of(pid), "sim exec: registered")
        .await
        .expect_err("a pid with no process");
    assert_eq!(
        err.to_string(),
        format!("no process {pid} runs now (--pid registers a running process by its host pid)")
    );
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
}

#[test]
fn a_signal_exits_128_plus_it() {
    assert_eq!(Ended::Process.exit_code(), 0);
    assert_eq!(Ended::Signal(15).exit_code(), 143);
}

/// `sim exec`'s options on their own.
#[derive(Debug, Parser)]
struct Exec {
    #[command(flatten)]
    args: SimExecArgs,
}

#[test]
fn pid_or_command_exactly_one() {
    let parse = |args: &[&str]| Exec::try_parse_from([&["exec"], args].concat());
    let pid = parse(&["--claim", "u", "--pid", "42"]).expect("--pid alone");
    assert!(format!("{pid:?}").contains("pid: Some(42)"), "{pid:?}");
    let command = parse(&["--claim", "u", "--", "sleep", "1"]).expect("a command alone");
    assert!(format!("{command:?}").contains("pid: None"), "{command:?}");
    let both = parse(&["--claim", "u", "--pid", "42", "--", "sleep", "1"])
        .expect_err("--pid with a command");
    assert!(both.to_string().contains("cannot be used with"), "{both}");
    let neither = parse(&["--claim", "u"]).expect_err("neither --pid nor a command");
    assert!(
        neither
            .to_string()
            .contains("required arguments were not provided"),
        "{neither}"
    );
}
