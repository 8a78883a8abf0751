//! Dialing gpusliced, and saying why it failed in a way that leads to the
//! fix: the socket tried, whether gpusliced seems to run, and how to point
//! at another socket (`--socket PATH` or `GPUSLICE_SOCKET=PATH`). The OS
//! error is found under tonic's transport error and said once.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use hyper_util::rt::TokioIo;
use nix::errno::Errno;
use tonic::transport::{Channel, Endpoint};

/// How to point gpuslicectl at another socket.
const ANOTHER: &str = "give gpusliced's socket with --socket PATH or GPUSLICE_SOCKET=PATH";

/// Why gpusliced could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Nothing at the path.
    #[error(
        "cannot connect to gpusliced at {}: no such socket; gpusliced is not running \
         (systemctl status gpusliced), or it serves on another path: {ANOTHER}",
        path.display()
    )]
    NoSocket {
        /// The socket tried.
        path: PathBuf,
    },
    /// A socket file nobody listens on.
    #[error(
        "cannot connect to gpusliced at {}: connection refused; the socket is stale, \
         gpusliced is not running (systemctl start gpusliced), or it serves on another path: \
         {ANOTHER}",
        path.display()
    )]
    Refused {
        /// The socket tried.
        path: PathBuf,
    },
    /// The socket, or a folder above it, is closed to this user.
    #[error(
        "cannot connect to gpusliced at {}: permission denied; run as root or as a member \
         of group {group} (the socket's group: sudo usermod -aG {group} $USER, then log in \
         again), or {ANOTHER}",
        path.display()
    )]
    Denied {
        /// The socket tried.
        path: PathBuf,
        /// The socket's group, or `gpuslice` (the packaged one) when unreadable.
        group: String,
    },
    /// Something else failed: the OS error, or the transport's words.
    #[error("cannot connect to gpusliced at {}: {reason}; {ANOTHER}", path.display())]
    Other {
        /// The socket tried.
        path: PathBuf,
        /// The innermost error's text.
        reason: String,
    },
}

impl ConnectError {
    /// The error for a failed dial of `path`, from the OS error under it.
    pub fn new(path: &Path, err: &(dyn std::error::Error + 'static)) -> Self {
        let path = path.to_path_buf();
        let os = innermost_io(err);
        match os
            .and_then(std::io::Error::raw_os_error)
            .map(Errno::from_raw)
        {
            Some(Errno::ENOENT | Errno::ENOTDIR) => Self::NoSocket { path },
            Some(Errno::ECONNREFUSED) => Self::Refused { path },
            Some(Errno::EACCES | Errno::EPERM) => {
                let group = socket_group(&path).unwrap_or_else(|| "gpuslice".to_owned());
                Self::Denied { path, group }
            }
            _ => Self::Other {
                reason: os.map_or_else(|| innermost(err).to_string(), ToString::to_string),
                path,
            },
        }
    }
}

/// A client of gpusliced at `socket`.
pub async fn connect(socket: &Path) -> Result<GpuSliceClient<Channel>, ConnectError> {
    let path = socket.to_path_buf();
    // The URI is a placeholder: the connector dials the unix socket.
    let channel = Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_| {
            let path = path.clone();
            async move {
                tokio::net::UnixStream::connect(path)
                    .await
                    .map(TokioIo::new)
            }
        }))
        .await
        .map_err(|err| ConnectError::new(socket, &err))?;
    Ok(GpuSliceClient::new(channel))
}

/// The deepest `std::io::Error` in the chain of `err`.
fn innermost_io<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a std::io::Error> {
    std::iter::successors(Some(err), |e| e.source())
        .filter_map(|e| e.downcast_ref::<std::io::Error>())
        .last()
}

/// The last error of the chain of `err`.
fn innermost<'a>(err: &'a (dyn std::error::Error + 'static)) -> &'a dyn std::error::Error {
    std::iter::successors(Some(err), |e| e.source())
        .last()
        .unwrap_or(err)
}

/// The name of the group owning the socket, when it can be read.
fn socket_group(path: &Path) -> Option<String> {
    let gid = std::fs::metadata(path).ok()?.gid();
    let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid)).ok()??;
    Some(group.name)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::ConnectError;

    /// An io::Error wrapped twice, as tonic and hyper hand it over.
    #[derive(Debug, thiserror::Error)]
    #[error("transport error")]
    struct Wrapper(#[source] Middle);

    #[derive(Debug, thiserror::Error)]
    #[error("connect failed")]
    struct Middle(#[source] std::io::Error);

    fn from(errno: i32) -> ConnectError {
        let wrapped = Wrapper(Middle(std::io::Error::from_raw_os_error(errno)));
        ConnectError::new(Path::new("/run/x.sock"), &wrapped)
    }

    #[test]
    fn each_os_error_says_what_it_means_and_the_way_out_once() {
        let cases = [
            (libc::ENOENT, "no such socket; gpusliced is not running"),
            (libc::ECONNREFUSED, "the socket is stale"),
            (libc::EACCES, "run as root or as a member of group gpuslice"),
            (libc::EMFILE, "Too many open files"),
        ];
        for (errno, said) in cases {
            let text = from(errno).to_string();
            assert!(
                text.starts_with("cannot connect to gpusliced at /run/x.sock: "),
                "{text}"
            );
            assert!(text.contains(said), "{errno}: {text}");
            assert_eq!(
                text.matches("--socket PATH or GPUSLICE_SOCKET=PATH")
                    .count(),
                1
            );
            assert_eq!(
                text.matches("os error").count(),
                usize::from(errno == libc::EMFILE)
            );
        }
    }

    #[test]
    fn a_chain_without_an_os_error_names_its_last_link() {
        let err = Wrapper(Middle(std::io::Error::other("h2 handshake failed")));
        let text = ConnectError::new(Path::new("/s"), &err).to_string();
        assert!(text.contains("at /s: h2 handshake failed;"), "{text}");
    }
}
