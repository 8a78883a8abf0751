//! [`FakeMps`]: the MPS control daemons for tests (feature `testkit`), one
//! object that plays both sides the manager drives: the [`Supervisor`] that
//! keeps a daemon's process running, and the [`Control`] program that talks
//! to it. No process is started and no socket made; the manager still
//! creates and removes the daemons' folders as with the real ones.
//!
//! It answers as NVIDIA's control daemon does ([`model`], held to the same
//! transcript as the stand-in `tests/tools/fake-mps-control` and the real
//! daemon) and keeps the stand-in's record: one
//! `start CUDA_VISIBLE_DEVICES=<uuids> ATP=<percentage>` line per start, then
//! each command verbatim. A daemon outlives the manager that started it (as
//! a process outlives gpusliced), so a new manager on the same fake adopts
//! it; [`FakeMps::reboot`] ends them all. What the manager holds of one
//! daemon, and the start gate, are in `handle`.

mod handle;
pub mod model;

use handle::Handle;
pub use handle::StartGate;
use model::{DaemonModel, Reply};

use std::collections::BTreeMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use super::MpsError;
use super::control::Control;
use super::folders::DaemonFolders;
use super::supervisor::{DaemonSpec, DaemonState, RestartHook, Supervised, Supervisor};

/// Recording, error-injecting MPS control daemons.
#[derive(Debug, Default)]
pub struct FakeMps {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<FakeState>,
    changed: Condvar,
}

#[derive(Default)]
struct FakeState {
    record: Vec<String>,
    /// Key hash → the daemon running for it.
    daemons: BTreeMap<String, FakeDaemon>,
    /// Starts so far, also the generation of the next daemon.
    starts: u64,
    fail_next_start: bool,
    /// (command prefix, error): the next command with this prefix fails.
    failing: Vec<(String, MpsError)>,
    gate: Gate,
}

impl std::fmt::Debug for FakeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeState")
            .field("daemons", &self.daemons.keys().collect::<Vec<_>>())
            .field("starts", &self.starts)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Gate {
    closed: bool,
    waiting: usize,
}

struct FakeDaemon {
    generation: u64,
    /// Its line in the record, written again at each restart.
    start_line: String,
    state: DaemonState,
    restarts: u32,
    /// `CUDA_MPS_ACTIVE_THREAD_PERCENTAGE` of its environment, which a
    /// restarted process starts from.
    env_percentage: Option<String>,
    /// Its settings now.
    model: DaemonModel,
    hook: RestartHook,
}

fn lock(shared: &Shared) -> MutexGuard<'_, FakeState> {
    shared.state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn hash_of(folders: &DaemonFolders) -> String {
    folders
        .root()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn env_value<'a>(spec: &'a DaemonSpec, name: &str) -> Option<&'a str> {
    spec.env
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

impl FakeMps {
    /// The record: start lines and commands, oldest first.
    pub fn record(&self) -> Vec<String> {
        lock(&self.shared).record.clone()
    }

    /// How many daemons were started (adoptions are not starts).
    pub fn starts(&self) -> usize {
        self.record()
            .iter()
            .filter(|l| l.starts_with("start "))
            .count()
    }

    /// Key hashes of the daemons running now.
    pub fn running(&self) -> Vec<String> {
        lock(&self.shared).daemons.keys().cloned().collect()
    }

    /// The next daemon started exits before it answers, as one whose GPUs
    /// are in the wrong compute mode does.
    pub fn fail_next_start(&self) {
        lock(&self.shared).fail_next_start = true;
    }

    /// The next command that starts with `prefix` fails with `error`.
    pub fn fail_command(&self, prefix: &str, error: MpsError) {
        lock(&self.shared).failing.push((prefix.to_owned(), error));
    }

    /// The daemon of `hash` dies and its supervisor restarts it at once:
    /// its limits are lost (back to its environment's) until the restart
    /// hook, run here, applies them again. Returns whether there was one.
    pub fn kill(&self, hash: &str) -> bool {
        let hook = {
            let mut state = lock(&self.shared);
            let Some(daemon) = state.daemons.get_mut(hash) else {
                return false;
            };
            daemon.restarts += 1;
            daemon.state = DaemonState::Restarting;
            daemon.model = DaemonModel::new(daemon.env_percentage.as_deref());
            let (line, hook) = (daemon.start_line.clone(), Arc::clone(&daemon.hook));
            state.record.push(line);
            hook
        };
        let outcome = hook(&|| true);
        if let Some(daemon) = lock(&self.shared).daemons.get_mut(hash) {
            daemon.state = match outcome {
                Ok(()) => DaemonState::Running,
                Err(_) => DaemonState::Failed,
            };
        }
        self.shared.changed.notify_all();
        true
    }

    /// Every daemon ends (the node rebooted).
    pub fn reboot(&self) {
        lock(&self.shared).daemons.clear();
        self.shared.changed.notify_all();
    }

    /// From now on each start waits, once it has begun, until the returned
    /// gate is opened: a test can hold a prepare mid-way with no sleep.
    pub fn gate_starts(&self) -> StartGate {
        lock(&self.shared).gate.closed = true;
        StartGate {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl Supervisor for FakeMps {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn start(
        &self,
        spec: &DaemonSpec,
        on_restart: RestartHook,
    ) -> Result<Arc<dyn Supervised>, MpsError> {
        let mut state = lock(&self.shared);
        if state.gate.closed {
            state.gate.waiting += 1;
            self.shared.changed.notify_all();
            while state.gate.closed {
                state = self
                    .shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            state.gate.waiting -= 1;
        }
        let percentage = env_value(spec, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").unwrap_or("");
        let start_line = format!(
            "start CUDA_VISIBLE_DEVICES={} ATP={percentage}",
            env_value(spec, "CUDA_VISIBLE_DEVICES").unwrap_or("")
        );
        state.record.push(start_line.clone());
        state.starts += 1;
        let hash = spec.key.hash();
        if std::mem::take(&mut state.fail_next_start) {
            return Ok(Arc::new(Handle {
                shared: Arc::clone(&self.shared),
                hash,
                generation: None,
            }));
        }
        let generation = state.starts;
        let env_percentage =
            env_value(spec, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE").map(str::to_owned);
        state.daemons.insert(
            hash.clone(),
            FakeDaemon {
                generation,
                start_line,
                state: DaemonState::Running,
                restarts: 0,
                model: DaemonModel::new(env_percentage.as_deref()),
                env_percentage,
                hook: on_restart,
            },
        );
        Ok(Arc::new(Handle {
            shared: Arc::clone(&self.shared),
            hash,
            generation: Some(generation),
        }))
    }

    fn adopt(
        &self,
        spec: &DaemonSpec,
        on_restart: RestartHook,
    ) -> Result<Option<Arc<dyn Supervised>>, MpsError> {
        let hash = spec.key.hash();
        let mut state = lock(&self.shared);
        let Some(daemon) = state.daemons.get_mut(&hash) else {
            return Ok(None);
        };
        daemon.hook = on_restart;
        Ok(Some(Arc::new(Handle {
            shared: Arc::clone(&self.shared),
            generation: Some(daemon.generation),
            hash,
        })))
    }

    fn stop_stale(
        &self,
        hash: &str,
        _folders: &DaemonFolders,
        quit: &dyn Fn(),
    ) -> Result<(), MpsError> {
        quit();
        lock(&self.shared).daemons.remove(hash);
        self.shared.changed.notify_all();
        Ok(())
    }

    fn running_hashes(&self, _mps_dir: &std::path::Path) -> Result<Vec<String>, MpsError> {
        Ok(Vec::new())
    }
}

impl Control for FakeMps {
    fn send(&self, folders: &DaemonFolders, command: &str) -> Result<String, MpsError> {
        let failed = |problem: String| MpsError::Command {
            command: command.to_owned(),
            pipe_dir: folders.pipe_dir(),
            problem,
        };
        let hash = hash_of(folders);
        let mut state = lock(&self.shared);
        if let Some(at) = state
            .failing
            .iter()
            .position(|(prefix, _)| command.starts_with(prefix.as_str()))
        {
            return Err(state.failing.remove(at).1);
        }
        if !state.daemons.contains_key(&hash) {
            return Err(failed(
                "exit status: 1 ( Cannot find MPS control daemon process)".to_owned(),
            ));
        }
        state.record.push(command.to_owned());
        let Some(daemon) = state.daemons.get_mut(&hash) else {
            return Err(failed("the daemon is gone".to_owned()));
        };
        match daemon.model.reply(command) {
            Reply::Answer(answer) => Ok(answer),
            Reply::Quit => {
                state.daemons.remove(&hash);
                drop(state);
                self.shared.changed.notify_all();
                Ok(String::new())
            }
        }
    }

    fn wait_until_answering(
        &self,
        folders: &DaemonFolders,
        command: &str,
        bound: Duration,
        alive: &dyn Fn() -> bool,
    ) -> Result<String, MpsError> {
        let running = lock(&self.shared).daemons.contains_key(&hash_of(folders));
        if running {
            return self.send(folders, command);
        }
        if !alive() {
            return Err(MpsError::DiedDuringStart {
                pipe_dir: folders.pipe_dir(),
                log: String::new(),
            });
        }
        Err(MpsError::NotReady {
            pipe_dir: folders.pipe_dir(),
            seconds: bound.as_secs(),
            last_problem: "no control socket yet".to_owned(),
            log: String::new(),
        })
    }
}
