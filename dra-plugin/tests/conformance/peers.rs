//! The real processes the conformance test drives besides gpusliced
//! ([`crate::gpusliced`]): the shim binary, and the Python stand-in kubelet
//! whose stubs are generated from the reference protos at test time; and
//! the helpers to stop a child within a bound.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::Value;

/// `$GPUSLICE_REFERENCE_DIR`, or the protos vendored in `third_party/kubelet`
/// (the ones the shim compiles).
pub fn reference_dir() -> PathBuf {
    std::env::var_os("GPUSLICE_REFERENCE_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../third_party/kubelet"
            ))
        },
        PathBuf::from,
    )
}

pub const KUBELET_PROTOS: [&str; 5] = [
    "kubelet-dra-v1-api.proto",
    "kubelet-dra-v1beta1-api.proto",
    "kubelet-pluginregistration-v1-api.proto",
    "kubelet-dra-health-v1-api.proto",
    "kubelet-dra-health-v1alpha1-api.proto",
];

/// Kills a child if the test ends without stopping it.
pub struct ChildGuard(Option<Child>);

impl ChildGuard {
    pub fn new(child: Child) -> Self {
        Self(Some(child))
    }

    /// The child, no longer killed when the guard goes.
    pub fn release(mut self) -> Child {
        self.0.take().expect("a guarded child")
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The stand-in kubelet: a Python interpreter with grpcio and stubs.
pub struct Kubelet {
    python: String,
    stubs: PathBuf,
}

impl Kubelet {
    /// Generates the stubs into `dir`. None (with the reason printed) when
    /// Python or grpcio-tools is missing and `GPUSLICE_PYTHON` is not set;
    /// with `GPUSLICE_PYTHON` set (as `.ci/run` does) a missing piece fails.
    pub fn generate(dir: &Path) -> Option<Self> {
        let required = std::env::var("GPUSLICE_PYTHON").ok();
        let python = required.clone().unwrap_or_else(|| "python3".to_owned());
        let reference = reference_dir();
        let missing = KUBELET_PROTOS.iter().find(|p| !reference.join(p).is_file());
        if let Some(proto) = missing {
            let why = format!(
                "reference proto {proto} not found in {} (set GPUSLICE_REFERENCE_DIR)",
                reference.display()
            );
            assert!(required.is_none(), "{why}");
            println!("skipping the conformance test: {why}");
            return None;
        }
        let stubs = dir.join("kubelet-stubs");
        std::fs::create_dir_all(&stubs).expect("stub dir");
        let out = Command::new(&python)
            .args(["-m", "grpc_tools.protoc", "-I"])
            .arg(&reference)
            .arg(format!("--python_out={}", stubs.display()))
            .arg(format!("--grpc_python_out={}", stubs.display()))
            .args(KUBELET_PROTOS)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Self { python, stubs }),
            other => {
                let why = match other {
                    Ok(out) => String::from_utf8_lossy(&out.stderr).into_owned(),
                    Err(err) => err.to_string(),
                };
                assert!(
                    required.is_none(),
                    "GPUSLICE_PYTHON is set but grpc_tools.protoc failed: {why}"
                );
                println!(
                    "skipping the conformance test: {python} with grpcio-tools is needed ({why}); \
                          pip install grpcio-tools and set GPUSLICE_PYTHON"
                );
                None
            }
        }
    }

    /// Runs one kubelet call against `socket`; returns the JSON reply.
    pub fn call(&self, socket: &Path, op: &str, arg: &Value) -> Value {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance/kubelet.py");
        let out = Command::new(&self.python)
            .arg(script)
            .arg(&self.stubs)
            .arg(socket)
            .arg(op)
            .arg(arg.to_string())
            .output()
            .expect("run the python kubelet");
        assert!(
            out.status.success(),
            "kubelet.py {op} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("kubelet.py prints JSON")
    }
}

/// A kubelet's open `NodeWatchResources` stream: the Python client prints
/// one JSON line per message; a thread hands them over.
pub struct HealthWatch {
    lines: std::sync::mpsc::Receiver<Value>,
    _child: ChildGuard,
}

impl Kubelet {
    /// Opens a health watch on `socket` in `version` ("v1" or "v1alpha1").
    pub fn watch_health(&self, socket: &Path, version: &str) -> HealthWatch {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/conformance/kubelet_health.py"
        );
        let mut child = Command::new(&self.python)
            .arg(script)
            .arg(&self.stubs)
            .arg(socket)
            .arg(version)
            .stdout(Stdio::piped())
            .spawn()
            .expect("run the python kubelet's health watch");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let value = serde_json::from_str(&line).expect("kubelet_health.py prints JSON");
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        HealthWatch {
            lines,
            _child: ChildGuard::new(child),
        }
    }
}

impl HealthWatch {
    /// The first message `wanted` accepts, within `bound`.
    pub fn until(&self, bound: Duration, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + bound;
        let mut last = Value::Null;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(value) if wanted(&value) => return value,
                Ok(value) => last = value,
                Err(err) => panic!("no awaited health message ({err}); last: {last}"),
            }
        }
    }
}

/// The shim running with a config in `dir` (made if missing) pointing at
/// `api_url`.
pub struct Shim {
    pub dir: PathBuf,
    child: Option<Child>,
}

impl Drop for Shim {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Shim {
    pub fn start(dir: &Path, api_url: &str, gpusliced_socket: &Path) -> Self {
        Self::start_with(dir, api_url, gpusliced_socket, "")
    }

    /// [`Shim::start`], with `extra` appended to its config (a section).
    pub fn start_with(dir: &Path, api_url: &str, gpusliced_socket: &Path, extra: &str) -> Self {
        std::fs::create_dir_all(dir).expect("shim dir");
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {api_url}\n\
             users:\n- name: node\n  user:\n    token: fake-node-token\n\
             contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: node\ncurrent-context: fake\n"
        );
        write(&dir.join("kubeconfig"), &kubeconfig);
        let config = format!(
            "node_name = \"node-1\"\nkubeconfig = \"kubeconfig\"\ngpusliced_socket = \"{}\"\n\
             registry_dir = \"registry\"\nplugins_dir = \"plugins\"\nresync_seconds = 3600\n\
             health_seconds = 1\nconsumable_capacity = true\ntaint_unhealthy = true\n{extra}",
            gpusliced_socket.display()
        );
        write(&dir.join("shim.toml"), &config);
        let child = Command::new(env!("CARGO_BIN_EXE_gpuslice-dra-plugin"))
            .arg("--config")
            .arg(dir.join("shim.toml"))
            .env("GPUSLICE_LOG", "info")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .stdout(Stdio::null())
            .stderr(log_file(&dir.join("shim.log")))
            .spawn()
            .expect("spawn the shim");
        Self {
            dir: dir.to_path_buf(),
            child: Some(child),
        }
    }

    pub fn registration_socket(&self) -> PathBuf {
        self.dir.join("registry/gpu.nvidia.com-reg.sock")
    }

    pub fn dra_socket(&self) -> PathBuf {
        self.dir.join("plugins/gpu.nvidia.com/dra.sock")
    }

    pub fn log(&self) -> String {
        read(&self.dir.join("shim.log"))
    }

    /// Sends SIGTERM.
    pub fn terminate(&self) {
        let child = self.child.as_ref().expect("the shim runs");
        let pid = i32::try_from(child.id()).expect("pid fits");
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("send SIGTERM");
    }

    /// Waits (on a thread blocked in wait(2)) for the shim to exit, within a bound.
    pub fn wait_exit(&mut self, bound: Duration) -> ExitStatus {
        let child = self.child.take().expect("the shim runs");
        wait_bounded(child, bound).unwrap_or_else(|| {
            panic!(
                "the shim did not exit within {bound:?}; log:\n{}",
                self.log()
            )
        })
    }
}

/// Waits for `child` to exit within `bound` (None, and killed, if not).
fn wait_bounded(mut child: Child, bound: Duration) -> Option<ExitStatus> {
    let pid = i32::try_from(child.id()).expect("pid fits");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    match rx.recv_timeout(bound) {
        Ok(status) => Some(status.expect("wait for the child")),
        Err(_) => {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
            None
        }
    }
}

/// SIGTERM, then waits within `bound`.
pub fn stop(child: Child, bound: Duration) -> ExitStatus {
    let pid = i32::try_from(child.id()).expect("pid fits");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("send SIGTERM");
    wait_bounded(child, bound).unwrap_or_else(|| panic!("pid {pid} did not exit within {bound:?}"))
}

pub fn write(path: &Path, text: &str) {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .expect("write test file");
}

pub fn log_file(path: &Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("log file")
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
