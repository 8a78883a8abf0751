//! containerd 2.x as a node runs it for the kubelet, private to one test:
//! its own root, state, sockets, runc root and config in the test's folder,
//! CDI on with gpusliced's CDI folder as its only spec dir, and its pods
//! under a cgroup parent of the test's own.
//!
//! The binaries come from Debian sid, unpacked (never installed) by
//! `tests/tools/sid-fetch.sh` into `$GPUSLICE_SID_CONTAINERD` (default
//! [`DEFAULT_DIR`], where `.ci/run` puts them); runc is the system's.
//! Two things lie outside the folder whatever the config says: the shim
//! sockets' folder `/run/containerd/s` (fixed in the shim) and the cgroups.
//! On drop, whatever a failed test left is ended: the processes in the
//! test's cgroups, containerd, its shims, mounts under the folder; then the
//! cgroups and the `/run/containerd` folders are removed if this test made
//! them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::common::files::write_text;
use crate::tools::{run, which};

/// Where `.ci/run` unpacks sid's containerd.
pub const DEFAULT_DIR: &str = "/var/cache/gpuslice-test/sid-containerd";
/// The shim's socket folder, fixed in containerd's shim code.
const SHIM_SOCKETS: &str = "/run/containerd/s";

/// The binaries, and what sid-fetch.sh recorded of them.
#[derive(Debug, Clone)]
pub struct Tools {
    pub bin_dir: PathBuf,
    /// "containerd 2.1.9+ds1-5", from the folder's VERSIONS.
    pub package: String,
}

impl Tools {
    /// The unpacked containerd and the system's runc, or why not.
    pub fn find() -> Result<Self, String> {
        let dir = std::env::var_os("GPUSLICE_SID_CONTAINERD")
            .map_or_else(|| PathBuf::from(DEFAULT_DIR), PathBuf::from);
        let bin_dir = dir.join("root/usr/bin");
        let fetch = format!(
            "tests/tools/sid-fetch.sh {} containerd (as .ci/run does), or point \
             GPUSLICE_SID_CONTAINERD at such a folder",
            dir.display()
        );
        for binary in ["containerd", "containerd-shim-runc-v2", "ctr"] {
            if !bin_dir.join(binary).is_file() {
                return Err(format!(
                    "{} is missing: {fetch}",
                    bin_dir.join(binary).display()
                ));
            }
        }
        if which("runc").is_none() {
            return Err("runc is not installed (apt-get install runc)".to_owned());
        }
        let versions = std::fs::read_to_string(dir.join("VERSIONS")).unwrap_or_default();
        let package = versions
            .lines()
            .find(|l| l.starts_with("containerd "))
            .map_or_else(
                || "containerd (version not recorded)".to_owned(),
                str::to_owned,
            );
        Ok(Self { bin_dir, package })
    }
}

/// A running containerd and what it made outside its folder.
pub struct Containerd {
    pub dir: PathBuf,
    pub socket: PathBuf,
    /// The pods' cgroup parent, e.g. `/gpuslice-e2e-1234`.
    pub cgroup_parent: String,
    tools: Tools,
    child: Option<Child>,
    made: Vec<&'static str>,
}

impl Containerd {
    /// Starts containerd in `dir` (created), reading CDI specs from `cdi_dir`.
    pub fn start(tools: &Tools, dir: &Path, cdi_dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("containerd folder");
        let made = ["/run/containerd", SHIM_SOCKETS]
            .into_iter()
            .filter(|p| !Path::new(p).exists())
            .collect();
        let config = dir.join("config.toml");
        write_text(&config, &config_toml(dir, cdi_dir));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(dir.join("containerd.log"))
            .expect("containerd log");
        let path = format!(
            "{}:{}",
            tools.bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let child = Command::new(tools.bin_dir.join("containerd"))
            .arg("--config")
            .arg(&config)
            .env("PATH", path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start containerd");
        Self {
            dir: dir.to_owned(),
            socket: dir.join("containerd.sock"),
            cgroup_parent: format!("/gpuslice-e2e-{}", std::process::id()),
            tools: tools.clone(),
            child: Some(child),
            made,
        }
    }

    /// `ctr images import` of an image tarball into the CRI's namespace.
    pub fn import(&self, tarball: &Path) {
        run(Command::new(self.tools.bin_dir.join("ctr"))
            .arg("--address")
            .arg(&self.socket)
            .args(["--namespace", "k8s.io", "images", "import"])
            .arg(tarball))
        .unwrap_or_else(|e| panic!("{e}\ncontainerd's log:\n{}", self.log()));
    }

    /// containerd's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("containerd.log")).unwrap_or_default()
    }

    /// The cgroup folders of the pods' parent, in every hierarchy that has
    /// one (cgroup v1 controllers, and v2's unified one).
    fn cgroups(&self) -> Vec<PathBuf> {
        let name = self.cgroup_parent.trim_start_matches('/');
        let top = Path::new("/sys/fs/cgroup");
        let mounts = std::fs::read_dir(top)
            .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_else(|_| Vec::new());
        std::iter::once(top.to_owned())
            .chain(mounts)
            .map(|m| m.join(name))
            .filter(|p| p.is_dir())
            .collect()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        let cgroups = self.cgroups();
        for cgroup in &cgroups {
            kill_cgroup_processes(cgroup);
        }
        if let Some(mut child) = self.child.take() {
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
            }
            let _ = child.wait();
        }
        kill_processes_naming(&self.socket);
        unmount_under(&self.dir);
        for cgroup in &cgroups {
            remove_tree(cgroup);
        }
        // Deepest first; a folder something else put files in stays.
        for made in self.made.iter().rev() {
            let _ = std::fs::remove_dir(made);
        }
    }
}

fn config_toml(dir: &Path, cdi_dir: &Path) -> String {
    let d = dir.display();
    format!(
        r#"version = 3
root = '{d}/root'
state = '{d}/state'
required_plugins = ['io.containerd.grpc.v1.cri']
# Nothing of these is used, and some reach outside the folder.
disabled_plugins = ['io.containerd.nri.v1.nri', 'io.containerd.internal.v1.opt',
  'io.containerd.internal.v1.tracing', 'io.containerd.tracing.processor.v1.otlp',
  'io.containerd.snapshotter.v1.btrfs', 'io.containerd.snapshotter.v1.zfs',
  'io.containerd.snapshotter.v1.devmapper', 'io.containerd.snapshotter.v1.blockfile',
  'io.containerd.snapshotter.v1.erofs', 'io.containerd.differ.v1.erofs']

[grpc]
  address = '{d}/containerd.sock'
[ttrpc]
  address = '{d}/containerd.sock.ttrpc'

[plugins]
  [plugins.'io.containerd.image-verifier.v1.bindir']
    bin_dir = '{d}/image-verifiers'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '{image}'
  [plugins.'io.containerd.cri.v1.runtime']
    enable_cdi = true
    cdi_spec_dirs = ['{cdi}']
    # Root here lacks CAP_SYS_RESOURCE: the sandbox's oom_score_adj must
    # not go below containerd's own.
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      Root = '{d}/runc'
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['{d}/cni/bin']
      conf_dir = '{d}/cni/net.d'
"#,
        image = super::image::IMAGE,
        cdi = cdi_dir.display(),
    )
}

/// SIGKILLs every process in `cgroup` and the cgroups under it.
fn kill_cgroup_processes(cgroup: &Path) {
    let procs = std::fs::read_to_string(cgroup.join("cgroup.procs")).unwrap_or_default();
    for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
    for sub in subfolders(cgroup) {
        kill_cgroup_processes(&sub);
    }
}

/// Removes a cgroup and the cgroups under it, deepest first.
fn remove_tree(cgroup: &Path) {
    for sub in subfolders(cgroup) {
        remove_tree(&sub);
    }
    let _ = std::fs::remove_dir(cgroup);
}

fn subfolders(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// SIGKILLs the processes whose command line names `socket`: the shims of
/// this containerd (started with `-address <socket>`).
fn kill_processes_naming(socket: &Path) {
    let needle = socket.as_os_str().as_encoded_bytes();
    crate::stand_ins::kill_processes_whose("cmdline", |arg| arg == needle);
}

/// Detaches every mount under `dir`, deepest first.
fn unmount_under(dir: &Path) {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut points: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(PathBuf::from)
        .filter(|p| p.starts_with(dir))
        .collect();
    points.sort();
    for point in points.iter().rev() {
        let _ = nix::mount::umount2(point, nix::mount::MntFlags::MNT_DETACH);
    }
}
