//! The shim's listening unix sockets (two per driver served): a stale socket file is removed
//! before binding (a crash leaves one), and the file is removed again when
//! the [`SocketFile`] guard drops, so a clean exit leaves nothing behind.
//! Only socket files are ever removed: anything else at the path is an error.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

/// A socket that could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    /// The parent folder could not be created.
    #[error("cannot create folder {path} for a socket: {error}")]
    Folder {
        /// The folder.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// Something that is not a socket sits where the socket goes.
    #[error("{path} exists and is not a socket; move it away")]
    NotASocket {
        /// The path.
        path: PathBuf,
    },
    /// Removing a stale socket or binding failed.
    #[error("cannot listen on {path}: {error}")]
    Bind {
        /// The path.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
}

/// Removes the socket file when dropped.
#[derive(Debug)]
pub struct SocketFile(PathBuf);

impl SocketFile {
    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        let _ = remove_stale(&self.0);
    }
}

/// Binds a listener at `path` (creating its folder, replacing a stale socket).
/// Must run inside a tokio runtime.
pub fn bind(path: &Path) -> Result<(UnixListener, SocketFile), SocketError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|error| SocketError::Folder {
            path: parent.to_path_buf(),
            error,
        })?;
    }
    remove_stale(path)?;
    let listener = UnixListener::bind(path).map_err(|error| SocketError::Bind {
        path: path.to_path_buf(),
        error,
    })?;
    Ok((listener, SocketFile(path.to_path_buf())))
}

fn remove_stale(path: &Path) -> Result<(), SocketError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(|error| SocketError::Bind {
                path: path.to_path_buf(),
                error,
            })
        }
        Ok(_) => Err(SocketError::NotASocket {
            path: path.to_path_buf(),
        }),
        Err(_) => Ok(()),
    }
}
