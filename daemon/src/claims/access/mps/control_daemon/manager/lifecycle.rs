//! The life of one daemon: its spec, start (folders, shm, process,
//! readiness through the control program, limits read back), stop and
//! removal, and the take-over of one a previous gpusliced left running.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::super::MpsError;
use super::super::control::Control;
use super::super::folders::DaemonFolders;
use super::super::key::MpsKey;
use super::super::limits::MpsLimits;
use super::super::supervisor::{DAEMON_MARKER, DaemonSpec, RestartHook, Supervised};
use super::{MpsManager, Running};
use crate::crash::crash_point;

impl MpsManager {
    fn spec(&self, key: &MpsKey, limits: &MpsLimits) -> DaemonSpec {
        let folders = DaemonFolders::new(&self.settings.mps_dir, key);
        let mut env = vec![
            ("CUDA_VISIBLE_DEVICES".to_owned(), key.visible_devices()),
            (
                "CUDA_MPS_PIPE_DIRECTORY".to_owned(),
                path_text(&folders.pipe_dir()),
            ),
            (
                "CUDA_MPS_LOG_DIRECTORY".to_owned(),
                path_text(&folders.log_dir()),
            ),
            (DAEMON_MARKER.to_owned(), path_text(folders.root())),
            (
                "PATH".to_owned(),
                daemon_path(&self.settings.control_program),
            ),
        ];
        env.extend(limits.daemon_env());
        DaemonSpec {
            key: key.clone(),
            folders,
            program: self.settings.control_program.clone(),
            env,
            bind_shm: self.settings.bind_shm,
        }
    }

    /// Folders, shm, process, readiness, limits; undone on failure.
    pub(super) fn start(&self, key: &MpsKey, limits: &MpsLimits) -> Result<Running, MpsError> {
        let spec = self.spec(key, limits);
        let folders = spec.folders.clone();
        folders.check_pipe_dir()?;
        limits.commands(key)?;
        let control = self.control.as_ref();
        let bound = self.settings.ready_bound;
        let hook_control = Arc::clone(&self.control);
        let hook_folders = folders.clone();
        let hook_limits = limits.clone();
        let hook_key = key.clone();
        let hook: RestartHook = Arc::new(move |alive: &dyn Fn() -> bool| {
            bring_up(
                hook_control.as_ref(),
                (&hook_key, &hook_folders),
                &hook_limits,
                bound,
                alive,
            )
        });
        if let Some(daemon) = self.supervisor.adopt(&spec, Arc::clone(&hook))? {
            let alive = || daemon.is_alive();
            if bring_up(control, (key, &folders), limits, bound, &alive).is_ok() {
                tracing::info!(daemon = %key, "took over a running MPS control daemon");
                return Ok(running(limits, folders, daemon));
            }
            daemon.stop(&|| {
                let _ = control.send(&folders, "quit");
            })?;
        }
        folders.create(key).map_err(|error| MpsError::Io {
            action: "create",
            path: folders.root().to_path_buf(),
            error,
        })?;
        crash_point("mps.after_dirs_created");
        let result = self.mounter.mount(&folders.shm_dir()).and_then(|()| {
            crash_point("mps.after_shm_mounted");
            let daemon = self.supervisor.start(&spec, hook)?;
            crash_point("mps.after_daemon_spawned");
            let alive = || daemon.is_alive();
            match bring_up(control, (key, &folders), limits, bound, &alive) {
                Ok(()) => {
                    crash_point("mps.after_limits_applied");
                    Ok(daemon)
                }
                Err(err) => {
                    let unit = daemon.status().unit;
                    let _ = daemon.stop(&|| {
                        let _ = control.send(&folders, "quit");
                    });
                    // Read once it is gone: the folder goes with the failure.
                    Err(with_log(err, &folders, unit.as_deref()))
                }
            }
        });
        match result {
            Ok(daemon) => {
                tracing::info!(daemon = %key, supervisor = self.supervisor.name(), "MPS control daemon ready");
                Ok(running(limits, folders, daemon))
            }
            Err(err) => {
                let _ = self.remove(&folders);
                Err(err)
            }
        }
    }

    pub(super) fn stop(
        &self,
        key: &MpsKey,
        folders: &DaemonFolders,
        daemon: &dyn Supervised,
    ) -> Result<(), MpsError> {
        daemon.stop(&|| {
            if let Err(err) = self.control.send(folders, "quit") {
                tracing::warn!(daemon = %key, error = %err, "quit was not answered; stopping the process");
            }
        })?;
        crash_point("mps.after_quit");
        self.supervisor.stop_stale(&key.hash(), folders, &|| {})?;
        self.remove(folders)
    }

    pub(super) fn remove(&self, folders: &DaemonFolders) -> Result<(), MpsError> {
        self.mounter.unmount(&folders.shm_dir())?;
        folders.remove().map_err(|error| MpsError::Io {
            action: "remove",
            path: folders.root().to_path_buf(),
            error,
        })?;
        crash_point("mps.after_dirs_removed");
        Ok(())
    }
}

fn running(limits: &MpsLimits, folders: DaemonFolders, daemon: Arc<dyn Supervised>) -> Running {
    Running {
        limits: limits.clone(),
        claims: BTreeSet::new(),
        folders,
        daemon,
    }
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}

/// The daemon's `PATH`: NVIDIA's control daemon starts
/// `nvidia-cuda-mps-server` by a PATH lookup, so the folder of the
/// configured control program comes first, then its `sbin` sibling (Debian
/// puts the server in `usr/sbin` beside `usr/bin`'s control program), each
/// also for the program's real path when it is a link, then the system's.
pub fn daemon_path(control_program: &Path) -> String {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let real = std::fs::canonicalize(control_program).ok();
    for program in std::iter::once(control_program).chain(real.as_deref()) {
        let Some(dir) = program.parent().filter(|d| d.is_absolute()) else {
            continue;
        };
        dirs.push(dir.to_path_buf());
        if dir.file_name().is_some_and(|n| n == "bin")
            && let Some(up) = dir.parent()
        {
            dirs.push(up.join("sbin"));
        }
    }
    dirs.extend(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from));
    let mut seen = BTreeSet::new();
    let parts: Vec<String> = dirs
        .into_iter()
        .filter(|d| seen.insert(d.clone()))
        .map(|d| path_text(&d))
        .collect();
    parts.join(":")
}

/// `err` with where the daemon's output is, when it is about its start.
fn with_log(err: MpsError, folders: &DaemonFolders, unit: Option<&str>) -> MpsError {
    match err {
        MpsError::DiedDuringStart { pipe_dir, .. } => MpsError::DiedDuringStart {
            pipe_dir,
            log: folders.log_note(unit),
        },
        MpsError::NotReady {
            pipe_dir,
            seconds,
            last_problem,
            ..
        } => MpsError::NotReady {
            pipe_dir,
            seconds,
            last_problem,
            log: folders.log_note(unit),
        },
        other => other,
    }
}

/// Readiness through the control program: the daemon of `key` (in
/// `folders`) answers `get_server_list`, the limits are set and read back
/// as asked.
pub fn bring_up(
    control: &dyn Control,
    (key, folders): (&MpsKey, &DaemonFolders),
    limits: &MpsLimits,
    bound: Duration,
    alive: &dyn Fn() -> bool,
) -> Result<(), MpsError> {
    control.wait_until_answering(folders, "get_server_list", bound, alive)?;
    for command in limits.commands(key)? {
        control.send(folders, &command)?;
    }
    for (command, expected) in limits.checks(key)? {
        let answer = control.send(folders, &command)?;
        if !expected.matches(&answer) {
            return Err(MpsError::LimitNotApplied {
                command,
                answer,
                expected: expected.to_string(),
            });
        }
    }
    Ok(())
}
