//! Kubernetes' own ValidatingAdmissionPolicy evaluation as a test oracle:
//! the Go program `tests/tools/admission` (k8s.io/apiserver's compiler,
//! validator and dispatcher, the CEL libraries the API server runs) behind
//! a Rust call, so a test or a fake API server asks what the API server
//! would answer to a write.
//!
//! Start it once, ask per request:
//!
//! ```ignore
//! // The admission test uses all of it; another target allows what it
//! // leaves unused.
//! #[allow(dead_code, unused_imports)]
//! #[path = "../admission/runner/mod.rs"]
//! mod admission;
//!
//! let Some(policies) = admission::available("my_test") else { return };
//! let verdict = policies.ask(&request)?; // Verdict::Allowed or Refused{..}
//! ```
//!
//! [`available`] gives the packaged policies
//! (packaging/rbac/compute-domains-admission.yaml) started once per process,
//! or None after printing why the test skips (the Go packages are not
//! unpacked; `GPUSLICE_REQUIRE_TOOLS=1` makes that a failure);
//! [`Admission::start`] starts one on other files. [`Admission::ask`] is
//! `&self` and serializes the requests, so one evaluator serves every
//! thread; it blocks for the answer (about a millisecond; from async code,
//! call it in `spawn_blocking` or accept the short block).
//!
//! Owns: the tool's process, writing each request and reading its answer.

mod build;
mod wire;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread::JoinHandle;

pub use build::{NotBuilt, repo_root};
pub use wire::{
    COMPUTE_DOMAINS_ACCOUNT, NODE_NAME_EXTRA, Operation, Ready, Request, Resource, UserInfo,
    Verdict,
};

/// The packaged policies, relative to the repository.
pub const PACKAGED: &str = "packaging/rbac/compute-domains-admission.yaml";

/// Why a request got no verdict.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    #[error(transparent)]
    NotBuilt(#[from] NotBuilt),
    #[error("cannot run {binary}: {error}")]
    Spawn {
        binary: PathBuf,
        error: std::io::Error,
    },
    /// The tool refused its files (exit 2): a policy the API server would
    /// refuse, or one it cannot read.
    #[error("the admission tool refused its files: {0}")]
    Files(String),
    /// The tool could not evaluate this request (the tool's reason: a
    /// missing field, an object it cannot decode, …); it goes on.
    #[error("the admission tool cannot evaluate the request: {0}")]
    Request(String),
    #[error("the request does not serialize: {0}")]
    Serialize(serde_json::Error),
    /// It stopped answering, or answered what wire.rs does not read.
    #[error("the admission tool stopped answering ({what}); its stderr: {stderr}")]
    Broken { what: String, stderr: String },
}

/// A running evaluator of some policies; its process ends when dropped.
#[derive(Debug)]
pub struct Admission {
    ready: Ready,
    process: Mutex<Process>,
}

#[derive(Debug)]
struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// What it wrote on stderr, kept for an error message, and the thread
    /// reading it.
    stderr: Arc<Mutex<String>>,
    drain: Option<JoinHandle<()>>,
    /// Its exit code, once it has exited.
    exit_code: Option<i32>,
}

impl Admission {
    /// The tool evaluating `files` (YAML of ValidatingAdmissionPolicies and
    /// their bindings), started and ready.
    pub fn start(files: &[PathBuf]) -> Result<Self, AdmissionError> {
        let binary = tool()?;
        let mut child = Command::new(binary)
            .args(files)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| AdmissionError::Spawn {
                binary: binary.to_path_buf(),
                error,
            })?;
        let stdin = child.stdin.take();
        let (Some(stdout), Some(stderr_pipe)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(AdmissionError::Broken {
                what: "the child has no stdout or stderr pipe".to_owned(),
                stderr: String::new(),
            });
        };
        let (stderr, drain) = drain(stderr_pipe);
        let mut process = Process {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            stderr,
            drain: Some(drain),
            exit_code: None,
        };
        let line = match process.read_line() {
            Ok(line) => line,
            Err(AdmissionError::Broken { stderr, .. }) if process.exit_code == Some(2) => {
                return Err(AdmissionError::Files(stderr));
            }
            Err(err) => return Err(err),
        };
        let ready: Ready =
            serde_json::from_str(&line).map_err(|e| process.broken(&format!("{e}: {line}")))?;
        Ok(Self {
            ready,
            process: Mutex::new(process),
        })
    }

    /// What the tool read and was built with.
    pub fn ready(&self) -> &Ready {
        &self.ready
    }

    /// The API server's verdict on `request`.
    pub fn ask(&self, request: &Request) -> Result<Verdict, AdmissionError> {
        let json = serde_json::to_vec(request).map_err(AdmissionError::Serialize)?;
        self.ask_json(&json)
    }

    /// The verdict on `json` as it is (one JSON object, no newline in it).
    pub fn ask_json(&self, json: &[u8]) -> Result<Verdict, AdmissionError> {
        let mut process = self.process.lock().unwrap_or_else(PoisonError::into_inner);
        process.write_line(json)?;
        let line = process.read_line()?;
        let answer: wire::Answer =
            serde_json::from_str(&line).map_err(|e| process.broken(&format!("{e}: {line}")))?;
        if !answer.error.is_empty() {
            return Err(AdmissionError::Request(answer.error));
        }
        Ok(if answer.allowed {
            Verdict::Allowed
        } else {
            Verdict::Refused {
                code: answer.code,
                reason: answer.reason,
                message: answer.message,
            }
        })
    }
}

impl Process {
    fn write_line(&mut self, json: &[u8]) -> Result<(), AdmissionError> {
        let written = match self.stdin.as_mut() {
            Some(pipe) => pipe
                .write_all(json)
                .and_then(|()| pipe.write_all(b"\n"))
                .and_then(|()| pipe.flush()),
            None => Err(std::io::Error::other("its stdin is closed")),
        };
        written.map_err(|e| self.broken(&format!("writing the request: {e}")))
    }

    fn read_line(&mut self) -> Result<String, AdmissionError> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(n) if n > 0 => Ok(line),
            Ok(_) => Err(self.broken("end of its output")),
            Err(e) => Err(self.broken(&format!("reading its answer: {e}"))),
        }
    }

    /// Ends the process (closing its stdin ends a live one) and gives the
    /// error with its exit status and everything it wrote on stderr.
    fn broken(&mut self, what: &str) -> AdmissionError {
        self.stdin = None;
        let status = self.child.wait();
        if let Some(drain) = self.drain.take() {
            // Its stderr closed when it exited; a panic there lost nothing
            // the kept text does not have.
            let _ignored = drain.join();
        }
        let stderr = self
            .stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let what = match status {
            Ok(status) => {
                self.exit_code = status.code();
                format!("{what}; it exited with {status}")
            }
            Err(e) => format!("{what}; waiting for it: {e}"),
        };
        AdmissionError::Broken { what, stderr }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // Closing stdin ends the tool; it then exits 0.
        self.stdin = None;
        let _ignored = self.child.wait();
    }
}

/// Reads `pipe` to its end on a thread, keeping the last 16 KiB.
fn drain(mut pipe: impl Read + Send + 'static) -> (Arc<Mutex<String>>, JoinHandle<()>) {
    const KEEP: usize = 16 * 1024;
    let kept = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&kept);
    let handle = std::thread::spawn(move || {
        let mut buffer = [0_u8; 4096];
        while let Ok(n) = pipe.read(&mut buffer) {
            if n == 0 {
                break;
            }
            let mut text = sink.lock().unwrap_or_else(PoisonError::into_inner);
            text.push_str(&String::from_utf8_lossy(&buffer[..n]));
            if text.len() > KEEP {
                let cut = text.len() - KEEP;
                let cut = (cut..text.len())
                    .find(|&i| text.is_char_boundary(i))
                    .unwrap_or(0);
                text.drain(..cut);
            }
        }
    });
    (kept, handle)
}

/// The tool's binary, built once per process.
fn tool() -> Result<&'static Path, AdmissionError> {
    static BUILT: OnceLock<Result<PathBuf, NotBuilt>> = OnceLock::new();
    match BUILT.get_or_init(build::build) {
        Ok(binary) => Ok(binary),
        Err(err) => Err(AdmissionError::NotBuilt(err.clone())),
    }
}

/// The packaged policies' evaluator, started once per process; the same
/// error to every caller when it cannot be.
pub fn packaged() -> Result<&'static Admission, &'static AdmissionError> {
    static STARTED: OnceLock<Result<Admission, AdmissionError>> = OnceLock::new();
    STARTED
        .get_or_init(|| Admission::start(&[repo_root().join(PACKAGED)]))
        .as_ref()
}

/// Whether skipping is forbidden (CI sets `GPUSLICE_REQUIRE_TOOLS=1`).
fn tools_required() -> bool {
    std::env::var_os("GPUSLICE_REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// The packaged policies' evaluator, or None after printing why `test`
/// skips. Panics when the tool failed to build or start, and when the
/// packages are missing under `GPUSLICE_REQUIRE_TOOLS=1`.
pub fn available(test: &str) -> Option<&'static Admission> {
    match packaged() {
        Ok(admission) => Some(admission),
        Err(AdmissionError::NotBuilt(NotBuilt::Missing(why))) if !tools_required() => {
            eprintln!("SKIP {test}: {why} (GPUSLICE_REQUIRE_TOOLS=1 makes this a failure)");
            None
        }
        Err(err) => panic!("{test}: {err}"),
    }
}
