//! Kubernetes' own structured allocator as a test oracle: the Go program
//! `tests/tools/allocator` (upstream's `structured.NewAllocator` and
//! `Allocate`, called as kube-scheduler calls them) behind a Rust call.
//!
//! A test asks [`available`] for it (which skips with a printed reason when
//! the tool cannot be had here, and fails instead under
//! `GPUSLICE_REQUIRE_TOOLS=1`), then [`RealAllocator::allocate`]s an
//! [`Input`], or opens a [`Session`] to ask many in one process. Any test
//! target may include this folder
//! (`#[path = "../real_allocator/tool/mod.rs"] mod real_allocator;`).
//! [`RealAllocator::with_fix`] is the same tool with one known upstream
//! bug closed (`tests/tools/allocator/fixes/`), for a second opinion.
//!
//! Owns: running the binary and reading its answer. Each binary is built at
//! most once per test process ([`build`]).

mod build;
mod session;
mod wire;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

pub use build::{NotBuilt, repo_root};
pub use session::Session;
pub use wire::{About, Features, Input, Outcome, Stage};

/// The built tool.
#[derive(Debug)]
pub struct RealAllocator {
    binary: PathBuf,
}

/// The binaries with a fix, built once per process each.
type Fixed = BTreeMap<String, Result<&'static RealAllocator, NotBuilt>>;

/// Why a call of the tool gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("cannot run {binary}: {error}")]
    Spawn {
        binary: PathBuf,
        error: std::io::Error,
    },
    #[error("the input does not serialize: {0}")]
    Input(serde_json::Error),
    #[error("the allocator tool exited with {status}: {stderr}")]
    Exit {
        /// The exit code (2: the input is not what it reads), if any.
        code: Option<i32>,
        status: String,
        stderr: String,
    },
    #[error("the allocator tool's answer is not what tool/wire.rs reads ({error}): {stdout}")]
    Answer {
        error: serde_json::Error,
        stdout: String,
    },
}

impl RealAllocator {
    /// The tool, built once per process; the same error to every caller
    /// when it cannot be.
    pub fn get() -> Result<&'static Self, &'static NotBuilt> {
        static BUILT: OnceLock<Result<RealAllocator, NotBuilt>> = OnceLock::new();
        BUILT
            .get_or_init(|| build::build(&[]).map(|binary| RealAllocator { binary }))
            .as_ref()
    }

    /// The tool with the fix `name` (a patch of
    /// `tests/tools/allocator/fixes/`) applied, built once per process;
    /// [`RealAllocator::get`]'s error when the tool cannot be had at all.
    pub fn with_fix(name: &str) -> Result<&'static Self, NotBuilt> {
        static FIXED: OnceLock<Mutex<Fixed>> = OnceLock::new();
        let fixed = FIXED.get_or_init(Mutex::default);
        let mut fixed = fixed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        fixed
            .entry(name.to_owned())
            .or_insert_with(|| {
                build::build(&[name]).map(|binary| &*Box::leak(Box::new(RealAllocator { binary })))
            })
            .clone()
    }

    /// The binary's path.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// Which upstream and Go it was built from, and its feature switches.
    pub fn about(&self) -> Result<About, ToolError> {
        let stdout = self.run(&["-about"], &[])?;
        serde_json::from_slice(&stdout).map_err(|source| answer_error(source, &stdout))
    }

    /// The upstream allocator's answer to `input`.
    pub fn allocate(&self, input: &Input) -> Result<Outcome, ToolError> {
        let json = serde_json::to_vec(input).map_err(ToolError::Input)?;
        self.allocate_json(&json)
    }

    /// The answer to `json` as it is (for input no [`Input`] can express).
    pub fn allocate_json(&self, json: &[u8]) -> Result<Outcome, ToolError> {
        let stdout = self.run(&[], json)?;
        serde_json::from_slice(&stdout).map_err(|source| answer_error(source, &stdout))
    }

    /// One process answering questions one after another (`-stream`).
    pub fn session(&self) -> Result<Session, ToolError> {
        Session::start(&self.binary)
    }

    fn run(&self, args: &[&str], stdin: &[u8]) -> Result<Vec<u8>, ToolError> {
        let spawn_error = |error| ToolError::Spawn {
            binary: self.binary.clone(),
            error,
        };
        let mut child = Command::new(&self.binary)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        // Fed from a thread, so a large input cannot block on a full
        // stdout or stderr pipe.
        let feeder = child.stdin.take().map(|mut pipe| {
            let bytes = stdin.to_vec();
            std::thread::spawn(move || pipe.write_all(&bytes))
        });
        let output = child.wait_with_output().map_err(spawn_error)?;
        if let Some(feeder) = feeder {
            // A write error (the tool exited early) shows in its status.
            let _ignored = feeder.join();
        }
        if !output.status.success() {
            return Err(ToolError::Exit {
                code: output.status.code(),
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            });
        }
        Ok(output.stdout)
    }
}

fn answer_error(error: serde_json::Error, stdout: &[u8]) -> ToolError {
    ToolError::Answer {
        error,
        stdout: String::from_utf8_lossy(stdout).into_owned(),
    }
}

/// Whether skipping is forbidden (CI sets `GPUSLICE_REQUIRE_TOOLS=1`).
fn tools_required() -> bool {
    std::env::var_os("GPUSLICE_REQUIRE_TOOLS").is_some_and(|v| v == "1")
}

/// The tool, or None after printing why `test` skips. Panics when the build
/// failed, and when the packages are missing under
/// `GPUSLICE_REQUIRE_TOOLS=1`.
pub fn available(test: &str) -> Option<&'static RealAllocator> {
    match RealAllocator::get() {
        Ok(tool) => Some(tool),
        Err(NotBuilt::Missing(why)) if !tools_required() => {
            eprintln!("SKIP {test}: {why} (GPUSLICE_REQUIRE_TOOLS=1 makes this a failure)");
            None
        }
        Err(err) => panic!("{test}: {err}"),
    }
}
