//! containerd 2.1 as the node's runtime, driven over the CRI as the kubelet
//! drives it (tests/README.md, the containerd tier). The real gpusliced on
//! six simulated H100s prepares one claim of each kind through its API
//! (whole GPU, a MIG slice made at prepare, an MPS share with a thread
//! percentage and a memory share, time-slicing, two GPUs); a pod on the
//! host network gets one container per claim, created with `CDI_devices` =
//! the CDI ids Prepare returned (the field the kubelet fills from a DRA
//! claim), and each container must see exactly its claim's device nodes,
//! the claim marker, the MPS pipe folder and limit, and the driver mounts.
//! Each container's process, registered with the simulator by its host pid
//! (`gpuslicectl sim exec --pid`), must be attributed to its claim: the
//! sampler reads the marker from the process's own environment, so this
//! proves the CDI env reached it. Then what docs/troubleshooting.md says of
//! an unprepare while a container runs and of a spec removed behind the
//! runtime's back ([`mishaps`]).
//!
//! Reading order: [`runtime`] (containerd, private), [`image`], [`cri`]
//! (the Python client), [`pod`], [`node`] (gpusliced, the claims), [`probe`]
//! (what the containers print), [`inside`] (what they must see),
//! [`activity`], [`mishaps`].

mod activity;
mod cri;
mod image;
mod inside;
mod mishaps;
mod node;
mod pod;
mod probe;
mod runtime;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use gpuslice_proto::gpuslice::v1::MpsDaemon;
use serde_json::json;

use crate::harness::unprepare_request;
use crate::stand_ins::{SharedDaemon, daemon_of};
use crate::tools::{first_missing, is_root, skip, which};
use cri::Cri;
use node::Kind;
use pod::Pod;
use runtime::{Containerd, Tools};

const TEST: &str = "sim_containerd_runs_a_container_per_claim_kind_through_the_cri";

/// Each claim's CDI ids, by its container's name.
pub type Ids = BTreeMap<&'static str, Vec<String>>;

/// What the tier needs, found.
struct Found {
    tools: Tools,
    busybox: PathBuf,
    python: String,
    stubs: PathBuf,
}

/// Why the tier cannot run here; else what it needs (the CRI stubs
/// generated into `dir`).
fn available(dir: &Path) -> Result<Found, String> {
    if !is_root() {
        return Err("containerd runs containers as root only".to_owned());
    }
    if let Some(tool) = first_missing(&["busybox", "tar", "cp", "python3"]) {
        return Err(format!(
            "`{tool}` is not installed (apt-get install busybox-static tar coreutils python3)"
        ));
    }
    let busybox = which("busybox").ok_or("busybox is not on PATH")?;
    // ldd succeeds only on a dynamic executable, which the image cannot run.
    if Command::new("ldd")
        .arg(&busybox)
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Err(format!(
            "{} is dynamically linked (apt-get install busybox-static)",
            busybox.display()
        ));
    }
    let tools = Tools::find()?;
    let (python, stubs) = cri::generate(dir)?;
    Ok(Found {
        tools,
        busybox,
        python,
        stubs,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sim_containerd_runs_a_container_per_claim_kind_through_the_cri() {
    let began = Instant::now();
    let dir = tempfile::tempdir().expect("temp dir");
    let found = match available(dir.path()) {
        Ok(found) => found,
        Err(why) => return skip(TEST, &why),
    };
    let (daemon, ids, mps) = start_node().await;
    let containerd = Containerd::start(
        &found.tools,
        &dir.path().join("containerd"),
        &daemon.cdi_dir,
    );
    let mut pod = start_pod(&found, &containerd, dir.path());
    for kind in Kind::ALL {
        pod.run(kind.name(), &ids[kind.name()])
            .unwrap_or_else(|e| panic!("{kind:?}: {e}\ncontainerd:\n{}", containerd.log()));
    }
    for kind in Kind::ALL {
        let lines = pod.output(kind.name()).await;
        inside::check_container(&daemon, kind, &ids[kind.name()], &lines, &mps);
    }
    println!(
        "{TEST}: from the start to every container's output: {:.1} s",
        began.elapsed().as_secs_f64()
    );

    let mut followed = activity::follow_every_container(&daemon, &mut pod).await;
    mishaps::unprepare_while_running(&daemon, &mut pod, &ids, &followed).await;
    mishaps::mig_unprepare_waits_for_the_container(&daemon, &mut pod, &mut followed).await;
    mishaps::spec_removed_behind_the_runtime(&daemon, &mut pod, &ids).await;

    pod.remove();
    followed.wait_all_ended();
    let mut client = daemon.client().await;
    for kind in [Kind::Mps, Kind::TimeSlicing, Kind::TwoDevices] {
        client
            .unprepare(unprepare_request(kind.uid()))
            .await
            .expect("unprepare");
    }
    assert_eq!(daemon.cdi_files(), Vec::<String>::new());
    drop(containerd);
    println!("{TEST}: took {:.1} s", began.elapsed().as_secs_f64());
}

/// gpusliced with the claims prepared; their CDI ids, and the MPS claim's
/// daemon (its shm holding a file the container must see).
async fn start_node() -> (SharedDaemon, Ids, MpsDaemon) {
    let node_dir = tempfile::tempdir().expect("temp dir");
    let driver = node::driver_root(node_dir.path());
    node::write_config(node_dir.path(), &driver);
    let daemon = SharedDaemon::start_in(node_dir);
    let mut client = daemon.client().await;
    let mut ids = Ids::new();
    for kind in Kind::ALL {
        ids.insert(kind.name(), node::prepare(&mut client, kind).await);
    }
    let sharing = daemon.sharing().await;
    let mps = daemon_of(&sharing, "gpu-2")
        .expect("the MPS claim's daemon")
        .clone();
    assert_eq!(mps.active_thread_percentage, 50, "{mps:?}");
    let shm = Path::new(&mps.pipe_dir).with_file_name("shm").join("probe");
    crate::common::files::write_text(&shm, "from the daemon's shm");
    (daemon, ids, mps)
}

/// The CRI client against `containerd`, the image imported, the pod.
fn start_pod(found: &Found, containerd: &Containerd, dir: &Path) -> Pod {
    let mut cri = Cri::start(&found.python, &found.stubs, &containerd.socket);
    let version = cri.ok(json!({"op": "version"}));
    assert_eq!(version["runtime_name"], "containerd", "{version}");
    let runtime_version = version["runtime_version"].as_str().unwrap_or_default();
    assert!(runtime_version.starts_with("2."), "{version}");
    println!(
        "{TEST}: {} (CRI reports {runtime_version}, API {}), {}",
        found.tools.package,
        version["runtime_api_version"].as_str().unwrap_or_default(),
        runc_version()
    );
    containerd.import(&image::build(&dir.join("image"), &found.busybox));
    Pod::start(cri, containerd, dir)
}

fn runc_version() -> String {
    crate::tools::run(Command::new("runc").arg("--version"))
        .ok()
        .and_then(|out| out.lines().next().map(str::to_owned))
        .unwrap_or_else(|| "runc (version unknown)".to_owned())
}
