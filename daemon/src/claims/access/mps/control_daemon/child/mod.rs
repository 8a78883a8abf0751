//! The child-process supervisor of MPS control daemons. This module owns
//! starting, watching and restarting a daemon as a child of gpusliced (this
//! file) and finding again the children a previous gpusliced left running
//! ([`adopted`]). It must not decide which daemons should run (that is the
//! [`crate::claims::mps_daemon::MpsManager`]'s) nor touch the GPU backend.
//!
//! [`ChildSupervisor`]: each control daemon is a child process of gpusliced
//! (`nvidia-cuda-mps-control -f`), watched by one thread that waits on its
//! exit and restarts it unless it was stopped on purpose. Used when gpusliced
//! does not run under systemd, and in tests with a stand-in control program.
//! In the foreground NVIDIA's daemon writes no `control.log`: its log lines
//! go to stdout, which (with stderr) is appended to `<log dir>/control.log`,
//! so an operator finds the log where `-d` would have written it.

mod adopted;

use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::MpsError;
use super::folders::DaemonFolders;
use super::supervisor::{
    DaemonSpec, DaemonState, DaemonStatus, RestartHook, Supervised, Supervisor,
};
use crate::supervise::process::ProcessId;
use crate::supervise::restart::{DAEMON_RESTARTS, Restarts, Verdict};
use adopted::AdoptedDaemon;
pub use adopted::{kill_pid, pid_alive, pids_with_env};

/// How long a stopped daemon gets to exit before it is killed.
pub(super) const EXIT_BOUND: Duration = Duration::from_secs(20);
/// The pid file the control daemon writes into its pipe dir.
pub const PID_FILE: &str = "nvidia-cuda-mps-control.pid";
/// The file in the daemon's folder that names its process (pid and start
/// time), written by gpusliced when it starts the daemon.
pub const KEPT_PROCESS: &str = "daemon.pid";
/// Mode of the daemon's log (commands and answers, no secret).
const LOG_MODE: u32 = 0o644;

/// Supervises control daemons as child processes.
#[derive(Debug, Clone)]
pub struct ChildSupervisor {
    /// util-linux `unshare`, used to bind the shm at /dev/shm for the daemon
    /// alone when a spec asks for it.
    unshare: PathBuf,
}

impl Default for ChildSupervisor {
    fn default() -> Self {
        Self {
            unshare: PathBuf::from("unshare"),
        }
    }
}

impl ChildSupervisor {
    fn command(&self, spec: &DaemonSpec, log: &std::fs::File) -> std::io::Result<Command> {
        let mut command = if spec.bind_shm {
            // A private mount namespace where the daemon's /dev/shm is the
            // claim's tmpfs, as its clients see it.
            let mut c = Command::new(&self.unshare);
            c.args(["--mount", "--propagation", "private", "--", "/bin/sh", "-c"])
                .arg("mount --bind \"$1\" /dev/shm && shift && exec \"$@\"")
                .arg("sh")
                .arg(spec.folders.shm_dir())
                .arg(&spec.program);
            c
        } else {
            Command::new(&spec.program)
        };
        // A process group of its own: a Ctrl-C or SIGTERM meant for
        // gpusliced's group does not reach the daemon, which outlives a
        // restart of gpusliced like a systemd unit does.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        // The spec's PATH (the control program's folders first) replaces
        // this default.
        command
            .arg("-f")
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log.try_clone()?);
        Ok(command)
    }

    fn spawn(&self, spec: &DaemonSpec) -> Result<Child, MpsError> {
        let path = spec.folders.log_file();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(LOG_MODE)
            .open(&path)
            .map_err(|error| MpsError::Io {
                action: "open the log",
                path,
                error,
            })?;
        let child = self
            .command(spec, &log)
            .and_then(|mut command| command.spawn())
            .map_err(|error| MpsError::Io {
                action: "start the control daemon",
                path: spec.program.clone(),
                error,
            })?;
        // Kept where a later gpusliced finds it by (pid and start time: see
        // `adopted`), before the daemon is counted as started.
        if let Some(process) = ProcessId::of(child.id()) {
            let root = spec.folders.root();
            process.keep(root, KEPT_PROCESS).map_err(|e| MpsError::Io {
                action: "write",
                path: root.join(KEPT_PROCESS),
                error: std::io::Error::other(e.to_string()),
            })?;
        }
        Ok(child)
    }
}

impl Supervisor for ChildSupervisor {
    fn name(&self) -> &'static str {
        "child"
    }

    fn start(
        &self,
        spec: &DaemonSpec,
        on_restart: RestartHook,
    ) -> Result<Arc<dyn Supervised>, MpsError> {
        let child = self.spawn(spec)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(ChildState {
                pid: Some(child.id()),
                alive: true,
                stopping: false,
                restarts: 0,
                state: DaemonState::Running,
            }),
            changed: Condvar::new(),
        });
        let watcher = Watcher {
            supervisor: self.clone(),
            spec: spec.clone(),
            shared: Arc::clone(&shared),
            on_restart,
        };
        std::thread::Builder::new()
            .name(format!("mps-{}", spec.key.hash()))
            .spawn(move || watcher.run(child))
            .map_err(|error| MpsError::Io {
                action: "start the watcher thread of",
                path: spec.program.clone(),
                error,
            })?;
        Ok(Arc::new(ChildDaemon { shared }))
    }

    fn adopt(
        &self,
        spec: &DaemonSpec,
        _on_restart: RestartHook,
    ) -> Result<Option<Arc<dyn Supervised>>, MpsError> {
        Ok(AdoptedDaemon::find(&spec.folders).map(|d| Arc::new(d) as Arc<dyn Supervised>))
    }

    fn stop_stale(
        &self,
        _hash: &str,
        folders: &DaemonFolders,
        quit: &dyn Fn(),
    ) -> Result<(), MpsError> {
        adopted::stop_all(folders, quit)
    }

    fn running_hashes(&self, _mps_dir: &Path) -> Result<Vec<String>, MpsError> {
        Ok(Vec::new())
    }
}

#[derive(Debug)]
struct ChildState {
    pid: Option<u32>,
    alive: bool,
    stopping: bool,
    restarts: u32,
    state: DaemonState,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<ChildState>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, ChildState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits at most `bound` for a change of the state.
    fn wait<'a>(
        &self,
        state: MutexGuard<'a, ChildState>,
        bound: Duration,
    ) -> MutexGuard<'a, ChildState> {
        self.changed
            .wait_timeout(state, bound)
            .map_or_else(|e| e.into_inner().0, |(guard, _)| guard)
    }

    /// Waits `bound`, ended early by a stop.
    fn wait_while_running<'a>(
        &self,
        state: MutexGuard<'a, ChildState>,
        bound: Duration,
    ) -> MutexGuard<'a, ChildState> {
        self.changed
            .wait_timeout_while(state, bound, |s| !s.stopping)
            .map_or_else(|e| e.into_inner().0, |(guard, _)| guard)
    }
}

/// The thread that waits on the child and restarts it.
struct Watcher {
    supervisor: ChildSupervisor,
    spec: DaemonSpec,
    shared: Arc<Shared>,
    on_restart: RestartHook,
}

impl Watcher {
    fn run(self, mut child: Child) {
        let mut restarts = Restarts::new(DAEMON_RESTARTS);
        let mut pause = Duration::ZERO;
        loop {
            let status = child.wait();
            {
                let mut state = self.shared.lock();
                state.alive = false;
                if !state.stopping {
                    state.state = DaemonState::Restarting;
                    self.shared.changed.notify_all();
                    // A daemon that keeps failing is not restarted in a
                    // tight loop; a stop ends the pause.
                    state = self.shared.wait_while_running(state, pause);
                }
                if state.stopping {
                    state.state = DaemonState::Stopped;
                    self.shared.changed.notify_all();
                    return;
                }
            }
            let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
            tracing::warn!(daemon = %self.spec.key, %status, log = %self.spec.folders.log_note(None), "MPS control daemon exited; restarting it");
            match self.supervisor.spawn(&self.spec) {
                Ok(next) => child = next,
                Err(err) => {
                    tracing::error!(daemon = %self.spec.key, error = %err, "MPS control daemon cannot be restarted");
                    let mut state = self.shared.lock();
                    state.state = DaemonState::Failed;
                    self.shared.changed.notify_all();
                    return;
                }
            }
            {
                let mut state = self.shared.lock();
                state.pid = Some(child.id());
                state.alive = true;
                state.restarts += 1;
            }
            let mut given_up = false;
            let health = {
                let watched = std::cell::RefCell::new(&mut child);
                let alive = || {
                    watched
                        .borrow_mut()
                        .try_wait()
                        .is_ok_and(|status| status.is_none())
                };
                (self.on_restart)(&alive)
            };
            let mut state = self.shared.lock();
            if !state.stopping {
                state.state = match health {
                    Ok(()) => {
                        restarts.succeeded();
                        pause = Duration::ZERO;
                        DaemonState::Running
                    }
                    Err(err) => {
                        tracing::error!(daemon = %self.spec.key, error = %err, "restarted MPS control daemon is not ready");
                        match restarts.failed() {
                            Verdict::Restart(next) => pause = next,
                            Verdict::GiveUp => given_up = true,
                        }
                        DaemonState::Restarting
                    }
                };
            }
            if given_up {
                state.state = DaemonState::Failed;
                state.stopping = true;
                drop(state);
                let _ = child.kill();
                let _ = child.wait();
                let mut state = self.shared.lock();
                state.alive = false;
                self.shared.changed.notify_all();
                return;
            }
            self.shared.changed.notify_all();
        }
    }
}

/// A daemon this gpusliced started.
#[derive(Debug)]
pub struct ChildDaemon {
    shared: Arc<Shared>,
}

impl ChildDaemon {
    fn wait_restarts(&self, count: u32, bound: Duration) -> DaemonStatus {
        let deadline = Instant::now() + bound;
        let mut state = self.shared.lock();
        while !(state.restarts >= count && state.state != DaemonState::Restarting && state.alive)
            && state.state != DaemonState::Failed
        {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self.shared.wait(state, left);
        }
        status_of(&state)
    }
}

fn status_of(state: &ChildState) -> DaemonStatus {
    DaemonStatus {
        pid: state.pid,
        unit: None,
        state: state.state,
        restarts: state.restarts,
    }
}

impl Supervised for ChildDaemon {
    fn is_alive(&self) -> bool {
        self.shared.lock().alive
    }

    fn status(&self) -> DaemonStatus {
        status_of(&self.shared.lock())
    }

    fn wait_for_restarts(&self, count: u32, bound: Duration) -> DaemonStatus {
        self.wait_restarts(count, bound)
    }

    fn stop(&self, quit: &dyn Fn()) -> Result<(), MpsError> {
        self.shared.lock().stopping = true;
        quit();
        let deadline = Instant::now() + EXIT_BOUND;
        let mut state = self.shared.lock();
        while state.alive || state.state == DaemonState::Restarting {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                if let Some(pid) = state.pid {
                    tracing::warn!(
                        pid,
                        "MPS control daemon did not exit after quit; killing it"
                    );
                    kill_pid(pid);
                }
                // The watcher sees the exit at once; wait for it unbounded.
                while state.alive {
                    state = self
                        .shared
                        .changed
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                break;
            }
            state = self.shared.wait(state, left);
        }
        state.state = DaemonState::Stopped;
        Ok(())
    }
}
