//! NVIDIA's own MPS control daemon under the real gpusliced: Debian sid
//! non-free's `nvidia-cuda-mps` (550.163.01 when this was written), unpacked
//! by `tests/tools/sid-fetch.sh --component non-free` into
//! `$GPUSLICE_NVIDIA_USERSPACE` (`.ci/run`'s `nvidia-userspace` stage;
//! default `/var/cache/gpuslice-test/nvidia-userspace`), run without a GPU,
//! which its control daemon does not need.
//!
//! Reading order: this file (finding the program, a node whose `[mps]
//! control_program` is it, one client run), `replay` (the transcript both
//! it and the stand-in answer), `node` (every MPS path of gpusliced on it),
//! `slices` (MPS on a MIG slice, and the server found beside the control
//! program). Without the unpacked package each test prints why and returns,
//! or fails under `GPUSLICE_REQUIRE_TOOLS=1` (`tests/e2e/tools.rs`).

mod node;
mod replay;
mod slices;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::harness::write_config;
use crate::stand_ins::{SharedDaemon, sections};
use crate::tools::{repo_root, skip};

/// Where `.ci/run` unpacks NVIDIA's user space.
const DEFAULT_USERSPACE: &str = "/var/cache/gpuslice-test/nvidia-userspace";
/// The control program in the unpacked tree.
const CONTROL: &str = "root/usr/bin/nvidia-cuda-mps-control";
/// The server, where Debian puts it (beside `usr/bin`, in `usr/sbin`).
pub const SERVER: &str = "root/usr/sbin/nvidia-cuda-mps-server";

/// The folder sid-fetch.sh unpacked into (`root/`, `VERSIONS`).
pub fn userspace() -> PathBuf {
    std::env::var_os("GPUSLICE_NVIDIA_USERSPACE")
        .map_or_else(|| PathBuf::from(DEFAULT_USERSPACE), PathBuf::from)
}

/// NVIDIA's `nvidia-cuda-mps-control`, or `None` after the skip line.
pub fn real_control(test: &str) -> Option<PathBuf> {
    let dir = userspace();
    let program = dir.join(CONTROL);
    if program.is_file() {
        return Some(program);
    }
    skip(
        test,
        &format!(
            "NVIDIA's nvidia-cuda-mps-control is not unpacked at {} (run \
             tests/tools/sid-fetch.sh --component non-free {} nvidia-cuda-mps nvidia-smi \
             libnvidia-ml1, as .ci/run's nvidia-userspace stage does, or set \
             GPUSLICE_NVIDIA_USERSPACE)",
            program.display(),
            dir.display()
        ),
    );
    None
}

/// The package's version, as sid-fetch.sh recorded it.
pub fn version() -> String {
    std::fs::read_to_string(userspace().join("VERSIONS"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("nvidia-cuda-mps ").map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A gpusliced of `gpus` simulated H100s (plus `extra` config) whose `[mps]
/// control_program` is `program`; the stand-in nvidia-smi otherwise, and
/// the MIG capability files of the shipped simulated driver root
/// (examples/sim-root), so a slice can be given out.
pub fn node_with(program: &Path, gpus: usize, extra: &str) -> SharedDaemon {
    let dir = tempfile::tempdir().expect("temp dir");
    let stand_ins = sections(dir.path());
    let config: String = stand_ins
        .lines()
        .map(|line| {
            if line.starts_with("control_program = ") {
                format!("control_program = \"{}\"\n", program.display())
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    write_config(dir.path(), gpus, &format!("{config}{extra}"));
    let shipped = repo_root().join("examples/sim-root");
    for part in ["proc", "dev/nvidia-caps"] {
        std::os::unix::fs::symlink(shipped.join(part), dir.path().join("root").join(part))
            .expect("link the MIG capabilities into the node's root");
    }
    SharedDaemon::start_in(dir)
}

/// What one client run printed.
#[derive(Debug, PartialEq, Eq)]
pub struct Answer {
    /// Its exit status.
    pub code: Option<i32>,
    /// stdout, as printed.
    pub stdout: String,
    /// stderr, as printed.
    pub stderr: String,
}

/// Runs `program` once with `command` on its stdin for the daemon of
/// `pipe_dir`, as gpusliced sends a command.
pub fn ask(program: &Path, pipe_dir: &Path, command: &str) -> Answer {
    ask_as(program, pipe_dir, command, None)
}

/// [`ask`], as uid and gid `user` when given (through setpriv).
pub fn ask_as(program: &Path, pipe_dir: &Path, command: &str, user: Option<u32>) -> Answer {
    let mut cmd = match user {
        Some(id) => {
            let mut c = Command::new("setpriv");
            c.args([
                format!("--reuid={id}"),
                format!("--regid={id}"),
                "--clear-groups".to_owned(),
                "--".to_owned(),
            ])
            .arg(program);
            c
        }
        None => Command::new(program),
    };
    let mut child = cmd
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("CUDA_MPS_PIPE_DIRECTORY", pipe_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the control program");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        // A client that finds no daemon exits before it reads its stdin.
        if let Err(e) = stdin.write_all(format!("{command}\n").as_bytes()) {
            assert_eq!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe,
                "write the command: {e}"
            );
        }
    }
    let out = child.wait_with_output().expect("the client's answer");
    Answer {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The answer of a client that reached its daemon: exit 0, stdout trimmed.
pub fn answered(program: &Path, pipe_dir: &Path, command: &str) -> String {
    let answer = ask(program, pipe_dir, command);
    assert_eq!(answer.code, Some(0), "{command:?}: {answer:?}");
    answer.stdout.trim_end().to_owned()
}

/// A process's environment, `NAME=value` entries.
pub fn environ(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/environ"))
        .unwrap_or_default()
        .split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

/// The value of `name` in `pid`'s environment.
pub fn env_of(pid: u32, name: &str) -> Option<String> {
    let prefix = format!("{name}=");
    environ(pid)
        .into_iter()
        .find_map(|e| e.strip_prefix(&prefix).map(str::to_owned))
}
