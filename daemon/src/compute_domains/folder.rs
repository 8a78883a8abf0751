//! A domain's folder, `<run_dir>/imex/<domain uid>/` (mode 0700: root's
//! alone), holding what its IMEX daemon is given and leaves:
//!
//! - `imexd.cfg`, the daemon's config (NVIDIA's keys: gpuslice-imex's
//!   `daemon_config`), and `nodes_config.cfg`, the members' names
//!   (`compute-domain-daemon-0000` to `-0017`): both written once, before
//!   the daemon first starts, and never changed while it runs;
//! - `hosts`, the private name mapping the daemon reads as its /etc/hosts
//!   (a bind mount: its unit's `BindReadOnlyPaths=`, or the child's own
//!   mount namespace). A bind mount holds the inode it was made with, so the
//!   file is rewritten **in place**, never renamed over; it is on /run and
//!   derived from the ComputeDomain's status, which the plugin tells again
//!   after a restart, so it needs no fsync;
//! - `cmd.sock`, the daemon's command service (`nvidia-imex-ctl` asks it
//!   over this unix socket: gpusliced's own unit allows no network);
//! - `imexd.log` (mode 0600), the daemon's output when it runs as a child
//!   (under systemd it goes to the journal).

use std::io::{Seek, Write};
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use gpuslice_cdi::atomic::write_atomic;
use gpuslice_imex::imex::{DaemonPlaces, daemon_config};
use gpuslice_imex::names::{Mapping, hosts_file, mapping_of_hosts, nodes_config};

use super::DomainError;

/// The folder's mode: root's alone.
const FOLDER_MODE: u32 = 0o700;
/// The mode of the files the daemon reads.
const READ_MODE: u32 = 0o644;
/// The mode of the daemon's log.
pub const LOG_MODE: u32 = 0o600;
/// The file whose time says when the daemon was last told its mapping.
const TOLD: &str = "told";

/// The folder of one domain's IMEX daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainFolder {
    domain: String,
    root: PathBuf,
}

impl DomainFolder {
    /// The folder of `domain` under `imex_dir` (`<run_dir>/imex`).
    pub fn new(imex_dir: &Path, domain: &str) -> Self {
        Self {
            domain: domain.to_owned(),
            root: imex_dir.join(domain),
        }
    }

    /// The domain's uid.
    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The daemon's config.
    pub fn config_path(&self) -> PathBuf {
        self.root.join("imexd.cfg")
    }

    /// The nodes config.
    pub fn nodes_path(&self) -> PathBuf {
        self.root.join("nodes_config.cfg")
    }

    /// The name mapping, the daemon's /etc/hosts.
    pub fn hosts_path(&self) -> PathBuf {
        self.root.join("hosts")
    }

    /// The command service's socket.
    pub fn socket_path(&self) -> PathBuf {
        self.root.join("cmd.sock")
    }

    /// The daemon's output, when it runs as a child.
    pub fn log_path(&self) -> PathBuf {
        self.root.join("imexd.log")
    }

    /// Makes the folder with the daemon's config and nodes config for an
    /// address of `bind`, and a mapping of `mapping` unless one is there
    /// (kept from a daemon that runs on); before the daemon starts.
    pub fn make(&self, bind: IpAddr, mapping: &Mapping) -> Result<(), DomainError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(FOLDER_MODE)
            .create(&self.root)
            .map_err(|e| DomainError::io("create", &self.root, e))?;
        std::fs::set_permissions(&self.root, std::fs::Permissions::from_mode(FOLDER_MODE))
            .map_err(|e| DomainError::io("set the mode of", &self.root, e))?;
        let bind = bind.to_string();
        let nodes = self.nodes_path().to_string_lossy().into_owned();
        let socket = self.socket_path().to_string_lossy().into_owned();
        let stats = self
            .root
            .join("imex-stats.log")
            .to_string_lossy()
            .into_owned();
        let config = daemon_config(&DaemonPlaces {
            bind_ip: &bind,
            nodes_config: &nodes,
            command_socket: &socket,
            stats_file: &stats,
        });
        for (name, text) in [("imexd.cfg", config), ("nodes_config.cfg", nodes_config())] {
            write_atomic(&self.root, name, text.as_bytes(), READ_MODE).map_err(|e| {
                DomainError::Io {
                    action: "write",
                    path: self.root.join(name),
                    error: std::io::Error::other(e.to_string()),
                }
            })?;
        }
        if !self.hosts_path().is_file() {
            self.write_mapping(mapping)?;
        }
        Ok(())
    }

    /// The mapping in force (empty when there is none).
    pub fn mapping(&self) -> Mapping {
        std::fs::read_to_string(self.hosts_path())
            .map(|text| mapping_of_hosts(&text))
            .unwrap_or_default()
    }

    /// Rewrites the mapping in place (same inode: a bind mount of it sees
    /// the new text); whether it changed.
    pub fn write_mapping(&self, mapping: &Mapping) -> Result<bool, DomainError> {
        let path = self.hosts_path();
        if path.is_file() && &self.mapping() == mapping {
            return Ok(false);
        }
        let text = hosts_file(&self.domain, mapping);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(READ_MODE)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| DomainError::io("open", &path, e))?;
        file.rewind()
            .and_then(|()| file.write_all(text.as_bytes()))
            .and_then(|()| file.set_len(u64::try_from(text.len()).unwrap_or(u64::MAX)))
            .map_err(|e| DomainError::io("rewrite", &path, e))?;
        Ok(true)
    }

    /// The log's last lines (what a daemon that would not start said), at
    /// most a few hundred bytes; a failed prepare removes the folder, so the
    /// error quotes them.
    pub fn log_tail(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.log_path()).ok()?;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = lines[lines.len().saturating_sub(2)..].join(" | ");
        let tail: String = tail
            .chars()
            .rev()
            .take(300)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        (!tail.is_empty()).then_some(tail)
    }

    /// Notes that the daemon was told the mapping now (SIGUSR1): a
    /// gpusliced started again learns from this file's time that the
    /// daemon knows the mapping written before it.
    pub fn mark_told(&self) -> Result<(), DomainError> {
        write_atomic(&self.root, TOLD, b"", 0o600).map_err(|e| DomainError::Io {
            action: "write",
            path: self.root.join(TOLD),
            error: std::io::Error::other(e.to_string()),
        })
    }

    /// When the mapping was last written and the daemon last told, as
    /// times since boot (from the files' times, on the boot clock).
    pub fn written_and_told(&self, boot_now: Duration) -> (Option<Duration>, Option<Duration>) {
        let since_boot = |path: PathBuf| {
            let modified = std::fs::metadata(path).ok()?.modified().ok()?;
            let ago = std::time::SystemTime::now()
                .duration_since(modified)
                .unwrap_or_default();
            Some(boot_now.saturating_sub(ago))
        };
        (
            since_boot(self.hosts_path()),
            since_boot(self.root.join(TOLD)),
        )
    }

    /// Removes the folder and what is in it.
    pub fn remove(&self) -> Result<(), DomainError> {
        match std::fs::remove_dir_all(&self.root) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(DomainError::io("remove", &self.root, e))
            }
            _ => Ok(()),
        }
    }
}
