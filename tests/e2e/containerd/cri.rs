//! The kubelet's side of the CRI: `cri.py`, a Python client whose stubs
//! grpcio-tools generates at test time from the vendored CRI proto
//! (`third_party/cri-api`), run as one child process that takes a JSON
//! request per line and answers one per line.
//!
//! Python is `$GPUSLICE_PYTHON` (`.ci/run` sets it to its venv) or python3;
//! without grpcio-tools the test skips, unless tools are required.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value, json};

use crate::tools::repo_root;

/// The vendored CRI proto, as grpcio-tools compiles it.
const PROTO: &str = "cri-runtime-v1-api.proto";

/// A failed CRI call: the gRPC code's name and its details.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriError {
    pub code: String,
    pub details: String,
}

impl std::fmt::Display for CriError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.details)
    }
}

/// Python and the stubs generated into `dir`, or why they cannot be had.
pub fn generate(dir: &Path) -> Result<(String, PathBuf), String> {
    let python = std::env::var("GPUSLICE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let stubs = dir.join("cri-stubs");
    std::fs::create_dir_all(&stubs).map_err(|e| format!("create {}: {e}", stubs.display()))?;
    let out = Command::new(&python)
        .args(["-m", "grpc_tools.protoc", "-I"])
        .arg(repo_root().join("third_party/cri-api"))
        .arg(format!("--python_out={}", stubs.display()))
        .arg(format!("--grpc_python_out={}", stubs.display()))
        .arg(PROTO)
        .output()
        .map_err(|e| format!("cannot run {python}: {e} (set GPUSLICE_PYTHON)"))?;
    if !out.status.success() {
        // Set, it names the interpreter CI installed: a failure is a failure.
        assert!(
            std::env::var_os("GPUSLICE_PYTHON").is_none(),
            "GPUSLICE_PYTHON is set but grpc_tools.protoc failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return Err(format!(
            "{python} -m grpc_tools.protoc failed (pip install grpcio-tools and set \
             GPUSLICE_PYTHON): {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok((python, stubs))
}

/// The running client.
pub struct Cri {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Cri {
    /// Starts the client against containerd's `socket`.
    pub fn start(python: &str, stubs: &Path, socket: &Path) -> Self {
        let script = repo_root().join("tests/e2e/containerd/cri.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg(stubs)
            .arg(socket)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the CRI client");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// One call; `request` is an object with `op` and its fields.
    pub fn call(&mut self, request: Value) -> Result<Value, CriError> {
        let gone = |why: String| CriError {
            code: "CLIENT_GONE".to_owned(),
            details: format!("the CRI client ended at {request} ({why}; its stderr says why)"),
        };
        let mut line = request.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| gone(e.to_string()))?;
        let mut answer = String::new();
        match self.stdout.read_line(&mut answer) {
            Ok(0) => return Err(gone("end of its output".to_owned())),
            Ok(_) => {}
            Err(e) => return Err(gone(e.to_string())),
        }
        let answer: Value = serde_json::from_str(&answer).expect("the CRI client answers JSON");
        match answer.get("error") {
            Some(err) => Err(CriError {
                code: err["code"].as_str().unwrap_or_default().to_owned(),
                details: err["details"].as_str().unwrap_or_default().to_owned(),
            }),
            None => Ok(answer),
        }
    }

    /// A call that must succeed.
    pub fn ok(&mut self, request: Value) -> Value {
        let shown = request.to_string();
        self.call(request)
            .unwrap_or_else(|e| panic!("CRI {shown} failed: {e}"))
    }

    /// CreateContainer then StartContainer; the container id.
    pub fn run(
        &mut self,
        pod: &str,
        name: &str,
        image: &str,
        command: &[&str],
        cdi: &[String],
    ) -> Result<String, CriError> {
        let created = self.call(json!({
            "op": "create", "pod": pod, "name": name, "image": image,
            "command": command, "cdi": cdi, "log": format!("{name}.log"),
        }))?;
        let id = created["id"].as_str().unwrap_or_default().to_owned();
        self.call(json!({"op": "start", "id": id}))?;
        Ok(id)
    }

    /// ContainerStatus: (state, host pid).
    pub fn status(&mut self, id: &str) -> (String, u32) {
        let status = self.ok(json!({"op": "status", "id": id}));
        let state = status["state"].as_str().unwrap_or_default().to_owned();
        let pid = status["pid"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .unwrap_or(0);
        (state, pid)
    }

    /// Removes every pod sandbox (and so every container) containerd has.
    pub fn remove_every_pod(&mut self) -> Result<(), CriError> {
        let pods = self.call(json!({"op": "list_pods"}))?;
        for id in pods["ids"].as_array().into_iter().flatten() {
            self.call(json!({"op": "remove_pod", "id": id}))?;
        }
        Ok(())
    }
}

impl Drop for Cri {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
