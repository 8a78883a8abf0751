//! The IMEX daemon as a child of gpusliced (no systemd: the simulator, the
//! tests): `nvidia-imex -c imexd.cfg` in the foreground (`DAEMONIZE=0`),
//! started through the launcher ([`super::launch`]: its own mount
//! namespace, the domain's mapping as /etc/hosts), in a process group of
//! its own (a signal meant for gpusliced does not reach it, and it outlives
//! a restart of gpusliced), its output appended to the domain's log.
//!
//! Its pid and start time go to `daemon.pid` in the domain's folder (root's
//! alone) each time it starts, before the launcher may exec it: a gpusliced
//! started again finds it there, and a pid the kernel gave another process
//! since is not taken for it.
//! One watcher thread per daemon restarts it when it exits; a daemon found
//! again is watched by its pid until it exits, then started again as a
//! child. Five starts in a row that die within a second each give it up as
//! failed.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use super::launch::launch_args;
use super::{Daemon, ImexSpec, ImexStatus, Runner, STOP_BOUND};
use crate::compute_domains::DomainError;
use crate::compute_domains::folder::LOG_MODE;
use crate::supervise::DaemonState;
use crate::supervise::process::{ProcessId, kill_pid};
use crate::supervise::restart::{DAEMON_RESTARTS, Restarts, Verdict};

/// The file of the running process's pid and start.
const PID_FILE: &str = "daemon.pid";
/// How often a daemon found again is probed.
const ADOPTED_PROBE: Duration = Duration::from_millis(200);

/// Runs daemons as children, started through `launcher` (gpusliced).
#[derive(Debug, Clone)]
pub struct ChildRunner {
    launcher: PathBuf,
}

impl ChildRunner {
    /// With `launcher`, the gpusliced binary (`/proc/self/exe`).
    pub fn new(launcher: PathBuf) -> Self {
        Self { launcher }
    }

    fn spawn(&self, spec: &ImexSpec) -> Result<Child, DomainError> {
        let folder = &spec.folder;
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(LOG_MODE)
            .open(folder.log_path())
            .map_err(|e| DomainError::io("open", &folder.log_path(), e))?;
        let err_log = log
            .try_clone()
            .map_err(|e| DomainError::io("open", &folder.log_path(), e))?;
        let config = folder.config_path();
        let args = launch_args(
            &folder.hosts_path(),
            &[spec.program.as_os_str(), "-c".as_ref(), config.as_os_str()],
        );
        let mut command = Command::new(&self.launcher);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let mut child = command
            .args(args)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .stdin(Stdio::piped())
            .stdout(log)
            .stderr(err_log)
            .spawn()
            .map_err(|e| DomainError::io("start", &spec.program, e))?;
        crate::crash::crash_point("imex.after_launcher_spawned");
        if let Err(err) = keep_and_give_word(&mut child, folder.root()) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(err);
        }
        super::passed_start();
        Ok(child)
    }
}

/// Keeps the launcher's pid and start time (the daemon's, once it execs)
/// in `folder`, then gives it the word to start the daemon ([`super::launch`]).
fn keep_and_give_word(launcher: &mut Child, folder: &Path) -> Result<(), DomainError> {
    use std::io::Write;
    let kept = ProcessId::of(launcher.id()).map(|process| process.keep(folder, PID_FILE));
    if let Some(Err(err)) = kept {
        return Err(DomainError::Io {
            action: "write",
            path: folder.join(PID_FILE),
            error: std::io::Error::other(err.to_string()),
        });
    }
    // A launcher that already exited (no word taken) is the watcher's to see.
    if let Some(mut word) = launcher.stdin.take() {
        let _ = word.write_all(b"\n");
    }
    Ok(())
}

/// The process the folder names, when it still runs.
fn kept_process(folder: &Path) -> Option<ProcessId> {
    ProcessId::kept(folder, PID_FILE)
}

impl Runner for ChildRunner {
    fn name(&self) -> &'static str {
        "child"
    }

    fn start(&self, spec: &ImexSpec) -> Result<Box<dyn Daemon>, DomainError> {
        let child = self.spawn(spec)?;
        let pid = child.id();
        Ok(Box::new(ChildDaemon::watch(
            self.clone(),
            spec,
            pid,
            Process::Child(child),
        )?))
    }

    fn adopt(&self, spec: &ImexSpec) -> Result<Option<Box<dyn Daemon>>, DomainError> {
        let Some(process) = kept_process(spec.folder.root()) else {
            return Ok(None);
        };
        let daemon =
            ChildDaemon::watch(self.clone(), spec, process.pid, Process::Adopted(process))?;
        Ok(Some(Box::new(daemon)))
    }

    fn stop_stale(&self, spec: &ImexSpec) {
        if let Some(process) = kept_process(spec.folder.root()) {
            terminate_and_wait(&process);
            super::passed_stop();
        }
    }

    fn running(&self, imex_dir: &Path) -> Vec<String> {
        std::fs::read_dir(imex_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| kept_process(&e.path()).is_some())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    }
}

/// SIGTERM, a bounded wait, SIGKILL: for a process that is not our child.
fn terminate_and_wait(process: &ProcessId) {
    process.signal(Signal::SIGTERM);
    let (gate, pause) = (Mutex::new(()), Condvar::new());
    let deadline = Instant::now() + STOP_BOUND;
    let mut guard = gate
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    while process.alive() {
        if Instant::now() >= deadline {
            kill_pid(process.pid);
            return;
        }
        // Not our child: nothing signals its exit, so it is probed.
        guard = pause
            .wait_timeout(guard, ADOPTED_PROBE)
            .map_or_else(|e| e.into_inner().0, |(g, _)| g);
    }
}

#[derive(Debug)]
struct State {
    process: Option<ProcessId>,
    stopping: bool,
    /// gpusliced let go of the daemon (it is ending): it runs on, and
    /// nothing restarts it, as after a crash.
    detached: bool,
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
    Adopted(ProcessId),
}

/// One domain's daemon, a child under watch.
#[derive(Debug)]
pub struct ChildDaemon {
    domain: String,
    shared: Arc<Shared>,
}

impl ChildDaemon {
    fn watch(
        runner: ChildRunner,
        spec: &ImexSpec,
        pid: u32,
        process: Process,
    ) -> Result<Self, DomainError> {
        let known = match &process {
            Process::Adopted(p) => Some(*p),
            Process::Child(_) => ProcessId::of(pid),
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                process: known,
                stopping: false,
                detached: false,
                restarts: 0,
                state: DaemonState::Running,
                problem: None,
            }),
            changed: Condvar::new(),
        });
        let watcher = Watcher {
            runner,
            spec: spec.clone(),
            shared: Arc::clone(&shared),
        };
        let domain = spec.folder.domain().to_owned();
        std::thread::Builder::new()
            .name(format!("imex-{}", &domain[..8.min(domain.len())]))
            .spawn(move || watcher.run(process))
            .map_err(|e| DomainError::io("start the watcher of", &spec.program, e))?;
        Ok(Self { domain, shared })
    }
}

impl Daemon for ChildDaemon {
    fn status(&self) -> ImexStatus {
        let state = self.shared.lock();
        ImexStatus {
            pid: state.process.map(|p| p.pid),
            state: state.state,
            restarts: state.restarts,
            unit: None,
        }
    }

    fn process(&self) -> Option<ProcessId> {
        self.shared.lock().process
    }

    fn problem(&self) -> Option<String> {
        self.shared.lock().problem.clone()
    }

    fn wait_for_change(&self, bound: Duration) {
        let guard = self.shared.lock();
        drop(self.shared.wait(guard, bound));
    }

    fn reload(&self) -> bool {
        self.process().is_some_and(|p| p.signal(Signal::SIGUSR1))
    }

    fn stop(&self) {
        let process = {
            let mut state = self.shared.lock();
            state.stopping = true;
            self.shared.changed.notify_all();
            state.process
        };
        let Some(process) = process else { return };
        process.signal(Signal::SIGTERM);
        let deadline = Instant::now() + STOP_BOUND;
        let mut guard = self.shared.lock();
        while guard.state != DaemonState::Stopped && guard.state != DaemonState::Failed {
            let now = Instant::now();
            if now >= deadline {
                tracing::warn!(domain = %self.domain, pid = process.pid, "IMEX daemon did not exit on SIGTERM; killing it");
                kill_pid(process.pid);
                break;
            }
            guard = self.shared.wait(guard, deadline - now);
        }
        drop(guard);
        super::passed_stop();
    }

    fn let_go(&self) {
        self.shared.lock().detached = true;
        self.shared.changed.notify_all();
    }
}

impl Drop for ChildDaemon {
    fn drop(&mut self) {
        self.let_go();
    }
}

/// The thread that waits on the daemon and starts it again.
struct Watcher {
    runner: ChildRunner,
    spec: ImexSpec,
    shared: Arc<Shared>,
}

impl Watcher {
    fn domain(&self) -> &str {
        self.spec.folder.domain()
    }

    fn run(self, mut process: Process) {
        let mut restarts = Restarts::new(DAEMON_RESTARTS);
        let mut started = Instant::now();
        loop {
            self.wait_for_exit(&mut process);
            {
                let mut state = self.shared.lock();
                state.process = None;
                if self.ends(&mut state) {
                    return;
                }
                state.restarts += 1;
                tracing::warn!(domain = %self.domain(), restarts = state.restarts, "IMEX daemon exited; restarting it");
                let Verdict::Restart(pause) = restarts.exited_after(started.elapsed()) else {
                    self.give_up(&mut state, restarts.give_up_reason());
                    return;
                };
                state.state = DaemonState::Restarting;
                self.shared.changed.notify_all();
                // A daemon dying at once is not restarted in a tight loop.
                if !pause.is_zero() {
                    drop(self.shared.wait(state, pause));
                }
            }
            if self.ends(&mut self.shared.lock()) {
                return;
            }
            match self.runner.spawn(&self.spec) {
                Ok(child) => {
                    started = Instant::now();
                    let mut state = self.shared.lock();
                    state.process = ProcessId::of(child.id());
                    state.state = DaemonState::Running;
                    self.shared.changed.notify_all();
                    process = Process::Child(child);
                }
                Err(err) => {
                    self.give_up(&mut self.shared.lock(), err.to_string());
                    return;
                }
            }
        }
    }

    fn give_up(&self, state: &mut State, problem: String) {
        tracing::error!(domain = %self.domain(), %problem, log = %self.spec.folder.log_path().display(), "IMEX daemon given up");
        state.state = DaemonState::Failed;
        state.problem = Some(problem);
        self.shared.changed.notify_all();
    }

    /// Whether the watch ends here: stopped on purpose (the state says so)
    /// or let go of.
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
            Process::Adopted(known) => {
                let mut guard = self.shared.lock();
                while !guard.detached && known.alive() {
                    guard = self.shared.wait(guard, ADOPTED_PROBE);
                }
            }
        }
    }
}
