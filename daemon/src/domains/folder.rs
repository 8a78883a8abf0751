//! A domain's folder, `<run_dir>/imex/<domain uid>/`: the IMEX daemon's
//! config (`imexd.cfg`, NVIDIA's keys: gpuslice-imex's `daemon_config`), its
//! nodes config (`nodes_config.cfg`, the peers' addresses, one a line) and
//! its log (`imexd.log`); and the readiness query, `nvidia-imex-ctl -c
//! imexd.cfg -q`, run with a bound. The nodes config is also where the
//! peers are kept across a restart of gpusliced (the folder is on /run: a
//! reboot forgets them with the daemons, and the plugin tells them again).

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use gpuslice_cdi::atomic::write_atomic;
use gpuslice_imex::imex::{Query, daemon_config, nodes_config, query_answer, query_command};

use super::DomainError;

/// The command service's address when `[imex] bind_address` is unset.
const LOOPBACK: &str = "127.0.0.1";

/// The folder of one domain's IMEX daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainFolder {
    root: PathBuf,
}

impl DomainFolder {
    /// The folder of `domain` under `imex_dir` (`<run_dir>/imex`).
    pub fn new(imex_dir: &Path, domain: &str) -> Self {
        Self {
            root: imex_dir.join(domain),
        }
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

    /// The daemon's output.
    pub fn log_path(&self) -> PathBuf {
        self.root.join("imexd.log")
    }

    /// The peers the nodes config lists now (none when it is missing).
    pub fn peers(&self) -> Vec<String> {
        std::fs::read_to_string(self.nodes_path())
            .map(|text| {
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty() && !l.starts_with('#'))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Writes the config for `bind` and the nodes config with `peers`;
    /// whether the peers changed.
    pub fn write(&self, bind: Option<IpAddr>, peers: &[String]) -> Result<bool, DomainError> {
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o755)
            .create(&self.root)
            .map_err(|e| DomainError::io("create", &self.root, e))?;
        let bind_ip = bind.map(|ip| ip.to_string()).unwrap_or_default();
        let cmd_ip = bind.map_or_else(|| LOOPBACK.to_owned(), |ip| ip.to_string());
        let nodes = self.nodes_path();
        let config = daemon_config(&bind_ip, &cmd_ip, &nodes.to_string_lossy());
        let changed = self.peers() != peers;
        for (name, text) in [
            ("imexd.cfg", config),
            ("nodes_config.cfg", nodes_config(peers)),
        ] {
            write_atomic(&self.root, name, text.as_bytes(), 0o644).map_err(|e| {
                DomainError::Io {
                    action: "write",
                    path: self.root.join(name),
                    error: std::io::Error::other(e.to_string()),
                }
            })?;
        }
        Ok(changed)
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

/// The peers as addresses, checked, in the order given, without repeats.
pub fn checked_peers(peers: &[String]) -> Result<Vec<String>, DomainError> {
    let mut out: Vec<String> = Vec::new();
    for peer in peers {
        let ip: IpAddr = peer
            .parse()
            .map_err(|_| DomainError::BadPeer { peer: peer.clone() })?;
        let text = ip.to_string();
        if !out.contains(&text) {
            out.push(text);
        }
    }
    Ok(out)
}

/// What `ctl -c <config> -q` says, waiting at most `bound` for it.
pub fn query(ctl: &Path, config: &Path, bound: Duration) -> Query {
    let [_, args @ ..] = query_command(&config.to_string_lossy());
    let child = Command::new(ctl)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) => return Query::NotReady(format!("cannot run {}: {e}", ctl.display())),
    };
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(bound) {
        Ok(Ok(output)) => {
            let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&output.stderr));
            query_answer(&text)
        }
        Ok(Err(e)) => Query::NotReady(format!("{}: {e}", ctl.display())),
        Err(_) => {
            crate::mps::child::kill_pid(pid);
            Query::NotReady(format!(
                "{} did not answer within {}s",
                ctl.display(),
                bound.as_secs()
            ))
        }
    }
}
