//! The IMEX daemon of one domain on this node: `nvidia-imex -c imexd.cfg`
//! in the foreground (the config says `DAEMONIZE=0`), a child of gpusliced
//! in a process group of its own (so a signal meant for gpusliced does not
//! reach it and it outlives a restart of gpusliced), its output appended to
//! the domain's log. One watcher thread per daemon restarts it when it
//! exits; a daemon a previous gpusliced started is found again by the
//! marker in its environment ([`DOMAIN_MARKER`], set to the domain's
//! folder) and watched by probing its pid until it exits, then restarted as
//! a child. Peers changed: the daemon is restarted on the new nodes config
//! (not counted as a restart). Five starts in a row that die within a
//! second each give the daemon up as failed.

use std::fs::OpenOptions;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::DomainError;
use super::folder::DomainFolder;
use crate::mps::DaemonState;
use crate::mps::child::{kill_pid, pid_alive, pids_with_env};

/// Set in the IMEX daemon's environment to its domain's folder.
pub const DOMAIN_MARKER: &str = "GPUSLICE_IMEX_DOMAIN";

/// Quick deaths in a row before the daemon is given up.
const MAX_QUICK_DEATHS: u32 = 5;
/// A daemon that lived less than this died quickly.
const QUICK: Duration = Duration::from_secs(1);
/// How long a stopped daemon gets before it is killed.
const STOP_BOUND: Duration = Duration::from_secs(10);
/// How often an adopted daemon's pid is probed.
const ADOPTED_PROBE: Duration = Duration::from_millis(200);

/// What a daemon is started from.
#[derive(Debug, Clone)]
pub struct ImexSpec {
    /// The domain's uid.
    pub domain: String,
    /// nvidia-imex.
    pub program: PathBuf,
    /// Its folder.
    pub folder: DomainFolder,
}

impl ImexSpec {
    fn marker(&self) -> String {
        format!("{DOMAIN_MARKER}={}", self.folder.root().display())
    }

    fn spawn(&self) -> Result<Child, DomainError> {
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.folder.log_path())
            .map_err(|e| DomainError::io("open", &self.folder.log_path(), e))?;
        let err_log = log
            .try_clone()
            .map_err(|e| DomainError::io("open", &self.folder.log_path(), e))?;
        let mut command = Command::new(&self.program);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command
            .arg("-c")
            .arg(self.folder.config_path())
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env(DOMAIN_MARKER, self.folder.root())
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err_log)
            .spawn()
            .map_err(|e| DomainError::io("start", &self.program, e))
    }
}

/// What `gpuslicectl` and the plugin are told of a daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImexStatus {
    /// Its pid, while it runs.
    pub pid: Option<u32>,
    /// Running, restarting, failed or stopped.
    pub state: DaemonState,
    /// Restarts after it died, since this gpusliced watches it.
    pub restarts: u32,
}

#[derive(Debug)]
struct State {
    pid: Option<u32>,
    stopping: bool,
    /// The engine let go of the daemon (gpusliced is ending): it runs on,
    /// and nothing restarts it, as after a crash.
    detached: bool,
    reloading: bool,
    restarts: u32,
    state: DaemonState,
    problem: Option<String>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits for a change, at most `bound`.
    fn wait<'a>(&self, guard: MutexGuard<'a, State>, bound: Duration) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(guard, bound)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0)
    }
}

/// The process being watched.
enum Process {
    Child(Child),
    Adopted(u32),
}

/// One domain's IMEX daemon under watch.
#[derive(Debug)]
pub struct ImexDaemon {
    spec: ImexSpec,
    shared: Arc<Shared>,
}

impl ImexDaemon {
    /// Starts the daemon of `spec`.
    pub fn start(spec: &ImexSpec) -> Result<Self, DomainError> {
        let child = spec.spawn()?;
        Self::watch(spec, child.id(), Process::Child(child))
    }

    /// Takes over the daemon a previous gpusliced started for `spec`, when
    /// one runs.
    pub fn adopt(spec: &ImexSpec) -> Result<Option<Self>, DomainError> {
        let Some(pid) = pids_with_env(&spec.marker()).into_iter().min() else {
            return Ok(None);
        };
        Self::watch(spec, pid, Process::Adopted(pid)).map(Some)
    }

    /// Stops every process carrying the marker of `folder` (a domain with
    /// no claim left, found at start-up).
    pub fn stop_stale(folder: &DomainFolder) {
        let marker = format!("{DOMAIN_MARKER}={}", folder.root().display());
        for pid in pids_with_env(&marker) {
            terminate_and_wait(pid);
        }
    }

    fn watch(spec: &ImexSpec, pid: u32, process: Process) -> Result<Self, DomainError> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                pid: Some(pid),
                stopping: false,
                detached: false,
                reloading: false,
                restarts: 0,
                state: DaemonState::Running,
                problem: None,
            }),
            changed: Condvar::new(),
        });
        let watcher = Watcher {
            spec: spec.clone(),
            shared: Arc::clone(&shared),
        };
        std::thread::Builder::new()
            .name(format!("imex-{}", &spec.domain[..8.min(spec.domain.len())]))
            .spawn(move || watcher.run(process))
            .map_err(|e| DomainError::io("start the watcher of", &spec.program, e))?;
        Ok(Self {
            spec: spec.clone(),
            shared,
        })
    }

    /// The domain's folder.
    pub fn folder(&self) -> &DomainFolder {
        &self.spec.folder
    }

    /// State, pid and restarts now.
    pub fn status(&self) -> ImexStatus {
        let state = self.shared.lock();
        ImexStatus {
            pid: state.pid,
            state: state.state,
            restarts: state.restarts,
        }
    }

    /// Why the daemon is failed, when it is.
    pub fn problem(&self) -> Option<String> {
        self.shared.lock().problem.clone()
    }

    /// Waits at most `bound` for the daemon's state to change.
    pub fn wait_for_change(&self, bound: Duration) {
        let guard = self.shared.lock();
        drop(self.shared.wait(guard, bound));
    }

    /// Waits (at most `bound`) until the daemon was restarted `count` times
    /// and runs again, or failed; its status then.
    pub fn wait_for_restarts(&self, count: u32, bound: Duration) -> ImexStatus {
        let deadline = Instant::now() + bound;
        let mut guard = self.shared.lock();
        loop {
            let back = guard.restarts >= count && guard.state == DaemonState::Running;
            let now = Instant::now();
            if back || guard.state == DaemonState::Failed || now >= deadline {
                break;
            }
            guard = self.shared.wait(guard, deadline - now);
        }
        ImexStatus {
            pid: guard.pid,
            state: guard.state,
            restarts: guard.restarts,
        }
    }

    /// Restarts the daemon on its rewritten nodes config (not a restart
    /// after a death: not counted).
    pub fn reload(&self) {
        let pid = {
            let mut state = self.shared.lock();
            state.reloading = true;
            state.pid
        };
        if let Some(pid) = pid {
            signal(pid, Signal::SIGTERM);
        }
    }

    /// Stops the daemon: SIGTERM, then SIGKILL after a bound; returns once
    /// the watcher saw it exit (or the bound passed).
    pub fn stop(&self) {
        let pid = {
            let mut state = self.shared.lock();
            state.stopping = true;
            self.shared.changed.notify_all();
            state.pid
        };
        let Some(pid) = pid else { return };
        signal(pid, Signal::SIGTERM);
        let deadline = Instant::now() + STOP_BOUND;
        let mut guard = self.shared.lock();
        while guard.state != DaemonState::Stopped && guard.state != DaemonState::Failed {
            let now = Instant::now();
            if now >= deadline {
                tracing::warn!(domain = %self.spec.domain, pid, "IMEX daemon did not exit on SIGTERM; killing it");
                kill_pid(pid);
                break;
            }
            guard = self.shared.wait(guard, deadline - now);
        }
    }
}

impl Drop for ImexDaemon {
    /// The engine is ending (gpusliced stops): the daemon runs on for the
    /// next gpusliced to take over, and this one's watcher restarts nothing.
    fn drop(&mut self) {
        self.shared.lock().detached = true;
        self.shared.changed.notify_all();
    }
}

fn signal(pid: u32, signal: Signal) {
    if let Ok(p) = i32::try_from(pid) {
        let _ = kill(Pid::from_raw(p), signal);
    }
}

/// SIGTERM, a bounded wait, SIGKILL: for a process that is not ours to
/// watch.
fn terminate_and_wait(pid: u32) {
    signal(pid, Signal::SIGTERM);
    // Not our child: nothing signals its exit, so its pid is probed.
    let (gate, pause) = (Mutex::new(()), Condvar::new());
    let deadline = Instant::now() + STOP_BOUND;
    let mut guard = gate
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    while pid_alive(pid) {
        if Instant::now() >= deadline {
            kill_pid(pid);
            return;
        }
        guard = pause
            .wait_timeout(guard, ADOPTED_PROBE)
            .map_or_else(|e| e.into_inner().0, |(g, _)| g);
    }
}

/// The thread that waits on the daemon and starts it again.
struct Watcher {
    spec: ImexSpec,
    shared: Arc<Shared>,
}

impl Watcher {
    fn run(self, mut process: Process) {
        let mut quick_deaths = 0u32;
        let mut started = Instant::now();
        loop {
            self.wait_for_exit(&mut process);
            {
                let mut state = self.shared.lock();
                state.pid = None;
                if self.ends(&mut state) {
                    return;
                }
                if state.reloading {
                    state.reloading = false;
                    quick_deaths = 0;
                } else {
                    state.restarts += 1;
                    quick_deaths = if started.elapsed() < QUICK {
                        quick_deaths + 1
                    } else {
                        0
                    };
                    tracing::warn!(domain = %self.spec.domain, restarts = state.restarts, "IMEX daemon exited; restarting it");
                }
                if quick_deaths >= MAX_QUICK_DEATHS {
                    state.state = DaemonState::Failed;
                    state.problem = Some(format!(
                        "it exited within a second of each of its last {MAX_QUICK_DEATHS} starts"
                    ));
                    tracing::error!(domain = %self.spec.domain, log = %self.spec.folder.log_path().display(), "IMEX daemon keeps exiting; given up");
                    self.shared.changed.notify_all();
                    return;
                }
                state.state = DaemonState::Restarting;
                self.shared.changed.notify_all();
                // A daemon dying at once is not restarted in a tight loop.
                let pause = QUICK / 5 * quick_deaths;
                if !pause.is_zero() {
                    drop(self.shared.wait(state, pause));
                }
            }
            if self.ends(&mut self.shared.lock()) {
                return;
            }
            match self.spec.spawn() {
                Ok(child) => {
                    started = Instant::now();
                    let mut state = self.shared.lock();
                    state.pid = Some(child.id());
                    state.state = DaemonState::Running;
                    self.shared.changed.notify_all();
                    process = Process::Child(child);
                }
                Err(err) => {
                    let mut state = self.shared.lock();
                    state.state = DaemonState::Failed;
                    state.problem = Some(err.to_string());
                    tracing::error!(domain = %self.spec.domain, error = %err, "IMEX daemon cannot be started again");
                    self.shared.changed.notify_all();
                    return;
                }
            }
        }
    }

    /// Whether the watch ends here: stopped on purpose (the state says
    /// so) or let go of.
    fn ends(&self, state: &mut State) -> bool {
        if state.stopping {
            state.state = DaemonState::Stopped;
            self.shared.changed.notify_all();
        }
        state.stopping || state.detached
    }

    fn wait_for_exit(&self, process: &mut Process) {
        match process {
            Process::Child(child) => {
                let _ = child.wait();
            }
            Process::Adopted(pid) => {
                let mut guard = self.shared.lock();
                while !guard.detached && pid_alive(*pid) {
                    guard = self.shared.wait(guard, ADOPTED_PROBE);
                }
            }
        }
    }
}
