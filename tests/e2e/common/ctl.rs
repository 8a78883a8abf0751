//! gpuslicectl run against a daemon's socket, as an operator types it
//! (`gpuslicectl --socket SOCKET ARGS`), and the checks of how it ended.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, ExitStatus};

use crate::harness::Daemon;

/// How one gpuslicectl run ended: its exit status and both streams.
#[derive(Debug)]
pub struct CtlRun {
    /// The arguments after `--socket SOCKET`, for failure messages.
    pub args: Vec<String>,
    /// How it exited.
    pub status: ExitStatus,
    /// What it printed on stdout, and on stderr.
    pub stdout: String,
    pub stderr: String,
}

/// Runs `gpuslicectl --socket <socket> ARGS` and waits for it to end.
pub fn run_ctl(socket: &Path, args: &[&str]) -> CtlRun {
    let out = Command::new(crate::binaries::gpuslicectl())
        .arg("--socket")
        .arg(socket)
        .args(args)
        .output()
        .expect("run gpuslicectl");
    CtlRun {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl CtlRun {
    /// Its stdout; fails the test unless it exited 0.
    pub fn ok(self) -> String {
        assert!(
            self.status.success(),
            "gpuslicectl {:?} failed ({}): {}{}",
            self.args,
            self.status,
            self.stderr,
            self.stdout
        );
        self.stdout
    }

    /// Its stdout; fails the test unless it answered: 0, or
    /// [`crate::harness::ATTENTION`] while something needs an operator.
    pub fn answered(self) -> String {
        assert!(
            crate::harness::answered(&self.status),
            "gpuslicectl {:?} did not answer ({}): {}{}",
            self.args,
            self.status,
            self.stderr,
            self.stdout
        );
        self.stdout
    }

    /// Its stderr; fails the test if it exited 0.
    pub fn refused(self) -> String {
        assert!(
            !self.status.success(),
            "gpuslicectl {:?} succeeded: {}",
            self.args,
            self.stdout
        );
        self.stderr
    }
}

/// Opens `daemon`'s folder (0755) and socket (0666) to everyone, so that
/// only gpusliced's peer check stands, then runs `gpuslicectl ARGS` as
/// nobody (setpriv, so as root): fails the test unless it is refused
/// naming uid 65534.
pub fn assert_nobody_is_refused(daemon: &Daemon, args: &[&str]) {
    let open = |path: &Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
    };
    open(daemon.dir.path(), 0o755);
    open(&daemon.socket, 0o666);
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(crate::binaries::gpuslicectl())
        .arg("--socket")
        .arg(&daemon.socket)
        .args(args)
        .output()
        .expect("setpriv (util-linux) runs gpuslicectl as nobody");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "nobody was admitted");
    assert!(
        stderr.contains("PermissionDenied") && stderr.contains("uid 65534"),
        "{stderr}"
    );
}
