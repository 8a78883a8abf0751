//! Control daemons a previous gpusliced started as its children, found
//! after a restart: first by the process gpusliced kept in the daemon's
//! folder when it started it (`daemon.pid`: pid and start time, so neither a
//! reused pid nor anything a process sets for itself is taken for it), the
//! way the IMEX child runner finds its daemons. A daemon an older gpusliced
//! started has no such file: it is found by the marker in its environment
//! ([`crate::claims::mps_daemon::supervisor::DAEMON_MARKER`], set to its
//! folder; its servers inherit it), counted only for a process in
//! gpusliced's own pid namespace (a container's process may set any
//! variable, but lives in a namespace of its own). The daemon is the marked
//! process whose parent is not marked. NVIDIA's pid file only points at
//! it: the daemon writes the file without truncating it (a restart after a
//! kill -9 can leave `1522699` for pid 15226) and without a newline, so a
//! pid read from it counts only when that process is the marked daemon of
//! the folder. Such a daemon is not our child: liveness is a signal-0 probe,
//! and nothing restarts it.

use std::path::{Path, PathBuf};

use super::{EXIT_BOUND, KEPT_PROCESS, PID_FILE};
use crate::claims::mps_daemon::MpsError;
use crate::claims::mps_daemon::control::{CONTROL_SOCKET, wait_on_dir};
use crate::claims::mps_daemon::folders::DaemonFolders;
use crate::claims::mps_daemon::supervisor::{DAEMON_MARKER, DaemonState, DaemonStatus, Supervised};
use crate::supervise::process::{ProcessId, in_own_pid_namespace};

/// A daemon a previous gpusliced started.
#[derive(Debug)]
pub struct AdoptedDaemon {
    pid: u32,
    pipe_dir: PathBuf,
}

impl AdoptedDaemon {
    /// The daemon of `folders`, when one runs: the pid file's when that is
    /// the daemon, else the lowest marked daemon.
    pub fn find(folders: &DaemonFolders) -> Option<Self> {
        let pid = kept_pid(folders)
            .or_else(|| running_pid(folders))
            .or_else(|| marked_daemons(folders).into_iter().min())?;
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
    let mut pids: Vec<u32> = kept_pid(folders).into_iter().collect();
    pids.extend(running_pid(folders));
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

/// The daemon gpusliced kept in the folder when it started it, while that
/// very process runs.
fn kept_pid(folders: &DaemonFolders) -> Option<u32> {
    ProcessId::kept(folders.root(), KEPT_PROCESS).map(|p| p.pid)
}

/// The pid in the daemon's pid file (its leading digits), when that
/// process is the daemon of `folders`.
fn running_pid(folders: &DaemonFolders) -> Option<u32> {
    let text = read_small(&folders.pipe_dir().join(PID_FILE))?;
    let digits: String = text
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let pid: u32 = digits.parse().ok()?;
    let marked = marked_pids(folders);
    is_daemon(pid, &marked).then_some(pid)
}

/// The daemon processes of `folders`: marked, with a parent that is not
/// (a server the daemon started has the daemon for its parent).
fn marked_daemons(folders: &DaemonFolders) -> Vec<u32> {
    let marked = marked_pids(folders);
    marked
        .iter()
        .copied()
        .filter(|pid| is_daemon(*pid, &marked))
        .collect()
}

fn is_daemon(pid: u32, marked: &[u32]) -> bool {
    marked.contains(&pid) && parent_of(pid).is_none_or(|parent| !marked.contains(&parent))
}

/// The parent pid, from `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A pid file's text: at most a few dozen bytes are read.
fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .ok()?
        .take(64)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// Live processes of gpusliced's own pid namespace whose environment
/// carries the marker of `folders`.
fn marked_pids(folders: &DaemonFolders) -> Vec<u32> {
    pids_with_env(&format!("{DAEMON_MARKER}={}", folders.root().display()))
        .into_iter()
        .filter(|pid| in_own_pid_namespace(*pid))
        .collect()
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
