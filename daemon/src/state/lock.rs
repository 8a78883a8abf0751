//! One gpusliced per state dir: an exclusive `flock` on
//! `<state_dir>/gpusliced.lock`, taken before anything touches a GPU or a
//! claim record and held for the life of the process.
//!
//! The lock is the truth: the kernel drops it when the process dies (exit,
//! `kill -9`, a crash), so a restart never finds a stale lock to clean up.
//! The file is opened `O_CLOEXEC`, so the daemons and tools gpusliced
//! starts (MPS control daemons, IMEX daemons, nvidia-smi) never inherit it and
//! never keep a dead daemon's lock.
//! The PID written into the file is informational only, for the message a
//! second instance prints; it is never used to decide anything (a daemon
//! killed with `-9` leaves its PID behind, and the next one overwrites it).
//!
//! This module must not remove the file: a process that unlinked and made
//! it again would lock a different inode than a running holder. It owns no
//! other file of the state dir.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// The lock file's name inside the state dir.
pub const LOCK_FILE: &str = "gpusliced.lock";

/// Why the state dir could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error(
        "state dir {} is in use by another gpusliced ({}); stop it first \
         (systemctl stop gpusliced) or give this one its own state_dir",
        dir.display(), holder_text(*pid)
    )]
    Held {
        /// The state dir.
        dir: PathBuf,
        /// The PID the holder wrote into the lock file, if it could be read.
        pid: Option<u32>,
    },
    /// The state dir could not be created.
    #[error("state dir {}: cannot create it: {error}", path.display())]
    Folder {
        /// The state dir.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The lock file could not be opened or created.
    #[error("state dir lock {}: cannot open it: {error}", path.display())]
    Open {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// `flock` failed for another reason than a holder (e.g. a file system
    /// without locks).
    #[error("state dir lock {}: flock failed: {error}", path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        error: Errno,
    },
}

/// "pid 1234", or why there is no PID to name.
fn holder_text(pid: Option<u32>) -> String {
    pid.map_or_else(
        || "pid unknown: its lock file names none yet".to_owned(),
        |pid| format!("pid {pid}"),
    )
}

/// The PID in a lock file's text: one decimal number, blanks around it
/// allowed; anything else is no PID.
pub fn parse_pid(text: &str) -> Option<u32> {
    text.trim().parse::<u32>().ok().filter(|&pid| pid > 0)
}

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub struct StateLock {
    _file: Flock<File>,
    path: PathBuf,
}

impl StateLock {
    /// Creates `state_dir` if needed (mode 0700), opens its lock file and
    /// locks it without waiting; then writes this process's PID into it.
    pub fn acquire(state_dir: &Path) -> Result<Self, LockError> {
        Self::acquire_as(state_dir, std::process::id())
    }

    /// [`StateLock::acquire`], writing `pid` as the holder.
    pub fn acquire_as(state_dir: &Path, pid: u32) -> Result<Self, LockError> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(state_dir)
            .map_err(|error| LockError::Folder {
                path: state_dir.to_path_buf(),
                error,
            })?;
        let path = state_dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|error| LockError::Open {
                path: path.clone(),
                error,
            })?;
        let file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(locked) => locked,
            Err((mut file, Errno::EWOULDBLOCK)) => {
                return Err(LockError::Held {
                    dir: state_dir.to_path_buf(),
                    pid: read_pid(&mut file),
                });
            }
            Err((_, error)) => return Err(LockError::Lock { path, error }),
        };
        if let Err(err) = write_pid(&file, pid) {
            tracing::warn!(path = %path.display(), error = %err, "state dir lock held; PID not written into it");
        }
        Ok(Self { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The PID a holder wrote, if the file can be read and names one.
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.take(64).read_to_string(&mut text).ok()?;
    parse_pid(&text)
}

/// Replaces the file's text with `pid` and a newline.
fn write_pid(file: &File, pid: u32) -> std::io::Result<()> {
    file.set_len(0)?;
    file.write_all_at(format!("{pid}\n").as_bytes(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_dir_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let first = StateLock::acquire_as(&state, 4242).unwrap();
        assert_eq!(first.path(), state.join(LOCK_FILE));
        let err = StateLock::acquire_as(&state, 4343).unwrap_err();
        assert!(
            matches!(&err, LockError::Held { dir, pid: Some(4242) } if *dir == state),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "state dir {} is in use by another gpusliced (pid 4242); stop it first \
                 (systemctl stop gpusliced) or give this one its own state_dir",
                state.display()
            )
        );
        drop(first);
        let again = StateLock::acquire_as(&state, 4343).unwrap();
        let text = std::fs::read_to_string(again.path()).unwrap();
        assert_eq!(text, "4343\n", "the old PID is replaced, not appended to");
    }

    #[test]
    fn a_stale_pid_left_by_a_dead_holder_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.path().join(LOCK_FILE))
            .and_then(|f| f.write_all_at(b"99999999\n", 0))
            .unwrap();
        let lock = StateLock::acquire_as(dir.path(), 7).unwrap();
        assert_eq!(std::fs::read_to_string(lock.path()).unwrap(), "7\n");
    }

    #[test]
    fn the_lock_file_is_close_on_exec() {
        let dir = tempfile::tempdir().unwrap();
        let lock = StateLock::acquire(dir.path()).unwrap();
        let flags = nix::fcntl::fcntl(&*lock._file, nix::fcntl::FcntlArg::F_GETFD).unwrap();
        assert_ne!(flags & libc::FD_CLOEXEC, 0);
    }

    #[test]
    fn a_symlinked_lock_file_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::os::unix::fs::symlink(&target, dir.path().join(LOCK_FILE)).unwrap();
        let err = StateLock::acquire(dir.path()).unwrap_err();
        assert!(matches!(err, LockError::Open { .. }), "{err:?}");
        assert!(!target.exists());
    }

    #[test]
    fn pids_are_parsed_strictly() {
        assert_eq!(parse_pid("1234\n"), Some(1234));
        assert_eq!(parse_pid("  77 "), Some(77));
        for bad in ["", "\n", "0", "-3", "12ab", "1 2", "4294967296"] {
            assert_eq!(parse_pid(bad), None, "{bad:?}");
        }
        assert_eq!(
            holder_text(None),
            "pid unknown: its lock file names none yet"
        );
    }
}
