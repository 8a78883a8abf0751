//! The one durable file writer: temp file in the same directory, write, fsync,
//! rename over the target, fsync the directory. Readers (container runtimes
//! watching /var/run/cdi, the daemon at start-up) see the old file or the new
//! one, never a torn one, and a file that `write_atomic` returned for survives
//! a power cut.
//!
//! Temp files are named `.<name>.tmp-<pid>-<n>`: hidden, so neither CDI
//! runtimes (they read `*.json`/`*.yaml`) nor the daemon's loaders pick them up;
//! [`is_temp_name`] lets start-up clean up the ones a crash left behind.
//! Symlinks are never followed at the target: rename replaces the link itself.
//! [`read_regular`] is the matching reader: it reads only a regular file of
//! bounded size at that name, so a link, FIFO or device planted where a spec
//! or record belongs can neither redirect, block nor exhaust the daemon.
//!
//! Invariants: the file gets exactly `mode` (set with fchmod, so the umask
//! does not narrow it); a temp name left by an earlier process with the same
//! pid (a crash, pid 1 in a container) is skipped, not an error; a failed
//! write leaves no temp file behind.
//!
//! [`write_atomic_observed`] and [`remove_durable_observed`] call an observer
//! between the steps ([`AtomicStep`]): the daemon's crash points stop the process
//! there, to show that every state a crash can leave is recovered.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A durable write or removal that failed, with the path it was about.
#[derive(Debug, thiserror::Error)]
pub enum AtomicError {
    /// The file name contains a path separator, is empty, or is "." / "..".
    #[error("refusing file name {name:?}: it must be a plain file name")]
    BadName {
        /// The rejected name.
        name: String,
    },
    /// An I/O step failed.
    #[error("{step} {path}: {error}")]
    Io {
        /// What was being done ("create temp file", "fsync", "rename", ...).
        step: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The name holds something other than a regular file.
    #[error("{path} is {what}, not a regular file; remove it")]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is ("a symbolic link", "a FIFO", ...).
        what: &'static str,
    },
    /// The file is larger than the reader accepts.
    #[error("{path} is {size} bytes, more than the {max} accepted")]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The bound.
        max: u64,
    },
}

/// A point between the steps of a durable write or removal, where a crash
/// leaves a state of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicStep {
    /// The temp file is written and fsynced; the target is unchanged.
    TempSynced,
    /// The temp file is renamed over the target; the directory is not
    /// fsynced yet.
    Renamed,
    /// The target is unlinked; the directory is not fsynced yet.
    Unlinked,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn io_err(step: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> AtomicError + use<> {
    let path = path.to_path_buf();
    move |error| AtomicError::Io { step, path, error }
}

fn check_name(name: &str) -> Result<(), AtomicError> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(AtomicError::BadName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// True for the names of temp files that [`write_atomic`] creates.
pub fn is_temp_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(".tmp-")
}

/// How many temp names [`write_atomic`] tries before giving up.
const TEMP_ATTEMPTS: u32 = 16;

/// Writes `contents` to `dir/name` atomically and durably, with file mode `mode`.
pub fn write_atomic(dir: &Path, name: &str, contents: &[u8], mode: u32) -> Result<(), AtomicError> {
    write_atomic_observed(dir, name, contents, mode, &|_| {})
}

/// [`write_atomic`], calling `observe` after the temp file is synced and
/// after the rename.
pub fn write_atomic_observed(
    dir: &Path,
    name: &str,
    contents: &[u8],
    mode: u32,
    observe: &dyn Fn(AtomicStep),
) -> Result<(), AtomicError> {
    check_name(name)?;
    let target = dir.join(name);
    let (tmp, file) = create_temp(dir, name, mode)?;
    let result = fill(file, &tmp, contents, mode).and_then(|()| {
        observe(AtomicStep::TempSynced);
        std::fs::rename(&tmp, &target).map_err(io_err("rename into place", &target))
    });
    if let Err(err) = result {
        // Best effort: the temp file is hidden and start-up removes leftovers.
        let _ = std::fs::remove_file(&tmp);
        return Err(err);
    }
    observe(AtomicStep::Renamed);
    sync_dir(dir)
}

/// Creates a fresh temp file next to the target, skipping names that exist.
fn create_temp(dir: &Path, name: &str, mode: u32) -> Result<(PathBuf, File), AtomicError> {
    let mut attempt = 0;
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        let opened = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp);
        match opened {
            Ok(file) => return Ok((tmp, file)),
            Err(err) if err.kind() == ErrorKind::AlreadyExists && attempt + 1 < TEMP_ATTEMPTS => {
                attempt += 1;
            }
            Err(err) => return Err(io_err("create temp file", &tmp)(err)),
        }
    }
}

fn fill(mut file: File, tmp: &Path, contents: &[u8], mode: u32) -> Result<(), AtomicError> {
    file.set_permissions(Permissions::from_mode(mode))
        .map_err(io_err("chmod", tmp))?;
    file.write_all(contents).map_err(io_err("write", tmp))?;
    file.sync_all().map_err(io_err("fsync", tmp))
}

/// Removes `dir/name` durably. Returns false when it did not exist.
pub fn remove_durable(dir: &Path, name: &str) -> Result<bool, AtomicError> {
    remove_durable_observed(dir, name, &|_| {})
}

/// [`remove_durable`], calling `observe` after the unlink (not when there
/// was nothing to remove).
pub fn remove_durable_observed(
    dir: &Path,
    name: &str,
    observe: &dyn Fn(AtomicStep),
) -> Result<bool, AtomicError> {
    check_name(name)?;
    let target = dir.join(name);
    match std::fs::remove_file(&target) {
        Ok(()) => {
            observe(AtomicStep::Unlinked);
            sync_dir(dir)?;
            Ok(true)
        }
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(false),
        Err(err) => Err(io_err("remove", &target)(err)),
    }
}

/// Reads `dir/name` if it is a regular file of at most `max_bytes`. Never
/// follows a symlink at that name, never blocks on a FIFO, never reads a
/// device. `Ok(None)` when nothing is there.
pub fn read_regular(
    dir: &Path,
    name: &str,
    max_bytes: u64,
) -> Result<Option<Vec<u8>>, AtomicError> {
    check_name(name)?;
    let path = dir.join(name);
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path);
    let file = match opened {
        Ok(file) => file,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) if err.raw_os_error() == Some(libc::ELOOP) => {
            return Err(AtomicError::NotRegular {
                path,
                what: "a symbolic link",
            });
        }
        Err(err) => return Err(io_err("open", &path)(err)),
    };
    let meta = file.metadata().map_err(io_err("stat", &path))?;
    if !meta.is_file() {
        return Err(AtomicError::NotRegular {
            path,
            what: file_type_words(&meta.file_type()),
        });
    }
    if meta.len() > max_bytes {
        return Err(AtomicError::TooLarge {
            path,
            size: meta.len(),
            max: max_bytes,
        });
    }
    let mut bytes = Vec::new();
    // The bound holds even if the file grows after the stat.
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_err("read", &path))?;
    let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if size > max_bytes {
        return Err(AtomicError::TooLarge {
            path,
            size,
            max: max_bytes,
        });
    }
    Ok(Some(bytes))
}

fn file_type_words(kind: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device node"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

/// fsyncs a directory so renames and removals in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), AtomicError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync directory", dir))
}

#[cfg(test)]
mod tests;
