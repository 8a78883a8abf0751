//! gpusliced as the conformance tests run it: on the simulated backend in a
//! temp folder, with the stand-in MPS control program and nvidia-smi, ready
//! when it says READY=1 (sd_notify), restartable on the same folder and
//! socket.

use std::os::unix::fs::symlink;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::peers::{ChildGuard, log_file, read, stop, write};

/// A bound on start-up, not a sleep.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// How often a poll of `gpuslicectl status` asks again.
const POLL: Duration = Duration::from_millis(100);

/// The gpusliced binary, built from its package (`crate::binaries`).
pub fn gpusliced_binary() -> PathBuf {
    crate::binaries::workspace_binary("gpuslice", "gpusliced")
}

/// The stand-ins gpusliced runs instead of nvidia-cuda-mps-control and
/// nvidia-smi (tests/tools at the top of the repository).
fn stand_in(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/tools")
        .join(name)
}

/// A running gpusliced with `gpus` simulated H100s in `dir`, sharing GPUs
/// through the stand-in MPS control program and nvidia-smi. When dropped,
/// gpusliced is killed first, then every MPS daemon it started (found by its
/// pipe dir in /proc), so no process outlives the test.
pub struct Daemon {
    pub socket: PathBuf,
    dir: PathBuf,
    /// The CDI specs it writes.
    pub cdi_dir: PathBuf,
    mps_dir: PathBuf,
    child: Option<ChildGuard>,
}

/// SIGKILL to every process whose environment has a variable starting with
/// `prefix` (`NAME=value-prefix`): the daemons a test's gpusliced started,
/// by the folder their marker names.
pub fn kill_processes_with_env(prefix: &str) {
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if environ
            .split(|b| *b == 0)
            .any(|var| var.starts_with(prefix.as_bytes()))
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        drop(self.child.take());
        let needle = format!("CUDA_MPS_PIPE_DIRECTORY={}/", self.mps_dir.display());
        kill_processes_with_env(&needle);
    }
}

impl Daemon {
    /// gpusliced in `dir` (made if missing) on `gpus` simulated H100s.
    pub fn start(dir: &Path, gpus: usize) -> Self {
        Self::start_with(dir, gpus, "")
    }

    /// [`Daemon::start`], with `extra` appended to the config (a `[mig]`).
    pub fn start_with(dir: &Path, gpus: usize, extra: &str) -> Self {
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("dev")).expect("fake dev root");
        let nodes = (0..gpus)
            .map(|i| format!("nvidia{i}"))
            .chain(["nvidiactl".to_owned(), "nvidia-uvm".to_owned()]);
        for node in nodes {
            symlink("/dev/null", root.join("dev").join(node)).expect("link fake device node");
        }
        let models = vec!["\"H100-80GB\""; gpus].join(", ");
        let text = format!(
            "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"cdi\"\ndriver_root = \"root\"\n\
             [mps]\ncontrol_program = \"{}\"\nrun_dir = \"run\"\nsupervisor = \"child\"\nshm = \"folder\"\n\
             [timeslice]\nnvidia_smi = \"{}\"\n\
             [backend]\nkind = \"sim\"\n[backend.sim]\ngpus = [{models}]\n{extra}",
            stand_in("fake-mps-control").display(),
            stand_in("fake-nvidia-smi").display(),
        );
        Self::start_with_config(dir, &text)
    }

    /// A gpusliced in `dir` (made if missing) on the config `text` (paths
    /// relative to `dir`).
    pub fn start_with_config(dir: &Path, text: &str) -> Self {
        std::fs::create_dir_all(dir).expect("daemon dir");
        write(&dir.join("gpuslice.toml"), text);
        let mut daemon = Self {
            socket: dir.join("gpusliced.sock"),
            dir: dir.to_path_buf(),
            cdi_dir: dir.join("cdi"),
            mps_dir: dir.join("run/mps"),
            child: None,
        };
        daemon.launch();
        daemon
    }

    /// Starts gpusliced on the config in its folder; returns after READY=1.
    fn launch(&mut self) {
        let notify_path = self.dir.join("notify.sock");
        let _ = std::fs::remove_file(&notify_path);
        let notify = UnixDatagram::bind(&notify_path).expect("bind notify socket");
        notify
            .set_read_timeout(Some(READY_TIMEOUT))
            .expect("notify timeout");
        let child = Command::new(gpusliced_binary())
            .arg("--config")
            .arg(self.dir.join("gpuslice.toml"))
            .env("NOTIFY_SOCKET", &notify_path)
            .stdout(Stdio::null())
            .stderr(log_file(&self.dir.join("gpusliced.log")))
            .spawn()
            .expect("spawn gpusliced");
        self.child = Some(ChildGuard::new(child));
        let mut buf = [0u8; 4096];
        loop {
            let n = notify.recv(&mut buf).unwrap_or_else(|e| {
                panic!(
                    "no READY=1 from gpusliced ({e}): {}",
                    read(&self.dir.join("gpusliced.log"))
                )
            });
            if String::from_utf8_lossy(&buf[..n])
                .lines()
                .any(|l| l == "READY=1")
            {
                break;
            }
        }
    }

    /// Stops gpusliced with SIGTERM (it must exit 0 within `bound`, open
    /// watches and all) and starts it again on the same folder and socket.
    pub fn restart(&mut self, bound: Duration) {
        let child = self.child.take().expect("gpusliced runs").release();
        let status = stop(child, bound);
        assert!(
            status.success(),
            "gpusliced exited {status:?}: {}",
            read(&self.dir.join("gpusliced.log"))
        );
        self.launch();
    }

    /// `gpuslicectl --output json status` against this gpusliced.
    pub fn status_json(&self) -> serde_json::Value {
        let out = Command::new(crate::binaries::gpuslicectl())
            .arg("--socket")
            .arg(&self.socket)
            .args(["--output", "json", "status"])
            .output()
            .expect("run gpuslicectl");
        assert!(answered(&out.status), "gpuslicectl status: {out:?}");
        serde_json::from_slice(&out.stdout).expect("gpuslicectl status prints JSON")
    }

    /// `gpuslicectl status` (the table) against this gpusliced.
    pub fn status_text(&self) -> String {
        let out = Command::new(crate::binaries::gpuslicectl())
            .arg("--socket")
            .arg(&self.socket)
            .arg("status")
            .output()
            .expect("run gpuslicectl");
        assert!(answered(&out.status), "gpuslicectl status: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The line of `gpuslicectl status` starting `claim status:` once
    /// `wanted` accepts it, asking again every [`POLL`] for at most `bound`;
    /// Err with the last table when none did.
    pub fn claim_status_until(
        &self,
        bound: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let deadline = Instant::now() + bound;
        loop {
            let text = self.status_text();
            let line = text.lines().find(|l| l.starts_with("claim status:"));
            if let Some(line) = line.filter(|l| wanted(l)) {
                return Ok(line.to_owned());
            }
            if Instant::now() >= deadline {
                return Err(text);
            }
            #[expect(
                clippy::disallowed_methods,
                reason = "the pause between the tries of a bounded poll (as tests/e2e's \
                          `eventually`): no event says gpusliced heard the plugin, and the \
                          outcome never depends on the pause's length"
            )]
            std::thread::sleep(POLL);
        }
    }

    /// gpusliced's log so far.
    pub fn log(&self) -> String {
        read(&self.dir.join("gpusliced.log"))
    }

    /// Injects a health event (`gpu=7 xid=79`) through the simulator's
    /// health events file.
    pub fn inject_health(&self, line: &str) {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("sim-health-events"))
            .expect("open the health events file");
        std::io::Write::write_all(&mut file, format!("{line}\n").as_bytes())
            .expect("append a health event");
    }
}

/// Whether `gpuslicectl status` answered: 0, or 3 while it lists a problem
/// (this gpusliced's driver root holds no driver libraries) with the same
/// output.
fn answered(status: &std::process::ExitStatus) -> bool {
    matches!(status.code(), Some(0 | 3))
}
