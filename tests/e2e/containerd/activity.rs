//! The containers' processes as GPU processes: each container's process,
//! by the host pid containerd reports, is registered with the simulator
//! through `gpuslicectl sim exec --claim UID --pid PID` (on the claim's
//! first device), and gpusliced's sampler must give each to its claim. It
//! finds the claim by the marker in `/proc/<pid>/environ`, which only the
//! CDI spec containerd injected can have put there. Each `sim exec` says on
//! stderr once its process is registered; a sample taken after that
//! (GetActivity with `fresh`) must see it: no polling.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};

use gpuslice_proto::gpuslice::v1 as pb;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::node::Kind;
use super::pod::Pod;
use crate::common::queries::Queries;
use crate::harness::Daemon;

/// The `sim exec --pid` processes, by container name, with the container
/// id and pid they follow; ended when the test ends however it ends.
#[derive(Default)]
pub struct Followed {
    pub containers: BTreeMap<&'static str, (String, u32)>,
    execs: BTreeMap<&'static str, Child>,
    /// Their stderr, read up to the registration line and kept open (a
    /// closed pipe would fail a later message of theirs).
    stderr: Vec<BufReader<ChildStderr>>,
}

impl Followed {
    /// Waits for the `sim exec` of `name`, which ends with its process.
    pub fn wait_ended(&mut self, name: &str) -> ExitStatus {
        let child = self.execs.get_mut(name).expect("a followed container");
        child.wait().expect("wait for sim exec")
    }

    /// Waits for every `sim exec` still running; each must exit 0.
    pub fn wait_all_ended(&mut self) {
        for (name, child) in &mut self.execs {
            let status = child.wait().expect("wait for sim exec");
            assert_eq!(status.code(), Some(0), "sim exec --pid of {name}: {status}");
        }
    }
}

impl Drop for Followed {
    fn drop(&mut self) {
        for child in self.execs.values_mut() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            }
            let _ = child.wait();
        }
    }
}

/// Registers every claim's container process, waits for each `sim exec`
/// to say it is registered, and checks that a fresh sample gives each one
/// to its claim.
pub async fn follow_every_container(daemon: &Daemon, pod: &mut Pod) -> Followed {
    let mut followed = Followed::default();
    for kind in Kind::ALL {
        let id = pod.container(kind.name());
        let (state, pid) = pod.cri.status(&id);
        assert_eq!(state, "CONTAINER_RUNNING", "{kind:?}");
        assert!(pid > 0, "{kind:?}: containerd reports no pid");
        let mut exec = Command::new(crate::binaries::gpuslicectl())
            .arg("--socket")
            .arg(&daemon.socket)
            .args(["sim", "exec", "--claim", kind.uid(), "--memory", "1Gi"])
            .args(["--sm", "10", "--pid", &pid.to_string()])
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run gpuslicectl sim exec --pid");
        let mut stderr = BufReader::new(exec.stderr.take().expect("piped stderr"));
        let mut line = String::new();
        stderr.read_line(&mut line).expect("read sim exec's stderr");
        assert!(
            line.starts_with(&format!("sim exec: pid {pid} on ")),
            "{kind:?}: sim exec --pid said {line:?}"
        );
        followed.containers.insert(kind.name(), (id, pid));
        followed.execs.insert(kind.name(), exec);
        followed.stderr.push(stderr);
    }
    let activity = activity(daemon).await;
    for kind in Kind::ALL {
        assert_eq!(
            pids_of(&activity, kind.uid()),
            [followed.containers[kind.name()].1],
            "{kind:?} not attributed to its claim\n{activity:#?}\nlog:\n{}",
            daemon.log()
        );
    }
    followed
}

/// GetActivity, on a sample taken now.
pub async fn activity(daemon: &Daemon) -> pb::GetActivityResponse {
    daemon.client().await.activity(true).await
}

/// The pids attributed to claim `uid` on its first device.
pub fn pids_of(activity: &pb::GetActivityResponse, uid: &str) -> Vec<u32> {
    activity
        .claims
        .iter()
        .find(|c| c.claim.as_ref().is_some_and(|r| r.uid == uid))
        .and_then(|c| c.devices.first())
        .map(|d| d.processes.iter().map(|p| p.pid).collect())
        .unwrap_or_default()
}
