//! What `/proc` says about a GPU process: its name (`comm`), the claim
//! markers in its environment (`environ`), its parent (field 4 of `stat`)
//! and its start time (field 22), which tells a process from a later one
//! that reuses its pid.
//!
//! Reads only. A cache keyed by pid keeps the environment and name while
//! the start time stays the same (a process's initial environment never
//! changes), so a sample reads one small `stat` per process; pids not seen
//! in a sample are evicted ([`ProcFs::retain`]). Errors and empty
//! environments (a zombie, or a process caught mid-exec, whose new image
//! has no environment yet) are not cached: they are read again at the next
//! sample.
//!
//! Reading another user's `environ` needs `PTRACE_MODE_READ` over it, and
//! under the unit's `ProtectProc=invisible` such a process is not even
//! listed: gpusliced needs `CAP_SYS_PTRACE` (systemd/gpusliced.service).

use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::path::PathBuf;

use super::marker::{EnvironMarks, parse_environ};

/// What `/proc/<pid>` says about one process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcInfo {
    /// `comm`, without its newline.
    pub name: String,
    /// What its environment names.
    pub marks: EnvironMarks,
    /// Its start time (field 22 of `stat`, clock ticks after boot): with the
    /// pid, it names this process and no later one that reuses the pid.
    pub start_time: u64,
    /// Its parent's pid (field 4 of `stat`, read at every sample: a process
    /// whose parent ends is given another).
    pub parent: u32,
    /// It is one of the GPU daemons gpusliced keeps, or a child of one (a
    /// server such a daemon starts): known by pid from gpusliced's own
    /// books, never from anything the process says of itself. Set by the
    /// sampler, not read from `/proc`.
    pub own_daemon: bool,
}

/// A process whose `/proc` entries could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// `EACCES`: gpusliced lacks the privilege to read it.
    #[error("process {pid}: reading its {file}: permission denied")]
    PermissionDenied {
        /// The process.
        pid: u32,
        /// "environ", "comm" or "stat".
        file: &'static str,
    },
    /// `ENOENT`: exited, or hidden from gpusliced by `ProtectProc=invisible`.
    #[error("process {pid}: not in /proc")]
    NotFound {
        /// The process.
        pid: u32,
    },
    /// Any other read error.
    #[error("process {pid}: reading its {file}")]
    Read {
        /// The process.
        pid: u32,
        /// "environ", "comm" or "stat".
        file: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A `stat` line without a start time.
    #[error("process {pid}: its stat has no start time")]
    Stat {
        /// The process.
        pid: u32,
    },
}

impl ProcError {
    /// Why a process that could not be read maps to no claim, with the fix.
    pub fn unclaimed_reason(&self) -> String {
        match self {
            Self::PermissionDenied { .. } => {
                "environment unreadable: permission denied (gpusliced needs CAP_SYS_PTRACE and \
                 CAP_DAC_READ_SEARCH)"
                    .to_owned()
            }
            Self::NotFound { .. } => "environment unreadable: not in /proc (exited, or hidden \
                 from gpusliced, which needs CAP_SYS_PTRACE)"
                .to_owned(),
            Self::Read { source, .. } => format!("environment unreadable: {source}"),
            Self::Stat { .. } => "environment unreadable: malformed /proc stat".to_owned(),
        }
    }
}

#[derive(Debug)]
struct Cached {
    start_time: u64,
    info: ProcInfo,
}

/// `/proc` under a root, with the per-pid cache.
#[derive(Debug)]
pub struct ProcFs {
    proc_dir: PathBuf,
    cache: HashMap<u32, Cached>,
}

impl Default for ProcFs {
    fn default() -> Self {
        Self::new("/")
    }
}

impl ProcFs {
    /// `/proc` under `root` (`/` on a node; a temp folder in tests).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            proc_dir: root.into().join("proc"),
            cache: HashMap::new(),
        }
    }

    /// What `pid` is: from the cache when its start time is unchanged,
    /// otherwise read and cached.
    pub fn inspect(&mut self, pid: u32) -> Result<ProcInfo, ProcError> {
        let stat = self.read(pid, "stat")?;
        let stat = String::from_utf8_lossy(&stat);
        let start_time = start_time(&stat).ok_or(ProcError::Stat { pid })?;
        let parent = parent_pid(&stat).ok_or(ProcError::Stat { pid })?;
        if let Some(hit) = self.cache.get(&pid).filter(|c| c.start_time == start_time) {
            return Ok(ProcInfo {
                parent,
                ..hit.info.clone()
            });
        }
        let environ = self.read(pid, "environ")?;
        let comm = self.read(pid, "comm")?;
        let info = ProcInfo {
            name: String::from_utf8_lossy(&comm)
                .trim_end_matches('\n')
                .to_owned(),
            marks: parse_environ(&environ),
            start_time,
            parent,
            own_daemon: false,
        };
        // An empty environment is a zombie's, or one read while an exec
        // is still setting up the new image: read it again next time.
        if !environ.is_empty() {
            self.cache.insert(
                pid,
                Cached {
                    start_time,
                    info: info.clone(),
                },
            );
        }
        Ok(info)
    }

    /// Forgets every pid not in `seen` (the processes of the last sample).
    pub fn retain(&mut self, seen: &HashSet<u32>) {
        self.cache.retain(|pid, _| seen.contains(pid));
    }

    /// How many processes are cached.
    pub fn cached(&self) -> usize {
        self.cache.len()
    }

    /// The start time of `pid` as `stat` says now, uncached (the enforcer's
    /// check that a pid still names the sampled process).
    pub fn start_time_of(&self, pid: u32) -> Result<u64, ProcError> {
        let stat = self.read(pid, "stat")?;
        start_time(&String::from_utf8_lossy(&stat)).ok_or(ProcError::Stat { pid })
    }

    fn read(&self, pid: u32, file: &'static str) -> Result<Vec<u8>, ProcError> {
        let path = self.proc_dir.join(pid.to_string()).join(file);
        std::fs::read(path).map_err(|source| read_error(pid, file, source))
    }
}

/// The typed error of a failed read of `/proc/<pid>/<file>`.
fn read_error(pid: u32, file: &'static str, source: std::io::Error) -> ProcError {
    match source.kind() {
        ErrorKind::PermissionDenied => ProcError::PermissionDenied { pid, file },
        ErrorKind::NotFound => ProcError::NotFound { pid },
        _ => ProcError::Read { pid, file, source },
    }
}

/// Field 22 of a `/proc/<pid>/stat` line (clock ticks after boot). The
/// name (field 2) may hold spaces and parentheses: fields are counted after
/// its last `)`, where field 3 comes first.
pub fn start_time(stat: &str) -> Option<u64> {
    stat_field(stat, 22)
}

/// Field 4 of a `/proc/<pid>/stat` line: the parent's pid.
pub fn parent_pid(stat: &str) -> Option<u32> {
    stat_field(stat, 4)
}

/// Field `n` (3 or later) of a `/proc/<pid>/stat` line, counted after the
/// name's last `)`.
fn stat_field<T: std::str::FromStr>(stat: &str, n: usize) -> Option<T> {
    let after_name = stat.rsplit_once(')')?.1;
    after_name
        .split_whitespace()
        .nth(n.checked_sub(3)?)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests;
