//! The node of the crash-point test: a folder with a config (the stand-ins
//! of `stand_ins` for MPS and nvidia-smi; on a GB200 node those of
//! `nvidia-imex` and `nvidia-imex-ctl` too), and a gpusliced process in it
//! that the test may arm to die at a crash point.
//!
//! A GB200 node's IMEX daemons are gpusliced's children in a mount
//! namespace of their own (`--imex-launch`: the test runs as root), bound
//! to a loopback address of the node's own, 127.0.45.x (no other test
//! binds one), so nodes run side by side. They outlive gpusliced by
//! design: the node kills them when dropped, by the pid files in its
//! domains' folders.
//!
//! A start ends in READY=1 or in the process's death, whichever comes
//! first: a thread waits on the process without reaping it (`waitid` with
//! WNOWAIT, so its pid stays ours) and then sends a line to the same
//! datagram socket the daemon sends READY=1 to. Nothing sleeps; the bound
//! is only for a hung daemon.

mod imex;

use std::cell::Cell;
use std::net::Ipv4Addr;
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use tonic::transport::Channel;

use crate::harness::connect;
use crate::stand_ins::{kill_daemons_under, sections};
use crate::tools::repo_root;
use imex::imex_section;
pub use imex::{imex_processes, kept_daemon, kill_imex_daemons};

/// Upper bound for a start, a reload, a death; only a hang reaches it.
const BOUND: Duration = Duration::from_secs(60);
/// What the waiting thread sends when the process has exited.
const EXITED: &str = "GPUSLICE_TEST_EXITED=1";
/// Each start gets a socket of its own, so a late line of an earlier
/// process never reaches a later one.
static STARTS: AtomicU64 = AtomicU64::new(0);
/// The last octet of the next GB200 node's IMEX address, 127.0.45.x.
static ADDRESSES: AtomicU32 = AtomicU32::new(0);

/// What a node simulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// This many H100s.
    H100s(usize),
    /// A p6e-gb200.36xlarge (four GB200s in a multi-node NVLink clique)
    /// with `[imex]`: the node of channel claims.
    Gb200,
}

/// A node's folder; its MPS and IMEX daemons are killed when it is dropped.
pub struct Node {
    pub dir: tempfile::TempDir,
    pub kind: NodeKind,
    /// The address its IMEX daemons bind (a GB200 node's).
    pub imex_address: Option<Ipv4Addr>,
}

impl Node {
    /// A node of `kind`, the stand-ins, and `extra` config (a `[mig]`).
    pub fn new(kind: NodeKind, extra: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let imex_address = (kind == NodeKind::Gb200).then(|| {
            // 250 nodes apart, an address is free again: at most a few
            // dozen nodes of this test live at once.
            let n = ADDRESSES.fetch_add(1, Ordering::Relaxed) % 250;
            Ipv4Addr::new(127, 0, 45, u8::try_from(n + 1).expect("under 251"))
        });
        let node = Self {
            dir,
            kind,
            imex_address,
        };
        node.configure(extra);
        node
    }

    /// Writes the config again with another `extra` (for a reload). The
    /// driver root is the repository's simulated one, which has the MIG
    /// capability files slices need. The MPS stand-in runs under
    /// `python3 -S` (no site packages: it needs none), which halves its
    /// start, and this test starts it some thousand times. A GB200 node's
    /// channel device nodes go under its own `dev` (the simulator makes
    /// them as files), never into the repository.
    pub fn configure(&self, extra: &str) {
        let (top, machine) = match self.kind {
            NodeKind::H100s(gpus) => (
                String::new(),
                format!("gpus = [{}]\n", vec!["\"H100-80GB\""; gpus].join(", ")),
            ),
            NodeKind::Gb200 => (
                format!(
                    "dev_root = \"dev\"\n{}",
                    imex_section(
                        self.path(),
                        self.imex_address.expect("a GB200 node has one")
                    )
                ),
                "instance = \"p6e-gb200.36xlarge\"\n".to_owned(),
            ),
        };
        let text = format!(
            "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
             driver_root = \"{}\"\n{top}{}{extra}\n[backend]\nkind = \"sim\"\n\
             [backend.sim]\n{machine}",
            repo_root().join("examples/sim-root").display(),
            sections(self.path()),
        );
        let control = format!(
            "#!/bin/sh\nFAKE_MPS_RECORD={} exec python3 -S {} \"$@\"\n",
            self.path().join("mps.record").display(),
            repo_root().join("tests/tools/fake-mps-control").display()
        );
        gpuslice_cdi::write_atomic(self.path(), "mps-control", control.as_bytes(), 0o755)
            .expect("write the control program's wrapper");
        gpuslice_cdi::write_atomic(self.path(), "gpuslice.toml", text.as_bytes(), 0o644)
            .expect("write config");
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn socket(&self) -> PathBuf {
        self.path().join("gpusliced.sock")
    }

    pub fn mps_dir(&self) -> PathBuf {
        self.path().join("run/mps")
    }

    /// Its domains' folders (`[imex] run_dir`'s `imex`).
    pub fn imex_dir(&self) -> PathBuf {
        self.path().join("run/imex")
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.path().join("daemon.log")).unwrap_or_default()
    }

    /// Starts gpusliced with `env` added; returns it once READY=1 came, or
    /// how it died before.
    pub fn start(&self, env: &[(String, String)]) -> Result<Gpusliced, Death> {
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        let notify_path = self.path().join(format!("notify-{n}.sock"));
        let notify = UnixDatagram::bind(&notify_path).expect("bind notify socket");
        notify
            .set_read_timeout(Some(BOUND))
            .expect("notify timeout");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path().join("daemon.log"))
            .expect("daemon log");
        let child = Command::new(env!("CARGO_BIN_EXE_gpusliced"))
            .arg("--config")
            .arg(self.path().join("gpuslice.toml"))
            .env("NOTIFY_SOCKET", &notify_path)
            .env("GPUSLICE_LOG", "debug")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn gpusliced");
        let pid = i32::try_from(child.id()).expect("pid fits");
        let to = notify_path.clone();
        std::thread::spawn(move || {
            let _ = waitid(
                Id::Pid(Pid::from_raw(pid)),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
            );
            if let Ok(socket) = UnixDatagram::unbound() {
                let _ = socket.send_to(EXITED.as_bytes(), &to);
            }
        });
        let mut daemon = Gpusliced {
            child: Some(child),
            notify,
            notify_path,
            exited: Cell::new(false),
            why: Cell::new(String::new()),
            socket: self.socket(),
        };
        if daemon.wait_for(Some("READY=1")) {
            Ok(daemon)
        } else {
            Err(daemon.reap(self))
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        kill_daemons_under(&self.mps_dir());
        kill_imex_daemons(&self.imex_dir());
    }
}

/// How a gpusliced died, and its log.
#[derive(Debug)]
pub struct Death {
    pub status: ExitStatus,
    pub log: String,
}

impl Death {
    /// Whether it aborted (SIGABRT) at `point`, pass `pass`, as the crash
    /// point says before it aborts.
    pub fn at(&self, point: &str, pass: u32) -> bool {
        let line = format!(
            "{} {point} (pass {pass}): aborting",
            gpuslice::crash::ABORT_LINE
        );
        self.status.signal() == Some(libc::SIGABRT) && self.log.contains(&line)
    }
}

/// A running gpusliced; killed and reaped when dropped.
pub struct Gpusliced {
    child: Option<Child>,
    notify: UnixDatagram,
    notify_path: PathBuf,
    /// Whether the waiting thread's line has been read.
    exited: Cell<bool>,
    /// What made the test wait for an exit.
    why: Cell<String>,
    socket: PathBuf,
}

impl Gpusliced {
    /// A client over the socket.
    pub async fn client(&self) -> GpuSliceClient<Channel> {
        connect(&self.socket).await
    }

    /// Waits for a notification with `line` (true) or the process's exit
    /// (false); `None` waits for the exit alone.
    fn wait_for(&self, line: Option<&str>) -> bool {
        let mut buf = [0u8; 4096];
        while !self.exited.get() {
            let n = self.notify.recv(&mut buf).unwrap_or_else(|e| {
                panic!(
                    "neither {line:?} nor an exit from gpusliced ({e}) after: {}",
                    self.why.take()
                )
            });
            let msg = String::from_utf8_lossy(&buf[..n]);
            if msg.lines().any(|l| l == EXITED) {
                self.exited.set(true);
            } else if line.is_some_and(|line| msg.lines().any(|l| l == line)) {
                return true;
            }
        }
        false
    }

    /// Its pid while it runs; `None` once reaped.
    pub fn running_pid(&self) -> Option<u32> {
        self.child.as_ref().map(std::process::Child::id)
    }

    fn pid(&self) -> Pid {
        let child = self.child.as_ref().expect("running");
        Pid::from_raw(i32::try_from(child.id()).expect("pid fits"))
    }

    /// SIGHUP; true once READY=1 came back, false if it died meanwhile.
    pub fn reload(&self) -> bool {
        kill(self.pid(), Signal::SIGHUP).expect("send SIGHUP");
        self.wait_for(Some("RELOADING=1")) && self.wait_for(Some("READY=1"))
    }

    /// Waits for the exit a failed call announced (bounded) and reaps it;
    /// `why`: the failure, shown if the daemon lives on.
    pub fn died(mut self, node: &Node, why: &str) -> Death {
        self.why.replace(why.to_owned());
        self.reap(node)
    }

    /// SIGTERM, then the exit status (which must be 0).
    pub fn stop(mut self, node: &Node) {
        kill(self.pid(), Signal::SIGTERM).expect("send SIGTERM");
        let death = self.reap(node);
        assert_eq!(death.status.code(), Some(0), "{}", death.log);
    }

    /// Waits for the exit (bounded), then reaps the process.
    fn reap(&mut self, node: &Node) -> Death {
        self.wait_for(None);
        let _ = std::fs::remove_file(&self.notify_path);
        let mut child = self.child.take().expect("running");
        let status = child.wait().expect("wait for gpusliced");
        Death {
            status,
            log: node.log(),
        }
    }
}

impl Drop for Gpusliced {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
