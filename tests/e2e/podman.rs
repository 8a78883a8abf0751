//! A real CDI consumer: Debian 12's podman (4.3, runc) starts a busybox
//! container with a gpuslice CDI device for a claim prepared on the simulated
//! backend, and the container sees the claim's env, device nodes and mounts.
//! The claim shares its GPU under MPS (the stand-in control program), so the
//! container also sees `CUDA_MPS_PIPE_DIRECTORY`, the daemon's live pipe dir
//! at the same path, and the daemon's shm folder at /dev/shm.
//!
//! podman 4.3 reads CDI specs only from /etc/cdi and /var/run/cdi, so the
//! daemon here writes to /var/run/cdi (root only), under a claim uid no other
//! run uses; the spec and the container are removed even when the test fails.
//! The driver root is a temp copy of examples/sim-root whose device nodes are
//! real character devices (1:3, as /dev/null): runtimes lstat() hostPaths and
//! refuse symlinks. On these machines podman needs runc and lowered default
//! ulimits (CAP_SYS_RESOURCE is missing), given in a containers.conf through
//! CONTAINERS_CONF.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use nix::sys::stat::{Mode, SFlag, makedev, mknod};

use crate::common::claims::Claims;
use crate::common::files::{write_gpuslice_toml, write_text};
use crate::go_cdi;
use crate::stand_ins::{SharedDaemon, daemon_of, mps, sections, shared_request};
use crate::tools::{first_missing, is_root, repo_root, run, skip, which};

const TEST: &str = "sim_podman_runs_a_container_with_a_prepared_claim";
/// A busybox image built locally from the host's static busybox.
const IMAGE: &str = "localhost/gpuslice-test-busybox";
const SPEC_DIR: &str = "/var/run/cdi";
const NODES: [&str; 4] = ["nvidia0", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"];

/// What podman needs on these machines: runc, ulimits within the hard limits.
const CONTAINERS_CONF: &str = "[containers]\n\
    default_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n\
    [engine]\nruntime = \"runc\"\n";

/// Removes the container and the claim's spec when the test ends, however.
struct Cleanup {
    container: String,
    spec: PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(["rm", "--force", "--ignore", &self.container])
            .output();
        let _ = std::fs::remove_file(&self.spec);
    }
}

/// Why podman cannot run here, if it cannot.
fn unavailable() -> Option<String> {
    if !is_root() {
        return Some(
            "podman reads CDI specs only from /etc/cdi and /var/run/cdi: needs root".into(),
        );
    }
    if let Some(tool) = first_missing(&["podman", "runc", "busybox", "tar", "python3"]) {
        return Some(format!(
            "`{tool}` is not installed (apt-get install podman runc busybox-static python3)"
        ));
    }
    let busybox = which("busybox")?;
    // ldd succeeds only on a dynamic executable, which the image cannot run.
    if Command::new("ldd")
        .arg(&busybox)
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some(format!(
            "{} is dynamically linked (apt-get install busybox-static)",
            busybox.display()
        ));
    }
    None
}

/// A claim uid no other run uses (pid and clock), in UUID form.
fn unique_uid() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let low = u64::try_from(nanos % (1 << 48)).unwrap_or(0);
    format!("{:08x}-7e57-4d0c-8a1e-{low:012x}", std::process::id())
}

/// A driver root under `dir`: examples/sim-root's files, real device nodes.
fn driver_root(dir: &Path) -> PathBuf {
    let root = dir.join("driver");
    std::fs::create_dir_all(root.join("dev")).expect("create driver root");
    run(Command::new("cp")
        .arg("-a")
        .arg(repo_root().join("examples/sim-root/usr"))
        .arg(&root))
    .expect("copy the sim driver files");
    for node in NODES {
        mknod(
            &root.join("dev").join(node),
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            makedev(1, 3),
        )
        .expect("mknod a stand-in device node (needs root)");
    }
    root
}

fn write_config(dir: &Path, driver_root: &Path) {
    let text = format!(
        "socket = \"gpusliced.sock\"\nstate_dir = \"state\"\ncdi_dir = \"{SPEC_DIR}\"\n\
         driver_root = \"{}\"\n{}[backend]\nkind = \"sim\"\n[backend.sim]\ngpus = [\"H100-80GB\"]\n",
        driver_root.display(),
        sections(dir),
    );
    write_gpuslice_toml(dir, &text);
}

/// Imports the busybox image unless it is there already.
fn ensure_image(dir: &Path) {
    if Command::new("podman")
        .args(["image", "exists", IMAGE])
        .status()
        .is_ok_and(|s| s.success())
    {
        return;
    }
    let rootfs = dir.join("rootfs");
    for sub in ["bin", "dev", "proc", "sys", "etc", "tmp"] {
        std::fs::create_dir_all(rootfs.join(sub)).expect("image rootfs");
    }
    let busybox = which("busybox").expect("busybox on PATH");
    std::fs::copy(&busybox, rootfs.join("bin/busybox")).expect("copy busybox");
    for applet in ["sh", "ls", "env", "cat", "grep", "sed", "stat"] {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet))
            .expect("applet link");
    }
    let tarball = dir.join("rootfs.tar");
    run(Command::new("tar")
        .arg("-C")
        .arg(&rootfs)
        .arg("-cf")
        .arg(&tarball)
        .arg("."))
    .expect("tar the image rootfs");
    run(Command::new("podman")
        .arg("import")
        .arg(&tarball)
        .arg(IMAGE))
    .expect("podman import");
}

/// Inside the container: one `key:value` line per fact the test checks.
const PROBE: &str = r#"
env | grep -e '^NVIDIA_' -e '^CUDA_MPS_' -e '^GPUSLICE_CLAIM_' | sed 's/^/env:/'
for n in /dev/nvidia*; do stat -c "node:%n %F %t:%T" "$n"; done
while read -r dev mnt fs opts rest; do
  case "$mnt" in /usr/lib/x86_64-linux-gnu/*|/usr/bin/nvidia-smi|/dev/shm) echo "mount:$mnt ${opts%%,*}";; esac
  if [ "$mnt" = "$CUDA_MPS_PIPE_DIRECTORY" ]; then echo "mount:pipe ${opts%%,*}"; fi
done < /proc/mounts
echo "lib:$(cat /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1)"
for f in "$CUDA_MPS_PIPE_DIRECTORY"/*; do echo "pipe:${f##*/}"; done
echo "shm:$(cat /dev/shm/probe)"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_podman_runs_a_container_with_a_prepared_claim() {
    if let Some(why) = unavailable() {
        return skip(TEST, &why);
    }
    let checker = match go_cdi::checker() {
        Ok(c) => c,
        Err(why) => return skip(TEST, why),
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let root = driver_root(dir.path());
    write_config(dir.path(), &root);
    let conf = dir.path().join("containers.conf");
    write_text(&conf, CONTAINERS_CONF);
    let uid = unique_uid();
    let spec = Path::new(SPEC_DIR).join(format!("k8s.gpuslice.dev-claim_{uid}.json"));
    let cleanup = Cleanup {
        container: format!("gpuslice-test-{uid}"),
        spec: spec.clone(),
    };

    let daemon = SharedDaemon::start_in(dir);
    let mut client = daemon.client().await;
    let reply = client
        .prepare(shared_request(&uid, &["gpu-0"], &[mps(50)]))
        .await
        .expect("prepare")
        .into_inner();
    let mps_daemon = daemon_of(&daemon.sharing().await, "gpu-0")
        .cloned()
        .expect("the claim's MPS daemon");
    let shm = Path::new(&mps_daemon.pipe_dir).with_file_name("shm");
    write_text(&shm.join("probe"), "from the daemon's shm");
    let id = reply.devices[0].cdi_device_ids[0].clone();
    assert_eq!(id, format!("k8s.gpuslice.dev/claim={uid}-gpu-0"));
    assert!(spec.is_file(), "{} was not written", spec.display());
    go_cdi::check(checker, std::slice::from_ref(&spec), true)
        .unwrap_or_else(|report| panic!("the Go CDI library cannot inject the claim: {report}"));

    let image_dir = tempfile::tempdir().expect("temp dir");
    ensure_image(image_dir.path());
    let out = run(Command::new("podman")
        .env("CONTAINERS_CONF", &conf)
        .args([
            "run",
            "--rm",
            "--network=none",
            "--name",
            &cleanup.container,
            "--device",
            &id,
            IMAGE,
        ])
        .args(["/bin/sh", "-c", PROBE]))
    .unwrap_or_else(|e| {
        panic!(
            "podman could not run the claim's container: {e}\nspec: {}",
            read(&spec)
        )
    });
    let lines: Vec<&str> = out.lines().collect();
    let pipe_env = format!("env:CUDA_MPS_PIPE_DIRECTORY={}", mps_daemon.pipe_dir);
    // The claim marker the activity sampler reads back from /proc/<pid>/environ.
    let claim_env = format!("env:GPUSLICE_CLAIM_{}={uid}", uid.replace('-', "_"));
    for want in [
        pipe_env.as_str(),
        claim_env.as_str(),
        "mount:pipe rw",
        "mount:/dev/shm rw",
        "pipe:control",
        "pipe:nvidia-cuda-mps-control.pid",
        "shm:from the daemon's shm",
        "env:NVIDIA_VISIBLE_DEVICES=void",
        "node:/dev/nvidia0 character special file 1:3",
        "node:/dev/nvidiactl character special file 1:3",
        "node:/dev/nvidia-uvm character special file 1:3",
        "mount:/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 ro",
        "mount:/usr/lib/x86_64-linux-gnu/libcuda.so.1 ro",
        "mount:/usr/bin/nvidia-smi ro",
    ] {
        assert!(
            lines.contains(&want),
            "the container lacks {want:?}; it saw:\n{out}"
        );
    }
    let host_lib = read(&root.join("usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"));
    assert!(
        lines.contains(&format!("lib:{}", host_lib.trim_end()).as_str()),
        "{out}"
    );

    client.unprepare_claim(&uid).await;
    assert!(!spec.exists(), "unprepare left {}", spec.display());
    drop(cleanup);
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| format!("<cannot read {}: {e}>", path.display()))
}
