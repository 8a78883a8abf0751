//! Starting and stopping the real gpusliced on the simulated backend in a
//! temp folder, and talking to it over its socket like any client does.
//!
//! Readiness is the real sd_notify protocol: the harness binds a datagram
//! socket, passes it as NOTIFY_SOCKET and waits for READY=1. Nothing sleeps.
//! Like systemd, it reads that socket all the time (a thread), so the daemon
//! never finds the queue full because a test was busy elsewhere.

use std::net::Shutdown;
use std::os::unix::fs::symlink;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;
use gpuslice_proto::gpuslice::v1::gpu_slice_client::GpuSliceClient;
use hyper_util::rt::TokioIo;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tonic::transport::{Channel, Endpoint};

/// How long start-up may take before the test fails (a bound, not a sleep).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A client of gpusliced's API.
pub type Client = GpuSliceClient<Channel>;

/// gpuslicectl's exit status from `status` and `health` while something
/// needs an operator; the harness's nodes have no driver libraries, so
/// `status` lists that problem and exits with it.
pub const ATTENTION: i32 = 3;

/// Polls `check` every `every` until it answers; past `bound`, fails
/// naming `what` and what `context` gives (a log). For waits on a state the
/// test expects: only a bug reaches the bound.
pub async fn poll_until<T>(
    what: &str,
    (bound, every): (Duration, Duration),
    mut check: impl FnMut() -> Option<T>,
    context: impl Fn() -> String,
) -> T {
    let began = std::time::Instant::now();
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(
            began.elapsed() < bound,
            "not within {bound:?}: {what}; {}",
            context()
        );
        tokio::time::sleep(every).await;
    }
}

/// Whether gpuslicectl answered: 0, or [`ATTENTION`] with the same output.
pub fn answered(status: &ExitStatus) -> bool {
    matches!(status.code(), Some(0 | ATTENTION))
}

/// A running gpusliced and its folder.
pub struct Daemon {
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub cdi_dir: PathBuf,
    pub state_dir: PathBuf,
    /// The STATUS= line the daemon sent with READY=1.
    pub ready_status: String,
    notify: Notifications,
    child: ChildGuard,
}

/// Kills the daemon if a test ends without stopping it.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A config file for `gpus` simulated GPUs under `dir`.
pub fn write_config(dir: &Path, gpus: usize, extra: &str) -> PathBuf {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("dev")).expect("create fake dev root");
    let nodes = (0..gpus)
        .map(|i| format!("nvidia{i}"))
        .chain(["nvidiactl".to_owned(), "nvidia-uvm".to_owned()]);
    for node in nodes {
        let link = root.join("dev").join(node);
        if !link.exists() {
            symlink("/dev/null", &link).expect("link fake device node");
        }
    }
    let models = vec!["\"H100-80GB\""; gpus].join(", ");
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\n\
         driver_root = \"root\"\n{extra}\n[backend]\nkind = \"sim\"\n[backend.sim]\ngpus = [{models}]\n"
    );
    let path = dir.join("gpuslice.toml");
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .expect("write config");
    path
}

/// The gpusliced to run: `GPUSLICE_GPUSLICED` when set (the benches use it
/// to time a release build without the tests' crash points), else the one
/// cargo built for this test.
pub fn gpusliced_binary() -> PathBuf {
    std::env::var_os("GPUSLICE_GPUSLICED").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_gpusliced")),
        PathBuf::from,
    )
}

/// Runs gpusliced with `config` and waits for it to exit; returns its status
/// and stderr. For start-up failures.
pub fn run_to_exit(config: &Path) -> (ExitStatus, String) {
    let out = Command::new(gpusliced_binary())
        .arg("--config")
        .arg(config)
        .env_remove("NOTIFY_SOCKET")
        .output()
        .expect("run gpusliced");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

impl Daemon {
    /// Starts gpusliced with `gpus` simulated H100s in a new temp folder.
    pub fn start(gpus: usize) -> Self {
        Self::start_with(gpus, "")
    }

    /// Starts gpusliced with `gpus` simulated H100s and `extra` config text
    /// (see [`write_config`]) in a new temp folder.
    pub fn start_with(gpus: usize, extra: &str) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        write_config(dir.path(), gpus, extra);
        Self::start_in(dir)
    }

    /// Starts gpusliced on the config already in `dir`, logging at debug.
    pub fn start_in(dir: tempfile::TempDir) -> Self {
        Self::start_with_env(dir, &[])
    }

    /// Starts gpusliced on the config already in `dir`, with `env` set
    /// (e.g. `GPUSLICE_SIM_FAULTS`).
    pub fn start_with_env(dir: tempfile::TempDir, env: &[(&str, &str)]) -> Self {
        Self::start_logged_with_env(dir, "debug", env)
    }

    /// Starts gpusliced on the config already in `dir`, with `GPUSLICE_LOG`
    /// set to `level` (the load bench runs at the packaged default, info).
    pub fn start_logged(dir: tempfile::TempDir, level: &str) -> Self {
        Self::start_logged_with_env(dir, level, &[])
    }

    fn start_logged_with_env(dir: tempfile::TempDir, level: &str, env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(gpusliced_binary());
        command
            .arg("--config")
            .arg(dir.path().join("gpuslice.toml"))
            .env("GPUSLICE_LOG", level)
            .envs(env.iter().copied());
        let run = dir.path().to_path_buf();
        Self::spawn(dir, command, &run)
    }

    /// Starts gpusliced with `args` in `cwd` (inside `dir`) as a user does
    /// from a checkout, its runtime files in `run` (socket `gpusliced.sock`,
    /// `state`, `cdi`), with none of the test run's `GPUSLICE_*` settings
    /// (so logging at the config's level). Its log and notify socket go in
    /// `dir`, outside `cwd`.
    pub fn start_as_user(dir: tempfile::TempDir, cwd: &Path, args: &[String], run: &Path) -> Self {
        let mut command = Command::new(gpusliced_binary());
        command.args(args).current_dir(cwd);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("GPUSLICE_") {
                command.env_remove(name);
            }
        }
        Self::spawn(dir, command, run)
    }

    /// Spawns `command` with the notify socket, logging into `dir`, and
    /// waits for READY=1; its runtime files are in `run`.
    fn spawn(dir: tempfile::TempDir, mut command: Command, run: &Path) -> Self {
        let notify_path = dir.path().join("notify.sock");
        let _ = std::fs::remove_file(&notify_path);
        let notify = Notifications::bind(&notify_path);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("daemon.log"))
            .expect("daemon log");
        let child = command
            .env("NOTIFY_SOCKET", &notify_path)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn gpusliced");
        let mut daemon = Self {
            socket: run.join("gpusliced.sock"),
            cdi_dir: run.join("cdi"),
            state_dir: run.join("state"),
            ready_status: String::new(),
            dir,
            notify,
            child: ChildGuard(child),
        };
        daemon.ready_status = daemon.wait_ready();
        daemon
    }

    /// Sends SIGHUP and waits until the daemon says READY=1 again.
    pub fn reload(&self) {
        let pid = i32::try_from(self.child.0.id()).expect("pid fits");
        kill(Pid::from_raw(pid), Signal::SIGHUP).expect("send SIGHUP");
        self.wait_for("RELOADING=1");
        self.wait_ready();
    }

    /// Waits for READY=1; returns the STATUS= sent with it.
    fn wait_ready(&self) -> String {
        let msg = self.wait_for("READY=1");
        msg.lines()
            .find_map(|l| l.strip_prefix("STATUS="))
            .unwrap_or_default()
            .to_owned()
    }

    /// Waits for the next `STATUS=` line (sd_notify) that `wanted` accepts;
    /// returns its text.
    pub fn wait_for_status(&self, wanted: impl Fn(&str) -> bool) -> String {
        loop {
            let msg = self.notify.next().unwrap_or_else(|e| {
                panic!(
                    "no awaited STATUS= from gpusliced ({e}); log:\n{}",
                    self.log()
                )
            });
            let status = msg.lines().find_map(|l| l.strip_prefix("STATUS="));
            if let Some(status) = status.filter(|s| wanted(s)) {
                return status.to_owned();
            }
        }
    }

    /// Waits for a notification with `line`; returns the whole message.
    fn wait_for(&self, line: &str) -> String {
        loop {
            let msg = self
                .notify
                .next()
                .unwrap_or_else(|e| panic!("no {line} from gpusliced ({e}); log:\n{}", self.log()));
            if msg.lines().any(|l| l == line) {
                return msg;
            }
        }
    }

    /// The daemon's stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("daemon.log")).unwrap_or_default()
    }

    /// A client over the socket.
    pub async fn client(&self) -> GpuSliceClient<Channel> {
        connect(&self.socket).await
    }

    /// Sends SIGTERM and waits; returns the exit status and the folder.
    pub fn stop(mut self) -> (ExitStatus, tempfile::TempDir) {
        let pid = i32::try_from(self.child.0.id()).expect("pid fits");
        kill(Pid::from_raw(pid), Signal::SIGTERM).expect("send SIGTERM");
        let status = self.child.0.wait().expect("wait for gpusliced");
        (status, self.dir)
    }

    /// The daemon's PID.
    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// Sends SIGKILL and waits until the process is gone (its files closed,
    /// its locks released); returns the folder.
    pub fn kill9(mut self) -> tempfile::TempDir {
        let pid = i32::try_from(self.child.0.id()).expect("pid fits");
        kill(Pid::from_raw(pid), Signal::SIGKILL).expect("send SIGKILL");
        let status = self.child.0.wait().expect("wait for gpusliced");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "{status}"
        );
        self.dir
    }

    /// Every file name in the CDI dir, sorted.
    pub fn cdi_files(&self) -> Vec<String> {
        list(&self.cdi_dir)
    }

    /// Every claim record file name, sorted.
    pub fn record_files(&self) -> Vec<String> {
        list(&self.state_dir.join("claims"))
    }
}

/// The notify socket, read as systemd reads it: continuously, by a thread;
/// the messages wait in a channel until a test looks for one.
struct Notifications {
    messages: mpsc::Receiver<String>,
    socket: UnixDatagram,
}

impl Notifications {
    fn bind(path: &Path) -> Self {
        let socket = UnixDatagram::bind(path).expect("bind notify socket");
        let reader = socket.try_clone().expect("clone notify socket");
        let (sender, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends when the socket is shut down (0 bytes) or the test
            // stopped listening.
            while let Ok(n @ 1..) = reader.recv(&mut buf) {
                let msg = String::from_utf8_lossy(&buf[..n]).into_owned();
                if sender.send(msg).is_err() {
                    break;
                }
            }
        });
        Self { messages, socket }
    }

    /// The next message, waiting at most [`READY_TIMEOUT`].
    fn next(&self) -> Result<String, mpsc::RecvTimeoutError> {
        self.messages.recv_timeout(READY_TIMEOUT)
    }
}

impl Drop for Notifications {
    fn drop(&mut self) {
        let _ = self.socket.shutdown(Shutdown::Read);
    }
}

/// Sorted file names in `dir` (empty if it does not exist).
pub fn list(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A client over the unix socket at `path`.
pub async fn connect(path: &Path) -> GpuSliceClient<Channel> {
    let path = path.to_path_buf();
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
        .expect("connect to gpusliced");
    GpuSliceClient::new(channel)
}

/// A prepare request for whole GPUs.
pub fn prepare_request(uid: &str, devices: &[&str]) -> pb::PrepareRequest {
    pb::PrepareRequest {
        claim: Some(pb::ClaimRef {
            uid: uid.to_owned(),
            namespace: "team-a".to_owned(),
            name: "train".to_owned(),
        }),
        devices: devices
            .iter()
            .map(|d| pb::AllocatedDevice {
                device: (*d).to_owned(),
                request_names: vec!["gpu".to_owned()],
                pool: "node-1".to_owned(),
                consumed_memory_bytes: None,
                share_id: String::new(),
            })
            .collect(),
        configs: vec![],
    }
}

/// An unprepare request.
pub fn unprepare_request(uid: &str) -> pb::UnprepareRequest {
    pb::UnprepareRequest {
        claim: Some(pb::ClaimRef {
            uid: uid.to_owned(),
            ..Default::default()
        }),
    }
}
