//! A gpusliced whose `[mps] control_program` and `[timeslice] nvidia_smi`
//! are the stand-ins in tests/tools (each behind a small wrapper that points
//! its record file into the test's folder), and what the sharing tests need
//! around it: the records, opaque configs, and a guard that leaves no MPS
//! daemon behind however a test ends.

use std::ops::{Deref, DerefMut};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use gpuslice_proto::gpuslice::v1 as pb;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::harness::{Daemon, prepare_request, write_config};
use crate::tools::{repo_root, skip, which};

/// Upper bound for a daemon to come back; only a hang reaches it.
pub const BOUND: Duration = Duration::from_secs(30);

/// The `[mps]` and `[timeslice]` sections for a node in `dir`, writing the
/// wrappers they name.
pub fn sections(dir: &Path) -> String {
    let tools = repo_root().join("tests/tools");
    let wrapper = |name: &str, body: String| {
        let path = dir.join(name);
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .mode(0o755)
            .open(&path)
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, format!("#!/bin/sh\n{body}\n").as_bytes())
            })
            .expect("write a wrapper");
        path
    };
    let control = wrapper(
        "mps-control",
        format!(
            "FAKE_MPS_RECORD={} exec {} \"$@\"",
            dir.join("mps.record").display(),
            tools.join("fake-mps-control").display()
        ),
    );
    let smi = wrapper(
        "nvidia-smi",
        format!(
            "FAKE_SMI_RECORD={} exec {} \"$@\"",
            dir.join("smi.record").display(),
            tools.join("fake-nvidia-smi").display()
        ),
    );
    format!(
        "[mps]\ncontrol_program = \"{}\"\nrun_dir = \"run\"\nsupervisor = \"child\"\n\
         shm = \"folder\"\n[timeslice]\nnvidia_smi = \"{}\"\n",
        control.display(),
        smi.display()
    )
}

/// A gpusliced with the stand-ins; on drop, gpusliced is killed first and
/// then every MPS daemon it started (found by its pipe dir in /proc), so no
/// process outlives the test.
pub struct SharedDaemon {
    daemon: Option<Daemon>,
    /// Where its MPS daemons' folders are; `None` once stopped on purpose.
    mps_dir: Option<PathBuf>,
}

impl SharedDaemon {
    /// A node of `gpus` simulated H100s (plus `extra` config), or `None`
    /// after a skip line when python3 (the stand-in's interpreter) is missing.
    pub fn start(test: &str, gpus: usize, extra: &str) -> Option<Self> {
        Self::start_with(test, gpus, extra, |_| {})
    }

    /// [`Self::start`], with `before` run on the node's folder once its
    /// config is written and before gpusliced starts (files it reads at
    /// start-up).
    pub fn start_with(
        test: &str,
        gpus: usize,
        extra: &str,
        before: impl FnOnce(&Path),
    ) -> Option<Self> {
        if which("python3").is_none() {
            skip(
                test,
                "python3 (the stand-in MPS control program's interpreter) is missing",
            );
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let config = format!("{}{extra}", sections(dir.path()));
        write_config(dir.path(), gpus, &config);
        before(dir.path());
        Some(Self::start_in(dir))
    }

    /// Starts gpusliced again on the folder of an earlier one.
    pub fn start_in(dir: tempfile::TempDir) -> Self {
        Self::start_logged(dir, "debug")
    }

    /// Starts gpusliced on the config in `dir` (written with [`sections`]),
    /// with `GPUSLICE_LOG` set to `log`.
    pub fn start_logged(dir: tempfile::TempDir, log: &str) -> Self {
        let mps_dir = Some(dir.path().join("run/mps"));
        Self {
            daemon: Some(Daemon::start_logged(dir, log)),
            mps_dir,
        }
    }

    /// SIGTERM; the MPS daemons keep running, as they do across a restart.
    pub fn stop(mut self) -> tempfile::TempDir {
        let daemon = self.daemon.take().expect("running");
        self.mps_dir = None;
        let (status, dir) = daemon.stop();
        assert_eq!(status.code(), Some(0), "{status}");
        dir
    }

    /// A guard that kills this node's MPS daemons, for the time between a
    /// `stop` and the next start.
    pub fn reaper(&self) -> Reaper {
        Reaper(self.path().join("run/mps"))
    }

    /// The folder's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The stand-in control program's record: starts and commands, in order.
    pub fn mps_lines(&self) -> Vec<String> {
        lines(&self.path().join("mps.record"))
    }

    /// The stand-in nvidia-smi's record.
    pub fn smi_lines(&self) -> Vec<String> {
        lines(&self.path().join("smi.record"))
    }

    /// The sharing view over the socket.
    pub async fn sharing(&self) -> pb::GetSharingResponse {
        self.client()
            .await
            .get_sharing(pb::GetSharingRequest {})
            .await
            .expect("GetSharing")
            .into_inner()
    }
}

impl Deref for SharedDaemon {
    type Target = Daemon;
    fn deref(&self) -> &Daemon {
        self.daemon.as_ref().expect("running")
    }
}

impl DerefMut for SharedDaemon {
    fn deref_mut(&mut self) -> &mut Daemon {
        self.daemon.as_mut().expect("running")
    }
}

impl Drop for SharedDaemon {
    fn drop(&mut self) {
        drop(self.daemon.take());
        if let Some(dir) = &self.mps_dir {
            kill_daemons_under(dir);
        }
    }
}

/// Kills a node's MPS daemons when dropped: for tests that stop and start
/// gpusliced (declare it first, so it runs after gpusliced is gone).
pub struct Reaper(pub PathBuf);

impl Drop for Reaper {
    fn drop(&mut self) {
        kill_daemons_under(&self.0);
    }
}

/// SIGKILLs every process whose `CUDA_MPS_PIPE_DIRECTORY` is under
/// `mps_dir`: the MPS daemons of one test node, as a reboot would.
pub fn kill_daemons_under(mps_dir: &Path) {
    let needle = format!("CUDA_MPS_PIPE_DIRECTORY={}/", mps_dir.display());
    kill_processes_whose("environ", |var| var.starts_with(needle.as_bytes()));
}

/// SIGKILLs every process whose `/proc/<pid>/<file>` (`cmdline` or
/// `environ`: entries split by NUL bytes) has an entry `matches` accepts.
pub fn kill_processes_whose(file: &str, matches: impl Fn(&[u8]) -> bool) {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let text = std::fs::read(entry.path().join(file)).unwrap_or_default();
        if text.split(|b| *b == 0).any(&matches) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Whether `pid` runs (a zombie does not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z")
    })
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A GpuConfig with this `sharing` object.
pub fn gpu_config(sharing: &str) -> String {
    format!(
        r#"{{"apiVersion":"resource.nvidia.com/v1beta1","kind":"GpuConfig","sharing":{sharing}}}"#
    )
}

/// MPS with a thread percentage.
pub fn mps(atp: u8) -> String {
    gpu_config(&format!(
        r#"{{"strategy":"MPS","mpsConfig":{{"defaultActiveThreadPercentage":{atp}}}}}"#
    ))
}

/// Time-slicing at `interval`.
pub fn timeslicing(interval: &str) -> String {
    gpu_config(&format!(
        r#"{{"strategy":"TimeSlicing","timeSlicingConfig":{{"interval":"{interval}"}}}}"#
    ))
}

/// Our memory share.
pub fn memory(quantity: &str) -> String {
    format!(
        r#"{{"apiVersion":"gpuslice.dev/v1alpha1","kind":"MpsMemoryConfig","memory":"{quantity}"}}"#
    )
}

/// A prepare request with claim configs.
pub fn shared_request(uid: &str, devices: &[&str], configs: &[String]) -> pb::PrepareRequest {
    let mut req = prepare_request(uid, devices);
    req.configs = configs
        .iter()
        .map(|json| pb::OpaqueConfig {
            source: pb::ConfigSource::Claim.into(),
            requests: vec![],
            parameters_json: json.clone(),
        })
        .collect();
    req
}

/// The daemon covering `device` in the sharing view.
pub fn daemon_of<'a>(view: &'a pb::GetSharingResponse, device: &str) -> Option<&'a pb::MpsDaemon> {
    view.gpus
        .iter()
        .find(|g| g.device == device)
        .and_then(|g| g.mps_daemons.first())
}

/// The env of a claim spec's first device.
pub fn spec_env(cdi_dir: &Path, uid: &str) -> Vec<String> {
    let path = cdi_dir.join(format!("k8s.gpuslice.dev-claim_{uid}.json"));
    let spec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read spec")).expect("spec JSON");
    spec["devices"][0]["containerEdits"]["env"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
