//! Control daemons a previous gpusliced started as its children, found
//! after a restart: by the pid file the daemon writes into its pipe dir,
//! or, when it died before writing it (a crash right after the start), by
//! the marker every daemon carries in its environment
//! ([`crate::mps::supervisor::DAEMON_MARKER`], set to its folder). Such a daemon
//! is not our child: liveness is a signal-0 probe, and nothing restarts it.

use std::path::{Path, PathBuf};

use super::{EXIT_BOUND, PID_FILE};
use crate::mps::MpsError;
use crate::mps::control::{CONTROL_SOCKET, wait_on_dir};
use crate::mps::folders::DaemonFolders;
use crate::mps::supervisor::{DAEMON_MARKER, DaemonState, DaemonStatus, Supervised};

/// A daemon a previous gpusliced started.
#[derive(Debug)]
pub struct AdoptedDaemon {
    pid: u32,
    pipe_dir: PathBuf,
}

impl AdoptedDaemon {
    /// The daemon of `folders`, when one runs: the pid file's, else the
    /// lowest pid carrying its marker.
    pub fn find(folders: &DaemonFolders) -> Option<Self> {
        let pid = running_pid(folders).or_else(|| marked_pids(folders).into_iter().min())?;
        Some(Self {
            pid,
            pipe_dir: folders.pipe_dir(),
        })
    }

    /// Waits (bounded) for the process to exit, then kills it.
    fn wait_or_kill(&self) -> Result<(), MpsError> {
        let pid = self.pid;
        let gone = wait_on_dir(dir_or_root(&self.pipe_dir), EXIT_BOUND, &|| {
            Ok(!pid_alive(pid))
        })?;
        if !gone {
            tracing::warn!(
                pid,
                "adopted MPS control daemon did not exit after quit; killing it"
            );
            kill_pid(pid);
        }
        Ok(())
    }
}

impl Supervised for AdoptedDaemon {
    fn is_alive(&self) -> bool {
        pid_alive(self.pid)
    }

    fn status(&self) -> DaemonStatus {
        DaemonStatus {
            pid: Some(self.pid),
            unit: None,
            state: if self.is_alive() {
                DaemonState::Running
            } else {
                DaemonState::Failed
            },
            restarts: 0,
        }
    }

    fn stop(&self, quit: &dyn Fn()) -> Result<(), MpsError> {
        quit();
        self.wait_or_kill()
    }
}

/// Stops every process of the daemon of `folders`: asked to quit when it serves
/// its control socket, killed when it does not (still starting: it has no
/// client yet) or does not exit within the bound. The pids are taken before
/// the quit: the daemon removes its pid file as it exits.
pub fn stop_all(folders: &DaemonFolders, quit: &dyn Fn()) -> Result<(), MpsError> {
    let mut pids: Vec<u32> = running_pid(folders).into_iter().collect();
    pids.extend(marked_pids(folders));
    pids.sort_unstable();
    pids.dedup();
    if folders.pipe_dir().join(CONTROL_SOCKET).exists() {
        quit();
    } else {
        for pid in &pids {
            tracing::warn!(pid, daemon = %folders.root().display(), "stopping an MPS control daemon that never became ready");
            kill_pid(*pid);
        }
    }
    for pid in pids {
        AdoptedDaemon {
            pid,
            pipe_dir: folders.pipe_dir(),
        }
        .wait_or_kill()?;
    }
    Ok(())
}

/// The pid in the daemon's pid file, when that process still exists.
fn running_pid(folders: &DaemonFolders) -> Option<u32> {
    let text = std::fs::read_to_string(folders.pipe_dir().join(PID_FILE)).ok()?;
    let pid: u32 = text.trim().parse().ok()?;
    pid_alive(pid).then_some(pid)
}

/// Live processes whose environment carries the marker of `folders`.
fn marked_pids(folders: &DaemonFolders) -> Vec<u32> {
    pids_with_env(&format!("{DAEMON_MARKER}={}", folders.root().display()))
}

/// Live processes whose environment holds `entry` (`NAME=value`) exactly.
pub fn pids_with_env(entry: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                environ
                    .split(|b| *b == 0)
                    .any(|var| var == entry.as_bytes())
            })
        })
        .filter(|pid| pid_alive(*pid))
        .collect()
}

pub use crate::supervise::process::{kill_pid, pid_alive};

fn dir_or_root(dir: &Path) -> &Path {
    if dir.is_dir() { dir } else { Path::new("/") }
}
