//! The pod the kubelet would make for the claims' containers: one pod
//! sandbox on the host network, and its containers, each running the probe
//! with the CDI ids it is given. Dropped, it removes every pod containerd
//! has, so a failed test leaves no container behind.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::cri::{Cri, CriError};
use super::runtime::Containerd;
use super::{image, probe};

/// A pod sandbox and the client that made it.
pub struct Pod {
    pub cri: Cri,
    pub id: String,
    log_dir: PathBuf,
    containers: BTreeMap<String, String>,
}

impl Pod {
    /// RunPodSandbox: host network, no hostname (runc refuses one without a
    /// UTS namespace of the pod's own, so the kubelet leaves it unset for a
    /// host-network pod), logs in `dir/pods`, cgroups under the test's
    /// parent.
    pub fn start(mut cri: Cri, containerd: &Containerd, dir: &Path) -> Self {
        let log_dir = dir.join("pods");
        std::fs::create_dir_all(&log_dir).expect("log folder");
        let reply = cri
            .call(json!({
                "op": "run_pod", "name": "gpu-pod", "uid": "0b0b0b0b-2121-4000-8000-000000000000",
                "namespace": "team-a", "log_dir": log_dir,
                "cgroup_parent": containerd.cgroup_parent,
            }))
            .unwrap_or_else(|e| panic!("RunPodSandbox: {e}\ncontainerd:\n{}", containerd.log()));
        Self {
            cri,
            id: reply["id"].as_str().unwrap_or_default().to_owned(),
            log_dir,
            containers: BTreeMap::new(),
        }
    }

    /// Creates and starts container `name` running the probe with `cdi`.
    pub fn run(&mut self, name: &str, cdi: &[String]) -> Result<String, CriError> {
        let command = ["/bin/sh", "-c", probe::PROBE];
        let id = self.cri.run(&self.id, name, image::IMAGE, &command, cdi)?;
        self.containers.insert(name.to_owned(), id.clone());
        Ok(id)
    }

    /// The id of container `name`.
    pub fn container(&self, name: &str) -> String {
        self.containers
            .get(name)
            .cloned()
            .expect("a container of the pod")
    }

    /// The probe's output of container `name`.
    pub async fn output(&self, name: &str) -> Vec<String> {
        probe::output(&self.log_dir.join(format!("{name}.log"))).await
    }

    /// StopPodSandbox and RemovePodSandbox: its containers go with it.
    pub fn remove(mut self) {
        let id = self.id.clone();
        self.cri.ok(json!({"op": "remove_pod", "id": id}));
    }
}

impl Drop for Pod {
    fn drop(&mut self) {
        let _ = self.cri.remove_every_pod();
    }
}
