//! The hardware boundary of limits: opening, checking and signalling one
//! process ([`ProcessControl`]), on Linux through a pidfd ([`Pidfds`]).
//!
//! A pidfd refers to one process: a signal sent through it after that
//! process ended fails with `ESRCH` instead of reaching a later process that
//! reuses the pid. The start time is read again once the pidfd is open: if
//! the pid was reused before the open, it differs from the sampled one; if
//! not, the pidfd pins the process and `/proc/<pid>` is it. Sending a signal
//! to another user's process needs `CAP_KILL`.

use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use crate::activity::procfs::{ProcError, ProcFs};

/// The two signals limits send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display)]
pub enum EndSignal {
    /// Asks the process to end.
    #[strum(serialize = "SIGTERM")]
    Term,
    /// Ends it.
    #[strum(serialize = "SIGKILL")]
    Kill,
}

/// Why a process could not be opened, read or signalled.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// `ESRCH`, or gone from `/proc`: the process has exited.
    #[error("process {pid} has exited")]
    Gone {
        /// The process.
        pid: u32,
    },
    /// `EPERM`: gpusliced may not signal it (no `CAP_KILL`).
    #[error("process {pid}: not permitted")]
    NotPermitted {
        /// The process.
        pid: u32,
    },
    /// Its `/proc/<pid>/stat` could not be read.
    #[error("process {pid}: reading its start time")]
    Stat {
        /// The process.
        pid: u32,
        /// Why.
        #[source]
        source: ProcError,
    },
    /// Any other failure.
    #[error("process {pid}: {what}")]
    Os {
        /// The process.
        pid: u32,
        /// What was done: "pidfd_open", "SIGTERM", "reading its stat", …
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Opens, checks and signals processes; one implementation on pidfds, one
/// recording fake for tests.
pub trait ProcessControl: std::fmt::Debug {
    /// An open reference to one process.
    type Handle: std::fmt::Debug;

    /// Opens `pid`.
    fn open(&mut self, pid: u32) -> Result<Self::Handle, ControlError>;

    /// `pid`'s start time now (field 22 of `/proc/<pid>/stat`).
    fn start_time(&mut self, pid: u32) -> Result<u64, ControlError>;

    /// `pid`'s owner uid, for the message when it may not be signalled.
    fn owner(&mut self, pid: u32) -> Option<u32>;

    /// Sends `signal` to the process `handle` refers to.
    fn signal(&mut self, handle: &Self::Handle, signal: EndSignal) -> Result<(), ControlError>;

    /// Waits up to `timeout` for one of `handles` to exit (returns at once
    /// when one has); which have exited, in order.
    fn wait(&mut self, handles: &[&Self::Handle], timeout: Duration) -> Vec<bool>;
}

/// A pidfd and the pid it was opened for.
#[derive(Debug)]
pub struct Pidfd {
    pid: u32,
    fd: OwnedFd,
}

/// [`ProcessControl`] through `pidfd_open(2)` and `pidfd_send_signal(2)`,
/// reading `/proc` under a root (`/` on a node).
#[derive(Debug)]
pub struct Pidfds {
    proc_root: PathBuf,
    procfs: ProcFs,
}

impl Pidfds {
    /// Processes of `/proc` under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            procfs: ProcFs::new(root.clone()),
            proc_root: root.join("proc"),
        }
    }
}

fn os_error(pid: u32, what: &str, errno: Errno) -> ControlError {
    match errno {
        Errno::SRCH => ControlError::Gone { pid },
        Errno::PERM => ControlError::NotPermitted { pid },
        other => ControlError::Os {
            pid,
            what: what.to_owned(),
            source: std::io::Error::from_raw_os_error(other.raw_os_error()),
        },
    }
}

impl ProcessControl for Pidfds {
    type Handle = Pidfd;

    fn open(&mut self, pid: u32) -> Result<Pidfd, ControlError> {
        let raw = i32::try_from(pid).ok().and_then(Pid::from_raw);
        let Some(raw) = raw else {
            return Err(ControlError::Gone { pid });
        };
        let fd =
            pidfd_open(raw, PidfdFlags::empty()).map_err(|e| os_error(pid, "pidfd_open", e))?;
        Ok(Pidfd { pid, fd })
    }

    fn start_time(&mut self, pid: u32) -> Result<u64, ControlError> {
        self.procfs.start_time_of(pid).map_err(|err| match err {
            ProcError::NotFound { .. } => ControlError::Gone { pid },
            source => ControlError::Stat { pid, source },
        })
    }

    fn owner(&mut self, pid: u32) -> Option<u32> {
        std::fs::metadata(self.proc_root.join(pid.to_string()))
            .ok()
            .map(|m| m.uid())
    }

    fn signal(&mut self, handle: &Pidfd, signal: EndSignal) -> Result<(), ControlError> {
        let sig = match signal {
            EndSignal::Term => Signal::TERM,
            EndSignal::Kill => Signal::KILL,
        };
        pidfd_send_signal(&handle.fd, sig).map_err(|e| os_error(handle.pid, &signal.to_string(), e))
    }

    fn wait(&mut self, handles: &[&Pidfd], timeout: Duration) -> Vec<bool> {
        let mut fds: Vec<PollFd<'_>> = handles
            .iter()
            .map(|h| PollFd::new(&h.fd, PollFlags::IN))
            .collect();
        let timeout = Timespec::try_from(timeout).ok();
        // EINTR or an error: report nothing exited; the caller polls again.
        if poll(&mut fds, timeout.as_ref()).is_err() {
            return vec![false; handles.len()];
        }
        fds.iter().map(|fd| !fd.revents().is_empty()).collect()
    }
}

#[cfg(test)]
mod tests;
