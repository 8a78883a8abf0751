//! Binding the API socket: create its folder, remove a stale socket left by a
//! crash (but never one a live daemon still answers on, and never a file that
//! is not a socket), bind, then set mode 0660 and the group.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::unistd::{Gid, Group, chown};
use tokio::net::UnixListener;

/// Why the socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// Another process answers on the socket.
    #[error(
        "another gpusliced is already serving on {path}; stop it first (systemctl stop gpusliced)"
    )]
    InUse {
        /// The socket.
        path: PathBuf,
    },
    /// Something that is not a socket sits at the path.
    #[error("{path} exists and is not a socket; remove it or choose another `socket` path")]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// The configured group does not exist.
    #[error(
        "socket_group {group:?} does not exist; create it (groupadd --system {group}) or unset socket_group"
    )]
    NoSuchGroup {
        /// The group name.
        group: String,
    },
    /// An OS call failed.
    #[error("{step} {path}: {error}")]
    Io {
        /// What was being done.
        step: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

fn io(step: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> SocketError + use<> {
    let path = path.to_path_buf();
    move |error| SocketError::Io { step, path, error }
}

/// Looks up the gid of `group`.
pub fn group_gid(group: &str) -> Result<u32, SocketError> {
    match Group::from_name(group) {
        Ok(Some(g)) => Ok(g.gid.as_raw()),
        _ => Err(SocketError::NoSuchGroup {
            group: group.to_owned(),
        }),
    }
}

/// Binds the socket at `path`, mode 0660, owned by `gid` when given.
pub fn bind(path: &Path, gid: Option<u32>) -> Result<UnixListener, SocketError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io("create folder", parent))?;
    }
    remove_stale(path)?;
    let listener = UnixListener::bind(path).map_err(io("bind", path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660))
        .map_err(io("chmod", path))?;
    if let Some(gid) = gid {
        chown(path, None, Some(Gid::from_raw(gid)))
            .map_err(|e| io("chown", path)(std::io::Error::from(e)))?;
    }
    Ok(listener)
}

fn remove_stale(path: &Path) -> Result<(), SocketError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io("stat", path)(e)),
    };
    if !meta.file_type().is_socket() {
        return Err(SocketError::NotASocket {
            path: path.to_path_buf(),
        });
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(SocketError::InUse {
            path: path.to_path_buf(),
        });
    }
    std::fs::remove_file(path).map_err(io("remove stale socket", path))
}

/// Removes the socket at shutdown (best effort).
pub fn remove(path: &Path) {
    let is_socket = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
    if is_socket {
        let _ = std::fs::remove_file(path);
    }
}
