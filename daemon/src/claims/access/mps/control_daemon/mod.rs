//! MPS control daemons: one per set of GPU or MIG UUIDs ([`MpsKey`]), with its
//! own pipe, log and shm folders under `<run_dir>/mps/<key hash>/`, started
//! with `CUDA_VISIBLE_DEVICES=<uuids>`, its limits applied and read back
//! through the control program before it is reported ready, supervised as a
//! child process or a transient systemd unit, and stopped with `quit`.
//!
//! Reading order: [`key`] and [`limits`] (pure), [`folders`] (its folders
//! and their CDI edits), [`control`] (the [`Control`] trait and
//! [`ControlProgram`], the stdin command protocol),
//! [`supervisor`] and its two implementations, each a module: [`child`] (with
//! `adopted`: the children of an earlier gpusliced, found again) and
//! [`systemd`] (with [`systemd::unit`], one unit, and
//! [`systemd::unit_state`], what its properties mean), [`mount`] (the shm
//! tmpfs), [`manager`] (reference counting, start, stop, start-up cleanup;
//! with `cleanup` and `lifecycle`).
//! The tests against the stand-in control program are in `tests`. Under the
//! `testkit` feature, `fake` has `FakeMps`, which plays the supervisor and
//! the control program at once for the engine's tests.
//!
//! This module never touches the GPU backend: compute mode is the engine's
//! (see [`manager`]).

pub mod child;
pub mod control;
#[cfg(any(test, feature = "testkit"))]
pub mod fake;
pub mod folders;
pub mod key;
pub mod limits;
pub mod manager;
pub mod mount;
pub mod supervisor;
pub mod systemd;

use std::path::PathBuf;

pub use child::ChildSupervisor;
pub use control::{Control, ControlProgram};
#[cfg(any(test, feature = "testkit"))]
pub use fake::{FakeMps, StartGate};
pub use folders::DaemonFolders;
pub use key::MpsKey;
pub use limits::{MpsLimits, client_memory_env};
pub use manager::{MpsDaemon, MpsManager, MpsSettings, Released, StaleDaemon};
pub use mount::{NoShmMount, ShmMounter, TmpfsMounter};
pub use supervisor::{DaemonState, DaemonStatus, Supervisor};
pub use systemd::SystemdSupervisor;

/// An MPS operation that did not happen.
#[derive(Debug, thiserror::Error)]
pub enum MpsError {
    /// A file or process operation failed.
    #[error("cannot {action} {path}: {error}")]
    Io {
        /// What was tried.
        action: &'static str,
        /// On what.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The control program refused or failed a command.
    #[error("MPS control command {command:?} (pipe dir {pipe_dir}) failed: {problem}")]
    Command {
        /// The command.
        command: String,
        /// The daemon's pipe dir.
        pipe_dir: PathBuf,
        /// What happened.
        problem: String,
    },
    /// The daemon exited before it answered.
    #[error(
        "the MPS control daemon of {pipe_dir} exited during start-up ({}); check the \
         control_program path and the GPUs' compute mode",
        log_note(log)
    )]
    DiedDuringStart {
        /// The daemon's pipe dir.
        pipe_dir: PathBuf,
        /// Where its output is and how it ended ([`DaemonFolders::log_note`]).
        log: String,
    },
    /// The daemon did not answer in time.
    #[error(
        "the MPS control daemon of {pipe_dir} did not answer within {seconds}s ({last_problem}; \
         {}), then retry",
        log_note(log)
    )]
    NotReady {
        /// The daemon's pipe dir.
        pipe_dir: PathBuf,
        /// The bound.
        seconds: u64,
        /// What the last try gave.
        last_problem: String,
        /// Where its output is and how it ended ([`DaemonFolders::log_note`]).
        log: String,
    },
    /// A limit did not read back as set.
    #[error("MPS limit not applied: {command:?} answered {answer:?}, expected {expected}")]
    LimitNotApplied {
        /// The read-back command.
        command: String,
        /// Its answer.
        answer: String,
        /// What was set, as the daemon prints it.
        expected: String,
    },
    /// A pinned memory limit the control daemon cannot take.
    #[error("MPS pinned memory limit of device {device} (daemon of {key}): {problem}")]
    LimitDevice {
        /// The daemon.
        key: MpsKey,
        /// The device the limit is for.
        device: String,
        /// Why it cannot be set.
        problem: String,
    },
    /// A pipe dir whose control socket path is too long for the daemon.
    #[error(
        "the MPS pipe dir {pipe_dir} is {length} bytes; NVIDIA's control daemon exits without \
         a word when it is longer than {max} (its socket {pipe_dir}/control_privileged must fit \
         in a unix socket path): set [mps] run_dir to a shorter folder, e.g. /run/gpuslice"
    )]
    PipeDirTooLong {
        /// The pipe dir.
        pipe_dir: PathBuf,
        /// Its length in bytes.
        length: usize,
        /// The longest the daemon takes.
        max: usize,
    },
    /// A second claim on a daemon asked for other limits.
    #[error(
        "the MPS daemon of {key} runs with {running:?} for claims [{}]; this claim asks for \
         {asked:?}; use the same mpsConfig limits, or other devices",
        claims.join(", ")
    )]
    LimitsConflict {
        /// The daemon.
        key: MpsKey,
        /// The limits asked.
        asked: MpsLimits,
        /// The limits in force.
        running: MpsLimits,
        /// The claims on it.
        claims: Vec<String>,
    },
    /// Devices shared with another daemon's set (one server per device).
    #[error(
        "devices {key} overlap the MPS daemon of {other} (claims [{}]); one device can be in \
         only one MPS daemon: allocate the same set of devices, or disjoint ones",
        claims.join(", ")
    )]
    Overlap {
        /// The key asked.
        key: MpsKey,
        /// The running daemon's key.
        other: MpsKey,
        /// Its claims.
        claims: Vec<String>,
    },
    /// The system bus or systemd refused a call.
    #[error("systemd over D-Bus: {action} {unit}: {problem}")]
    Systemd {
        /// What was tried.
        action: &'static str,
        /// The unit.
        unit: String,
        /// zbus's message.
        problem: String,
    },
}

/// The log part of a start-up error: where the daemon's output is, or
/// "see its log" when the caller did not know.
fn log_note(log: &str) -> String {
    if log.is_empty() {
        "see its log".to_owned()
    } else {
        format!("its log: {log}")
    }
}

#[cfg(test)]
mod tests;
