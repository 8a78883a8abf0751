//! Talking to a running control daemon the way NVIDIA's own projects do: run
//! `nvidia-cuda-mps-control` with one command on its stdin and read its
//! answer (the socket protocol behind it is undocumented). Also the one
//! bounded wait for a started daemon to answer. The manager reaches a daemon
//! only through the [`Control`] trait, so tests can answer in the program's
//! place.
//!
//! NVIDIA's client (550.163.01) exits 0 whenever it reached a daemon,
//! whatever the daemon answered (refusals are answers), prints the answer and a
//! newline, or nothing at all for an empty answer, and exits 1 with `Cannot
//! find MPS control daemon process` on stderr when no daemon answers (a
//! socket left by a killed daemon included). For `quit` its status is the
//! daemon's exit status.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};

use super::MpsError;
use super::folders::DaemonFolders;

/// Upper bound for one control command; only a hung daemon reaches it.
const COMMAND_BOUND: Duration = Duration::from_secs(30);
/// The socket the control daemon creates in its pipe dir.
pub const CONTROL_SOCKET: &str = "control";

/// How the manager talks to one control daemon, given by its folders: the
/// two verbs it needs of `nvidia-cuda-mps-control`. [`ControlProgram`] runs
/// the real program; under the `testkit` feature `super::fake::FakeMps`
/// answers in its place.
pub trait Control: Send + Sync + std::fmt::Debug {
    /// Sends `command` to the daemon of `folders` and returns its answer,
    /// trimmed.
    fn send(&self, folders: &DaemonFolders, command: &str) -> Result<String, MpsError>;

    /// Waits until the daemon of `folders` answers `command` (a read-only
    /// one, such as `get_server_list`), at most `bound`, and returns the
    /// answer; `alive` says whether the daemon's process still runs, so one
    /// that died is reported at once ([`MpsError::DiedDuringStart`]).
    fn wait_until_answering(
        &self,
        folders: &DaemonFolders,
        command: &str,
        bound: Duration,
        alive: &dyn Fn() -> bool,
    ) -> Result<String, MpsError>;
}

/// The control program, run once per command.
#[derive(Debug, Clone)]
pub struct ControlProgram {
    program: PathBuf,
}

impl ControlProgram {
    /// `nvidia-cuda-mps-control` at `program` (a host path, driver root applied).
    pub fn new(program: &Path) -> Self {
        Self {
            program: program.to_path_buf(),
        }
    }
}

impl Control for ControlProgram {
    fn send(&self, folders: &DaemonFolders, command: &str) -> Result<String, MpsError> {
        let pipe_dir = folders.pipe_dir();
        let failed = |problem: String| MpsError::Command {
            command: command.to_owned(),
            pipe_dir: pipe_dir.clone(),
            problem,
        };
        let mut child = Command::new(&self.program)
            .env("CUDA_MPS_PIPE_DIRECTORY", &pipe_dir)
            .env("CUDA_MPS_LOG_DIRECTORY", folders.log_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| failed(format!("cannot run {}: {e}", self.program.display())))?;
        if let Some(mut stdin) = child.stdin.take() {
            // NVIDIA's client exits before it reads its stdin when it finds
            // no daemon: its status and stderr say so, not the broken pipe.
            match stdin.write_all(format!("{command}\n").as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
                    return Err(failed(format!("cannot write the command: {e}")));
                }
                _ => {}
            }
        }
        let pid = child.id();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let output = match rx.recv_timeout(COMMAND_BOUND) {
            Ok(result) => result.map_err(|e| failed(format!("cannot read the answer: {e}")))?,
            Err(_) => {
                if let Ok(pid) = i32::try_from(pid) {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                return Err(failed(format!(
                    "no answer within {}s; the daemon hangs",
                    COMMAND_BOUND.as_secs()
                )));
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        if output.status.success() {
            Ok(stdout)
        } else if command == "quit" && stdout.is_empty() && output.stderr.is_empty() {
            // The daemon quit, and this is its exit status (1 after one of
            // its servers failed): an answer, not a failure.
            tracing::info!(pipe_dir = %pipe_dir.display(), status = %output.status, "MPS control daemon quit with a non-zero status; its log says why");
            Ok(stdout)
        } else {
            let stderr = String::from_utf8_lossy(&output.stderr);
            Err(failed(format!(
                "{} ({stdout} {})",
                output.status,
                stderr.trim()
            )))
        }
    }

    /// The control socket existing is not enough: a daemon that was killed
    /// leaves its socket behind, and until the restarted one replaces it a
    /// client is refused. So the command is sent whenever the pipe dir
    /// changes (and at the latest every half second) once the socket
    /// exists; `alive` is asked on every wake-up.
    fn wait_until_answering(
        &self,
        folders: &DaemonFolders,
        command: &str,
        bound: Duration,
        alive: &dyn Fn() -> bool,
    ) -> Result<String, MpsError> {
        let pipe_dir = folders.pipe_dir();
        let socket = pipe_dir.join(CONTROL_SOCKET);
        let answer = std::cell::RefCell::new(None);
        let last_problem = std::cell::RefCell::new(None);
        let done = wait_on_dir(&pipe_dir, bound, &|| {
            if socket.exists() {
                match self.send(folders, command) {
                    Ok(text) => {
                        *answer.borrow_mut() = Some(text);
                        return Ok(true);
                    }
                    Err(err) => *last_problem.borrow_mut() = Some(err.to_string()),
                }
            }
            if alive() {
                Ok(false)
            } else {
                Err(MpsError::DiedDuringStart {
                    pipe_dir: pipe_dir.clone(),
                    log: String::new(),
                })
            }
        })?;
        match answer.into_inner() {
            Some(text) if done => Ok(text),
            _ => Err(MpsError::NotReady {
                pipe_dir: pipe_dir.clone(),
                seconds: bound.as_secs(),
                last_problem: last_problem
                    .into_inner()
                    .unwrap_or_else(|| "no control socket yet".to_owned()),
                log: String::new(),
            }),
        }
    }
}

/// Calls `done` each time something changes in `dir` (inotify), and at the
/// latest every half second, until it says true (`Ok(true)`) or `bound`
/// passes (`Ok(false)`). Not a sleep: the usual wake-up is the event.
pub fn wait_on_dir(
    dir: &Path,
    bound: Duration,
    done: &dyn Fn() -> Result<bool, MpsError>,
) -> Result<bool, MpsError> {
    let io = |e: nix::Error| MpsError::Io {
        action: "watch",
        path: dir.to_path_buf(),
        error: std::io::Error::from(e),
    };
    let inotify = Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK).map_err(io)?;
    let flags = AddWatchFlags::IN_CREATE
        | AddWatchFlags::IN_MOVED_TO
        | AddWatchFlags::IN_DELETE
        | AddWatchFlags::IN_CLOSE_WRITE;
    inotify.add_watch(dir, flags).map_err(io)?;
    let deadline = Instant::now() + bound;
    loop {
        if done()? {
            return Ok(true);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        wait_readable(&inotify, left.min(Duration::from_millis(500))).map_err(io)?;
        let _ = inotify.read_events();
    }
}
/// Blocks until the inotify fd has events or `bound` passes.
fn wait_readable(inotify: &Inotify, bound: Duration) -> Result<(), nix::Error> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let millis = u16::try_from(bound.as_millis()).unwrap_or(u16::MAX);
    let mut fds = [PollFd::new(inotify.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::from(millis)) {
        Ok(_) | Err(nix::Error::EINTR) => Ok(()),
        Err(e) => Err(e),
    }
}
